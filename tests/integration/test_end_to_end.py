"""The real DAG, run locally end to end on real data: the definition built by pipeline.definition.build, interpreted by
the local backend, with the real preprocessing, Linear Learner, batch transform, evaluation and registry.

Kept fast with small data sets (breast cancer, iris, diabetes from scikit-learn), few epochs and few parallel models.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from support.partial_runs import UP_TO_THE_REPORT, partial_run
from support.settings import FAST, fast

from containerlib.recordio import read as read_recordio
from pipeline import cli
from pipeline.api.execution import LocalExecution
from pipeline.cli.render.summary import summarise
from pipeline.core.images import DEFAULT_PROCESSING_IMAGE
from pipeline.definition.config import load_config
from pipeline.linear_learner.hyperparameters import LOSSES_BY_PREDICTOR
from pipeline.local.data import example_data, user_data
from pipeline.local.environments import JobEnvironment
from pipeline.local.executions import ExecutionStore
from pipeline.local.registry import LocalRegistry
from pipeline.local.runner import LocalRun, build_local_run
from pipeline.local.workdir import Workdir


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> LocalRun:
    """The definition is built once (the SDK takes seconds); each test runs it in its own work dir."""
    return build_local_run(load_config(env={}), Workdir(tmp_path_factory.mktemp("unused")))


def local_run(built: LocalRun, workdir: Path) -> LocalRun:
    return LocalRun(built.config, Workdir(workdir), built.definition_json, built.uploads)


def write_parts(frame, folder: Path, parts: int = 2) -> Path:
    folder.mkdir(parents=True)
    for part in range(parts):
        frame.iloc[part::parts].to_csv(folder / f"part-{part}.csv", index=False)
    return folder


def registered(workdir: Path) -> list:
    db = workdir / "registry.db"
    return LocalRegistry(db).list_packages() if db.exists() else []


def test_binary_with_three_training_instances_registers_then_hits_the_cache_then_fails_on_a_bad_shard(
    built: LocalRun, tmp_path: Path
) -> None:
    run = local_run(built, tmp_path)
    record = run.execute(example_data(Workdir(tmp_path)), {**FAST, "TrainingInstanceCount": "3"})
    assert record.status == "Succeeded", record.failure_reason
    assert all(step.status == "Succeeded" for name, step in record.steps.items() if name != "QualityGateFailed")
    assert record.steps["QualityGateFailed"].status == "Skipped"
    train_logs = sorted(Path(log).name for log in record.steps["Train"].logs)
    assert train_logs == ["algo-1.log", "algo-2.log", "algo-3.log"]
    assert sorted(Path(log).name for log in record.steps["Preprocess"].logs) == ["algo-1.log", "algo-2.log"]
    metrics = {m["MetricName"]: m["Value"] for m in record.steps["Train"].properties["FinalMetricDataList"]}
    assert "validation:roc_auc_score" in metrics or "validation:binary_classification_accuracy" in metrics
    report = json.loads(
        run.s3.path(record.steps["Evaluate"].properties["PropertyFiles"]["EvaluationReport"]).read_text()
    )
    assert report["gate"]["metric"] == "auc" and report["gate"]["value"] > 0.9
    [package] = registered(tmp_path)
    assert (package.group, package.version, package.approval_status) == (
        "linear-learner-models",
        1,
        "PendingManualApproval",
    )
    assert package.model_data_url == record.steps["Train"].properties["ModelArtifacts"]["S3ModelArtifacts"]
    assert package.model_data_url.endswith(f"/train/pipelines-{record.id}-Train/output/model.tar.gz")
    assert package.source_execution == (
        f"arn:aws:sagemaker:us-east-1:111122223333:pipeline/linear-learner-pipeline/execution/{record.id}"
    )
    assert (
        record.steps["CreateModel"].properties["ModelArn"].startswith("arn:aws:sagemaker:us-east-1:111122223333:model/")
    )

    compute = {cost["step"]: cost for cost in summarise(LocalExecution(record, run.s3), render_plots=False)["compute"]}
    assert set(compute) == {"Preprocess", "DataQuality", "Train", "Transform", "Evaluate"}
    train = record.steps["Train"]
    wall = (datetime.fromisoformat(train.end_time) - datetime.fromisoformat(train.start_time)).total_seconds()
    assert (compute["Train"]["instance_type"], compute["Train"]["instance_count"]) == ("ml.m5.xlarge", 3)
    assert compute["Train"]["instance_seconds"] == pytest.approx(3 * wall)

    again = run.execute(example_data(Workdir(tmp_path)), {**FAST, "TrainingInstanceCount": "3"})
    assert again.status == "Succeeded"
    cached = {name for name, step in again.steps.items() if step.cache_hit_source == record.id}
    assert cached == {"Preprocess", "Train", "Transform"}  # Evaluate reads the registry: never cached
    assert again.steps["Evaluate"].cache_key is None and again.steps["Evaluate"].status == "Succeeded"
    costs = {
        cost["step"]: cost["instance_seconds"]
        for cost in summarise(LocalExecution(again, run.s3), render_plots=False)["compute"]
    }
    # never cached: Evaluate (the champion) and DataQuality (the approved baseline) read the registry
    assert costs.pop("Evaluate") > 0 and costs.pop("DataQuality") > 0 and set(costs.values()) == {0}
    assert [p.version for p in registered(tmp_path)] == [1, 2]

    # Inject a failure into one training instance: corrupt the train shard that ShardedByS3Key deals to algo-2, as if
    # Preprocess had written it so (its cache entry's fingerprints re-recorded: a shard changed after the run is
    # never reused, tests/integration/test_damaged_caches.py), then change only a training hyperparameter so
    # Preprocess comes from the cache and Train runs again.
    from pipeline.local.cache import record_outputs

    preprocess = record.steps["Preprocess"]
    train_uri = preprocess.properties["ProcessingOutputConfig"]["Outputs"][0]["S3Output"]["S3Uri"]
    shards = run.s3.list_objects(train_uri.rstrip("/") + "/")
    victim = run.s3.path(shards[1])
    victim.write_bytes(victim.read_bytes()[:-7])
    record_outputs(record.folder / "steps" / "Preprocess", preprocess.cache_key, preprocess.properties, run.s3.path)
    broken = run.execute(example_data(Workdir(tmp_path)), {**FAST, "TrainingInstanceCount": "3", "Epochs": "2"})
    assert broken.status == "Failed"
    assert broken.steps["Preprocess"].cache_hit_source == record.id
    assert broken.steps["Train"].status == "Failed"
    assert broken.steps["Train"].failure_reason.startswith("algo-2 failed")
    assert victim.name in broken.steps["Train"].failure_reason
    assert broken.failure_reason.startswith("step Train failed: algo-2 failed")
    assert {broken.steps[name].status for name in ("CreateModel", "Transform", "Evaluate", "Register")} == {"Skipped"}
    assert [p.version for p in registered(tmp_path)] == [1, 2]


def test_impossible_threshold_ends_in_the_fail_step_with_a_non_zero_exit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Labels that are coin flips cannot reach an AUC of 0.95 (the example data can reach 1.0, so no threshold in
    range is impossible there, and an out-of-range one is refused before anything runs)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(7)
    noise = pd.DataFrame(rng.normal(size=(400, 5)), columns=[f"f{i}" for i in range(5)])
    noise["label"] = rng.integers(0, 2, size=400)
    data = write_parts(noise, tmp_path / "noise")
    argv = ["run", "--workdir", str(tmp_path / "work"), "--json", "--param", "MetricThreshold=0.95"]
    argv += ["--data", str(data), "--label-column", "label", "--predictor-type", "binary_classifier"]
    argv += [f"--param={name}={value}" for name, value in FAST.items()]
    assert cli.main(argv) == 1
    outcome = json.loads(capsys.readouterr().out)
    assert outcome["status"] == "Failed"
    assert outcome["steps"]["QualityGateFailed"] == "Failed"
    assert outcome["steps"]["Register"] == "Skipped"
    value = outcome["gate"]["value"]
    baseline = outcome["baseline"]["value"]  # the scikit-learn baseline, reported but not gated on by default
    # the decision's reason first, then each value compared, named for what it is (no champion, baseline off)
    assert outcome["failure_reason"] == (
        f"step QualityGateFailed failed: Quality gate failed: auc {value:.6g} is below MetricThreshold 0.95; no"
        " approved champion (model package group linear-learner-models): the threshold alone decides"
        + (
            f"; below the scikit-learn baseline (auc {baseline:.6g} on this test split; set BaselineTolerance to gate"
            " on it)"
            if value < baseline
            else ""
        )
        + f" | compared auc = {value} with MetricThreshold 0.95, the champion's floor {value} (no approved champion:"
        f" the challenger's own value); the baseline's floor {value} (BaselineTolerance -1 is negative, so off: the"
        " challenger's own value)"
    )
    assert outcome["gate"]["metric"] == "auc" and outcome["gate"]["passed"] is False
    assert outcome["model_package"] is None
    assert outcome["metrics"]["auc"] == outcome["gate"]["value"]
    assert Path(outcome["paths"]["model"]).is_file() and Path(outcome["paths"]["report"]).is_file()
    assert outcome["gate"]["value"] < 0.95
    assert registered(tmp_path / "work") == []
    [record] = ExecutionStore(tmp_path / "work" / "executions").list()
    assert record.id == outcome["execution_id"] and record.status == "Failed"


def test_bad_override_is_rejected_before_anything_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--workdir", str(tmp_path), "--param", "Epochs=many"]) == 2
    assert "parameter Epochs is Integer: 'many'" in capsys.readouterr().err
    assert not (tmp_path / "executions").exists() and not (tmp_path / "s3").exists()


# ------------------------------------------------------------------- processing steps in the image's environment


def environment_of(record, step: str) -> dict:
    return json.loads((record.folder / "steps" / step / "environment.json").read_text())


def assert_ran_in_the_image(record, image_environment: JobEnvironment, definition: dict) -> None:
    """Preprocess and Evaluate ran on the image's Python and pins, and their environment.json says so."""
    images = {step["Name"]: step["Arguments"]["AppSpecification"]["ImageUri"] for step in all_steps(definition)
              if step["Type"] == "Processing"}  # fmt: skip
    for step in ("Preprocess", "Evaluate"):
        environment = environment_of(record, step)
        assert environment["exact"] is True, environment
        assert environment["image_uri"] == images[step] and environment["image"] == DEFAULT_PROCESSING_IMAGE.key
        assert environment["python"].startswith(DEFAULT_PROCESSING_IMAGE.python + ".")
        assert {name: environment["libraries"][name] for name, _ in DEFAULT_PROCESSING_IMAGE.pins} == dict(
            DEFAULT_PROCESSING_IMAGE.pins
        )
        assert environment["interpreter"] == str(image_environment.python)
        assert not record.steps[step].notes


