"""New data re-runs the pipeline, unchanged data comes from the cache: the real DAG run locally three times, with
``--data`` and with an ``InputDataUrl`` in the local S3, changing the data in place between the first two runs.

The runs stop at Evaluate's report (``support.partial_runs.UP_TO_THE_REPORT``): the data-quality check and the
registration after the gate are never cached, so they add nothing to what is rerun or reused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console
from support.partial_runs import UP_TO_THE_REPORT, partial_run
from support.settings import fast

from pipeline.api.execution import LocalExecution
from pipeline.cli.render.progress import step_table
from pipeline.cli.render.summary import print_summary, summarise
from pipeline.core.data_version import files_version, local_s3_version
from pipeline.definition.config import load_config
from pipeline.local.data import example_data, user_data
from pipeline.local.example_data import write_example_data
from pipeline.local.executions import ExecutionRecord
from pipeline.local.runner import LocalRun, build_local_run
from pipeline.local.workdir import Workdir

# one host a job: what changes or stays cached does not depend on how many instances read the data
RUN = fast(TrainingInstanceCount=1, ProcessingInstanceCount=1)
CACHEABLE = {"Preprocess", "Train", "Transform"}  # Evaluate reads the registry's champion: never cached


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> LocalRun:
    """The definition is built once (the SDK takes seconds); each test runs it in its own work dir."""
    return build_local_run(load_config(env={}), Workdir(tmp_path_factory.mktemp("unused")))


def flip_labels_in_place(path: Path, rows: int) -> None:
    """Rewrite the file in place with the 0/1 label (last column) of its first ``rows`` rows flipped: same size."""
    size = path.stat().st_size
    header, *lines = path.read_text().splitlines()
    for index in range(rows):
        lines[index] = lines[index][:-1] + {"0": "1", "1": "0"}[lines[index][-1]]
    path.write_text("\n".join([header, *lines]) + "\n")
    assert path.stat().st_size == size


def arguments(record: ExecutionRecord, step: str) -> dict:
    return json.loads((record.step_folder(step) / "arguments.json").read_text())


def reran(record: ExecutionRecord) -> set[str]:
    steps = record.steps
    return {name for name in CACHEABLE if steps[name].status == "Succeeded" and not steps[name].cache_hit_source}


def check_three_runs(run: LocalRun, execute, change) -> tuple[ExecutionRecord, ExecutionRecord]:  # noqa: ANN001
    """Run, change the data in place, run, run unchanged; returns the first two records."""
    first = execute()
    assert first.status == "Succeeded", first.failure_reason
    first_metrics = summarise(LocalExecution(first, run.s3), render_plots=False)["metrics"]

    change()
    second = execute()
    assert second.status == "Succeeded", second.failure_reason
    assert reran(second) == CACHEABLE  # Preprocess and everything downstream ran again, nothing from the cache
    assert second.parameters["DataVersion"] != first.parameters["DataVersion"]
    preprocess_arguments = arguments(second, "Preprocess")["AppSpecification"]["ContainerArguments"]
    assert f"--data-version={second.parameters['DataVersion']}" in preprocess_arguments
    outputs = second.steps["Preprocess"].properties["ProcessingOutputConfig"]["Outputs"]
    [summary_uri] = [output["S3Output"]["S3Uri"] for output in outputs if output["OutputName"] == "summary"]
    parts = [part for part in run.s3.list_objects(summary_uri.rstrip("/") + "/") if part.endswith(".json")]
    assert parts and {json.loads(run.s3.path(part).read_text())["data_version"] for part in parts} == {
        second.parameters["DataVersion"]
    }  # Preprocess records the version it processed
    channels = arguments(second, "Train")["InputDataConfig"]
    uris = [channel["DataSource"]["S3DataSource"]["S3Uri"] for channel in channels]
    assert all(f"/{second.id}/preprocess/" in uri for uri in uris)  # the new Preprocess output: a new Train key
    second_summary = summarise(LocalExecution(second, run.s3), render_plots=False)
    assert second_summary["cache_hits"] == {}
    assert second_summary["metrics"] != first_metrics  # trained on the changed labels

    third = execute()
    assert third.status == "Succeeded", third.failure_reason
    assert {name: third.steps[name].cache_hit_source for name in CACHEABLE} == dict.fromkeys(CACHEABLE, second.id)
    assert third.parameters["DataVersion"] == second.parameters["DataVersion"]
    third_summary = summarise(LocalExecution(third, run.s3), render_plots=False)
    assert third_summary["metrics"] == second_summary["metrics"]
    assert third_summary["cache_hits"] == dict.fromkeys(["Preprocess", "Train", "Transform"], second.id)
    console = Console(record=True, width=200)
    console.print(step_table(third, "live table"))
    table = console.export_text()
    for name in CACHEABLE:
        [row] = [line for line in table.splitlines() if line.startswith(f"│ {name} ")]
        assert "Succeeded (cached)" in row and f"cache hit from execution {second.id}" in row
    print_summary(third_summary, console)
    assert f"Cache hits: Preprocess, Train, Transform reused from execution {second.id}" in (console.export_text())
    return first, second


def test_data_changed_in_place_reruns_everything_and_unchanged_data_hits_the_cache(
    built: LocalRun, tmp_path: Path
) -> None:
    from sklearn.datasets import load_breast_cancer

    folder = tmp_path / "data"
    folder.mkdir()
    frame = load_breast_cancer(as_frame=True).frame
    for part in range(2):
        frame.iloc[part::2].to_csv(folder / f"part-{part}.csv", index=False)
    run = partial_run(built, tmp_path / "work", UP_TO_THE_REPORT)

    def execute() -> ExecutionRecord:
        return run.execute(user_data(folder, "target", "binary_classifier"), RUN)

    first, second = check_three_runs(run, execute, lambda: flip_labels_in_place(folder / "part-0.csv", 90))
    versions = [record.parameters["DataVersion"] for record in (first, second)]
    assert versions[1] == files_version(sorted(folder.glob("*.csv")), folder)
    staged = sorted(path.name for path in run.s3.path(f"{run.config.pipeline_prefix}/input/").iterdir())
    assert staged == [f"data-{version}" for version in sorted(versions)]  # each version under its own prefix


def test_input_data_url_changed_in_place_reruns_everything_and_unchanged_hits_the_cache(
    built: LocalRun, tmp_path: Path
) -> None:
    run = partial_run(built, tmp_path, UP_TO_THE_REPORT)
    uri = f"s3://{run.config.bucket}/datasets/breast-cancer/"
    [first_part, *_] = write_example_data(run.s3.path(uri))
    overrides = {**RUN, "InputDataUrl": uri}

    def execute() -> ExecutionRecord:  # what `llpipe run --param InputDataUrl=...` runs
        return run.execute(example_data(Workdir(tmp_path)), overrides)

    first, second = check_three_runs(run, execute, lambda: flip_labels_in_place(first_part, 60))
    assert second.parameters["DataVersion"] == local_s3_version(run.s3, uri)

    # a DataVersion given with --param wins over the fingerprint: the first run's version reuses the first run
    given = run.execute(example_data(Workdir(tmp_path)), {**overrides, "DataVersion": first.parameters["DataVersion"]})
    assert given.status == "Succeeded", given.failure_reason
    assert {name: given.steps[name].cache_hit_source for name in CACHEABLE} == dict.fromkeys(CACHEABLE, first.id)


def test_an_empty_input_prefix_is_an_error_before_anything_is_staged(built: LocalRun, tmp_path: Path) -> None:
    from pipeline.core.errors import DataError

    run = LocalRun(built.config, Workdir(tmp_path), built.definition_json, built.uploads)
    with pytest.raises(DataError, match=r"^parameter InputDataUrl=s3://llpipe-local/nothing/: no objects under"):
        run.execute(example_data(Workdir(tmp_path)), {"InputDataUrl": "s3://llpipe-local/nothing/"})
    assert not (tmp_path / "executions").exists() and not (tmp_path / "s3" / "llpipe-local").exists()