def all_steps(definition: dict) -> list[dict]:
    found = []
    for step in definition["Steps"]:
        found.append(step)
        if step["Type"] == "Condition":
            found += step["Arguments"].get("IfSteps", []) + step["Arguments"].get("ElseSteps", [])
    return found


def test_one_test_record_per_host_runs_in_the_image(
    built: LocalRun, tmp_path: Path, image_environment: JobEnvironment
) -> None:
    """A small table whose test split holds one record per processing host: the single-record decode path of the
    codec runs on Python 3.9 in Evaluate (where zip(strict=True) used to fail)."""
    import pandas as pd

    from containerlib.tables.raw import raw_pieces
    from preprocessing.hashing import assign_splits, raw_row_hashes

    generator = np.random.default_rng(11)
    features = generator.normal(size=(400, 2)).astype(np.float32)
    labels = (features[:, 0] + 0.3 * generator.normal(size=400) > 0).astype(np.float32)
    frame = pd.DataFrame({"x0": features[:, 0], "x1": features[:, 1], "label": labels.astype(int)})
    frame.to_csv(tmp_path / "whole.csv", index=False)  # the split is decided from each row's text as written
    (raw,) = raw_pieces(tmp_path / "whole.csv", list(frame.columns), len(frame))
    splits = assign_splits(raw_row_hashes(raw, 0), (0.7, 0.15, 0.15))
    test_rows = [int(np.flatnonzero((splits == 2) & (labels == label))[0]) for label in (0, 1)]
    others = np.flatnonzero(splits != 2)[:60]
    folder = tmp_path / "table"
    folder.mkdir()
    for part, test_row in enumerate(test_rows):  # each host gets one file, so one test record
        frame.iloc[[*others[part::2], test_row]].to_csv(folder / f"part-{part}.csv", index=False)
    record = partial_run(built, tmp_path / "work", UP_TO_THE_REPORT).execute(  # the codec is read up to Evaluate
        user_data(folder, "label", "binary_classifier"),
        {**FAST, "ProcessingInstanceCount": "2", "TrainingInstanceCount": "1", "MetricThreshold": "0"},
    )
    assert record.status == "Succeeded", record.failure_reason
    test_uri = record.steps["Preprocess"].properties["ProcessingOutputConfig"]["Outputs"][2]["S3Output"]["S3Uri"]
    run = local_run(built, tmp_path / "work")
    shards = [uri for uri in run.s3.list_objects(test_uri.rstrip("/") + "/") if uri.endswith(".pbr")]
    assert len(shards) == 2
    for shard in shards:
        with run.s3.path(shard).open("rb") as handle:
            assert read_recordio(handle)[0].shape[0] == 1
    assert_ran_in_the_image(record, image_environment, json.loads(built.definition_json))


def loss_table(predictor_type: str, folder: Path) -> str:
    """The table each Loss of ``predictor_type`` trains on, written in ``folder``; returns its label column. A tiny
    synthetic one for binary; the real iris (multiclass) and diabetes (regressor) in two parts."""
    import pandas as pd
    from sklearn.datasets import load_diabetes, load_iris

    if predictor_type == "multiclass_classifier":
        write_parts(load_iris(as_frame=True).frame, folder)
        return "target"
    if predictor_type == "regressor":
        write_parts(load_diabetes(as_frame=True).frame, folder)
        return "target"
    generator = np.random.default_rng(4)
    features = generator.normal(size=(150, 3))
    labels = (features @ np.array([1.5, -1.0, 0.5]) > 0).astype(int)
    folder.mkdir()
    frame = pd.DataFrame({"a": features[:, 0], "b": features[:, 1], "c": features[:, 2], "y": labels})
    frame.to_csv(folder / "table.csv", index=False)
    return "y"


# The first Loss's run of a type at FAST with a gate its model must reach: iris to accuracy 0.5 on two training
# instances, diabetes to r2 0.1 on one; the type's other Losses at 1 epoch and 1 model with a gate every model passes
# (auc and accuracy lie in [0, 1]; r2 of a 1-epoch model may be far below 0). Preprocess's settings are the same for
# all the Losses of a type, so it runs once and comes from the cache after.
FIRST_LOSS = {
    "binary_classifier": fast(Epochs=1, NumModels=1, TrainingInstanceCount=1, MetricThreshold=0),
    "multiclass_classifier": fast(TrainingInstanceCount=2, NumClasses=3, MetricThreshold=0.5),
    "regressor": fast(TrainingInstanceCount=1, MetricThreshold=0.1),
}
OTHER_LOSSES = {
    "binary_classifier": FIRST_LOSS["binary_classifier"],
    "regressor": fast(Epochs=1, NumModels=1, TrainingInstanceCount=1, MetricThreshold=-1000000),
}


@pytest.mark.parametrize("predictor_type", ["binary_classifier", "multiclass_classifier", "regressor"])
def test_every_loss_of_each_predictor_type_ends_in_a_report(
    built: LocalRun, tmp_path: Path, predictor_type: str, image_environment: JobEnvironment
) -> None:
    """Each Loss the Train step accepts for the predictor type, one execution each in one work dir (Preprocess
    comes from the cache after the first). The first runs the whole pipeline and registers version 1 with the type's
    gate metric (auc, accuracy, r2) on as many training instances as it asked for; the others run it up to
    Evaluate's report (the data-quality check and the registration read no Loss)."""
    label = loss_table(predictor_type, tmp_path / "data")
    whole, lean = local_run(built, tmp_path / "work"), partial_run(built, tmp_path / "work", UP_TO_THE_REPORT)
    first = None
    for loss in LOSSES_BY_PREDICTOR[predictor_type]:
        parameters = FIRST_LOSS[predictor_type] if first is None else OTHER_LOSSES[predictor_type]
        run = whole if first is None else lean
        record = run.execute(user_data(tmp_path / "data", label, predictor_type), {**parameters, "Loss": loss})
        assert record.status == "Succeeded", f"{loss}: {record.failure_reason}"
        report_uri = record.steps["Evaluate"].properties["PropertyFiles"]["EvaluationReport"]
        report = json.loads(run.s3.path(report_uri).read_text())
        kind = {"binary_classifier": "probability", "multiclass_classifier": "probability"}.get(predictor_type, "value")
        assert report["score"] == {"kind": "margin" if loss == "hinge_loss" else kind}, loss
        assert report["dataset"]["item_count"] > 0 and report["gate"]["value"] == report["gate"]["value"]  # not NaN
        if first is None:
            first = record
            assert_ran_in_the_image(record, image_environment, json.loads(built.definition_json))
            hosts = int(parameters["TrainingInstanceCount"])
            assert [Path(log).name for log in record.steps["Train"].logs] == [
                f"algo-{h}.log" for h in range(1, hosts + 1)
            ]
            [package] = registered(tmp_path / "work")
            gate_metric = {"binary_classifier": "auc", "multiclass_classifier": "accuracy"}.get(predictor_type, "r2")
            assert package.metrics["gate"]["metric"] == gate_metric
        else:
            assert set(record.steps) == set(UP_TO_THE_REPORT)
            assert record.steps["Preprocess"].cache_hit_source == first.id
    if predictor_type == "binary_classifier":  # the hinge model's margins are not probabilities, yet AUC is ranked
        transform = record.steps["Transform"].properties["TransformOutput"]["S3OutputPath"]
        outputs = [uri for uri in run.s3.list_objects(transform.rstrip("/") + "/") if uri.endswith(".out")]
        scores = [json.loads(line)["score"] for uri in outputs for line in run.s3.path(uri).read_text().splitlines()]
        assert min(scores) < 0 or max(scores) > 1
