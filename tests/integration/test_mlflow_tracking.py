"""Every local execution in MLflow (issue 41), read back with MLflow's own client: two runs with different Epochs, the
parent run with its params, a child per step, Train's per-epoch series, Evaluate's metrics equal to evaluation.json's,
the plots as artifacts and the registered version linked both ways; against the work dir's SQLite store and a real
``mlflow server`` on 127.0.0.1. A run with tracking off, or with a store that cannot be reached, succeeds with one
warning line."""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from mlflow import MlflowClient
from mlflow.entities import Run
from support.browser import headless, require_chromium
from support.mlflow_server import Server, free_port
from support.settings import FAST, fast_params

from pipeline import cli
from pipeline.api import run_local
from pipeline.api.execution import LocalExecution
from pipeline.api.tracking import seed_sqlite_store, track
from pipeline.core.tracking import METADATA_RUN_ID, PROBE_TIMEOUT_SECONDS
from pipeline.definition.config import load_config
from pipeline.local.registry import LocalRegistry
from pipeline.local.workdir import Workdir

EXPERIMENT = "linear-learner-pipeline"  # the default: one experiment per pipeline, named by it


def breast_cancer() -> pd.DataFrame:
    from sklearn.datasets import load_breast_cancer

    return load_breast_cancer(as_frame=True).frame


@dataclass
class Logged:
    """Two executions (Epochs 3 and 4) of one work dir, logged to ``uri``."""

    executions: list[LocalExecution]
    uri: str
    workdir: Path


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory, mlflow_server: Server) -> dict[str, Logged]:
    """The two runs logged to the work dir's SQLite store (the default); then the same two again, answered from the
    step cache, logged to a real tracking server (the session's, shared with test_mlflow_in_job, whose tests log to
    experiments of other names; started first: it takes a while to come up)."""
    server = mlflow_server
    workdir = tmp_path_factory.mktemp("tracking")
    frame = breast_cancer()
    runs = [
        run_local(frame, "target", "binary_classifier", workdir=workdir, progress=False, mlflow_tracking=True, **p)
        for p in (FAST, {**FAST, "Epochs": 4})
    ]
    server.wait_healthy()
    again = [
        run_local(
            frame,
            "target",
            "binary_classifier",
            workdir=workdir,
            progress=False,
            mlflow_tracking=True,
            mlflow_tracking_uri=server.uri,
            **p,
        )
        for p in (FAST, {**FAST, "Epochs": 4})
    ]
    return {
        "sqlite": Logged(runs, f"sqlite:///{Workdir.at(workdir).root / 'mlflow.db'}", workdir),
        "server": Logged(again, server.uri, workdir),
    }


def parent_and_children(client: MlflowClient, execution: LocalExecution) -> tuple[Run, dict[str, Run]]:
    experiment = client.get_experiment_by_name(EXPERIMENT)
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    (parent,) = [run for run in runs if run.info.run_name == execution.id]
    children = {run.info.run_name: run for run in runs if run.data.tags.get("mlflow.parentRunId") == parent.info.run_id}
    return parent, children


@pytest.mark.parametrize("store", ["sqlite", "server"])
def test_each_execution_is_a_parent_run_with_its_params_and_a_child_per_step(
    stores: dict[str, Logged], store: str
) -> None:
    logged = stores[store]
    client = MlflowClient(tracking_uri=logged.uri)
    for execution, epochs in zip(logged.executions, (3, 4), strict=True):
        assert execution.succeeded
        parent, children = parent_and_children(client, execution)
        assert execution.mlflow_run is not None and execution.mlflow_run.run_id == parent.info.run_id
        assert execution.mlflow_run.tracking_uri == logged.uri
        assert parent.info.status == "FINISHED"
        assert parent.data.params["Epochs"] == str(epochs)
        assert parent.data.params["PredictorType"] == "binary_classifier"
        assert parent.data.params["linear_learner.epochs"] == str(epochs)  # as the algorithm resolved it
        assert parent.data.params["linear_learner.loss"] == "logistic"  # "auto", resolved
        tags = parent.data.tags
        assert tags["llpipe.source"] == "local"
        assert tags["llpipe.execution_arn"].endswith(f":pipeline/{EXPERIMENT}/execution/{execution.id}")
        assert tags["llpipe.data_version"] == execution.parameters["DataVersion"]
        assert tags["llpipe.code_version"].startswith(("git:", "llpipe "))
        assert set(children) == set(execution.steps["step"])
        assert children["QualityGateFailed"].info.status == "KILLED"  # the branch not taken: skipped
        train = children["Train"]
        for channel in ("train", "validation"):
            history = client.get_metric_history(train.info.run_id, f"{channel}:objective_loss")
            assert [metric.step for metric in history] == list(range(epochs))
        final = {item["MetricName"]: item["Value"] for item in _train_properties(execution)["FinalMetricDataList"]}
        assert {f"final/{name}": value for name, value in final.items()}.items() <= train.data.metrics.items()
        assert train.data.metrics["scaling.instances"] == 2
        assert 0 < train.data.metrics["scaling.sync_share"] < 1
        assert train.data.params["epochs"] == str(epochs)
        preprocess = children["Preprocess"]
        assert preprocess.data.metrics["rows.train"] + preprocess.data.metrics["rows.validation"] + (
            preprocess.data.metrics["rows.test"]
        ) == len(breast_cancer())
        assert preprocess.data.params["columns"].split(", ")[:2] == ["mean radius", "mean texture"]


def _train_properties(execution: LocalExecution) -> dict:
    return execution.record.steps["Train"].properties


@pytest.mark.parametrize("store", ["sqlite", "server"])
def test_evaluate_child_holds_the_reports_metrics_and_the_plots(stores: dict[str, Logged], store: str) -> None:
    logged = stores[store]
    client = MlflowClient(tracking_uri=logged.uri)
    for execution in logged.executions:
        _, children = parent_and_children(client, execution)
        evaluate = children["Evaluate"]
        report = json.loads(execution.report_path.read_text())
        section = report["binary_classification_metrics"]
        expected = {
            name: entry["value"]
            for name, entry in section.items()
            if isinstance(entry, dict) and isinstance(entry.get("value"), float) and math.isfinite(entry["value"])
        }
        assert len(expected) >= 8
        assert {name: evaluate.data.metrics[name] for name in expected} == expected
        assert evaluate.data.metrics[f"gate.{report['gate']['metric']}"] == report["gate"]["value"]
        raw = report["baseline_raw_columns"]["binary_classification_metrics"]["auc"]["value"]  # the raw-column model
        assert evaluate.data.metrics["sklearn_raw_columns.auc"] == raw
        assert evaluate.data.tags["llpipe.promote"] == "true"
        artifacts = {item.path for item in client.list_artifacts(evaluate.info.run_id)}
        assert artifacts == {"evaluation.json", "plots"}
        plots = {item.path for item in client.list_artifacts(evaluate.info.run_id, "plots")}
        assert plots == {f"plots/{path.name}" for path in execution.plots}
        downloaded = client.download_artifacts(evaluate.info.run_id, "evaluation.json", str(logged.workdir))
        assert json.loads(Path(downloaded).read_text()) == report


@pytest.mark.parametrize("store", ["sqlite", "server"])
def test_the_registered_version_and_the_run_name_each_other(stores: dict[str, Logged], store: str) -> None:
    logged = stores[store]
    client = MlflowClient(tracking_uri=logged.uri)
    registry = LocalRegistry(Workdir.at(logged.workdir).registry_db)
    for execution in logged.executions:
        parent, children = parent_and_children(client, execution)
        package = execution.model_package
        assert package is not None
        assert parent.data.tags["llpipe.model_package_arn"] == package["arn"]
        assert children["Register"].data.params["model_package.version"] == str(package["version"])
        assert children["Register"].data.params["model_package.approval_status"] == "PendingManualApproval"
        metadata = registry.describe(package["arn"]).customer_metadata
        assert metadata[METADATA_RUN_ID] == parent.info.run_id


def test_a_cached_steps_child_run_names_the_execution_it_came_from(stores: dict[str, Logged]) -> None:
    first = stores["sqlite"].executions[0]
    logged = stores["server"]
    client = MlflowClient(tracking_uri=logged.uri)
    _, children = parent_and_children(client, logged.executions[0])
    cached = {name: run.data.tags.get("llpipe.cached_from") for name, run in children.items()}
    sources = dict(zip(logged.executions[0].steps["step"], logged.executions[0].steps["cache_hit"], strict=True))
    assert cached["Preprocess"] == sources["Preprocess"] and first.id in str(sources["Preprocess"])
    assert cached["Train"] == sources["Train"]
    # the per-epoch series come from the execution that trained the model
    history = client.get_metric_history(children["Train"].info.run_id, "validation:objective_loss")
    assert [metric.step for metric in history] == [0, 1, 2]


def test_a_fresh_work_dirs_store_is_a_copy_of_the_user_caches_empty_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first store made in a cache builds the empty template; a new store is a copy of it that MLflow opens,
    gives its Default experiment and takes runs into, as one it made itself; an existing store is left alone."""
    import sqlite3

    from mlflow.version import VERSION

    monkeypatch.setenv("LLPIPE_CACHE_DIR", str(tmp_path / "cache"))
    template = tmp_path / "cache" / "mlflow" / f"empty-{VERSION}.db"
    fresh, made_by_mlflow = tmp_path / "fresh.db", tmp_path / "by-mlflow.db"
    seed_sqlite_store(f"sqlite:///{fresh}")
    assert template.is_file() and fresh.read_bytes() == template.read_bytes()
    seed_sqlite_store(f"sqlite:///{fresh}")  # already there: untouched
    assert fresh.read_bytes() == template.read_bytes()
    seed_sqlite_store(f"http://127.0.0.1:{free_port()}")  # not a SQLite store: nothing written
    assert sorted(path.name for path in tmp_path.iterdir()) == ["cache", "fresh.db"]

    for store in (fresh, made_by_mlflow):
        client = MlflowClient(tracking_uri=f"sqlite:///{store}")
        experiment = client.create_experiment("seeded", artifact_location=(tmp_path / "artifacts").as_uri())
        run = client.create_run(experiment, run_name="one")
        client.log_metric(run.info.run_id, "auc", 0.97)
        assert client.get_run(run.info.run_id).data.metrics == {"auc": 0.97}

    def contents(store: Path) -> list[tuple]:
        with sqlite3.connect(store) as connection:
            tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            revision = connection.execute("SELECT version_num FROM alembic_version").fetchall()
            experiments = connection.execute("SELECT experiment_id, name, lifecycle_stage FROM experiments").fetchall()
        return [sorted(tables), revision, experiments]

    assert contents(fresh) == contents(made_by_mlflow)


def test_tracking_off_logs_nothing(stores: dict[str, Logged], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    workdir = stores["sqlite"].workdir
    execution = run_local(
        breast_cancer(), "target", "binary_classifier", workdir=workdir, progress=False, mlflow_tracking=False, **FAST
    )
    assert execution.succeeded and execution.mlflow_run is None
    assert not (execution.record.folder / "mlflow.json").exists()
    assert "MLflow" not in capsys.readouterr().err


def test_an_unreachable_store_is_one_warning_line_and_the_run_succeeds(
    stores: dict[str, Logged], capsys: pytest.CaptureFixture
) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    workdir = str(stores["sqlite"].workdir)
    params = fast_params()
    code = cli.main(["run", "--workdir", workdir, "--quiet", "--tracking", "--tracking-uri", closed, *params])
    captured = capsys.readouterr()
    assert code == 0
    (line,) = captured.err.splitlines()
    assert line.startswith("Warning: MLflow: execution ")
    assert f" not logged to {closed}: MLflow tracking server {closed} cannot be reached (" in line


def test_a_server_that_never_answers_delays_the_execution_a_bounded_time(stores: dict[str, Logged]) -> None:
    """A port that accepts connections and never answers: the probe gives up after its timeout."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    uri = f"http://127.0.0.1:{listener.getsockname()[1]}"
    warnings: list[str] = []
    execution = stores["sqlite"].executions[0]
    config = load_config({"mlflow_tracking_uri": uri, "mlflow_tracking": True}, env={})
    began = time.monotonic()
    try:
        assert track(execution, config, Workdir.at(stores["sqlite"].workdir), warnings.append) is None
    finally:
        listener.close()
    assert time.monotonic() - began < PROBE_TIMEOUT_SECONDS + 5
    assert warnings == [
        f"MLflow: execution {execution.id} not logged to {uri}: MLflow tracking server {uri} cannot be reached "
        "(timed out)"
    ]


def test_a_logging_that_outlives_its_deadline_is_left_behind_with_a_warning(
    stores: dict[str, Logged], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deadline holds whatever MLflow does: a logger that blocks is abandoned after ``deadline`` seconds."""
    from pipeline.api import tracking

    release = threading.Event()
    monkeypatch.setattr(tracking, "log_execution", lambda *arguments: release.wait(30))
    warnings: list[str] = []
    execution = stores["sqlite"].executions[0]
    config = load_config({"mlflow_tracking": True}, env={})
    try:
        assert track(execution, config, Workdir.at(stores["sqlite"].workdir), warnings.append, deadline=0.5) is None
    finally:
        release.set()
    uri = f"sqlite:///{Workdir.at(stores['sqlite'].workdir).root / 'mlflow.db'}"
    assert warnings == [f"MLflow: logging execution {execution.id} to {uri} took over 0.5 s; not waiting for it"]


def test_the_summary_prints_the_run_and_how_to_open_it(stores: dict[str, Logged]) -> None:
    from pipeline.cli.render.summary import summarise

    execution = stores["sqlite"].executions[1]
    run = execution.mlflow_run
    assert run is not None
    assert run.url == f"http://127.0.0.1:5000/#/experiments/{run.experiment_id}/runs/{run.run_id}"
    assert run.ui_command == f"mlflow ui --backend-store-uri {stores['sqlite'].uri}"
    assert summarise(execution, render_plots=False)["mlflow"] == run.to_dict()
    assert f'MLflow run: <a href="{run.url}" target="_blank">{run.run_id}</a>' in execution._repr_html_()
    served = stores["server"].executions[1].mlflow_run
    assert served is not None and served.ui_command is None
    assert served.url == f"{stores['server'].uri}/#/experiments/{served.experiment_id}/runs/{served.run_id}"


def test_the_mlflow_ui_lists_both_runs_side_by_side(stores: dict[str, Logged], tmp_path: Path) -> None:
    """The tracking server's own UI, in a real headless browser: the experiment's runs table names both executions'
    runs, and MLflow's compare page shows the two parent runs side by side, their ids, names and the Epochs that
    tell them apart (a screenshot of each is kept in the test's folder, its path printed)."""
    chromium = require_chromium("the MLflow UI is not opened in a browser")
    logged = stores["server"]
    parents = [execution.mlflow_run for execution in logged.executions]
    assert parents[0] is not None and parents[1] is not None
    experiment = parents[0].experiment_id
    runs = json.dumps([run.run_id for run in parents if run is not None], separators=(",", ":"))
    pages = {
        "runs": f"{logged.uri}/#/experiments/{experiment}/runs",  # MLflow 3 opens an experiment on its overview
        "compare": f'{logged.uri}/#/compare-runs?runs={runs}&experiments=["{experiment}"]',
    }
    options = ["--virtual-time-budget=30000", "--window-size=1600,1400"]
    profile = tmp_path / "profile"
    dom = headless(chromium, profile, *options, "--dump-dom", pages["runs"], timeout=180)
    assert dom.returncode == 0, dom.stderr[-2000:]
    for execution in logged.executions:
        assert execution.id in dom.stdout
    compared = headless(chromium, profile, *options, "--dump-dom", pages["compare"], timeout=180)
    assert compared.returncode == 0, compared.stderr[-2000:]
    assert "Comparing 2 Runs from 1 Experiment" in compared.stdout
    for execution, run in zip(logged.executions, parents, strict=True):
        assert execution.id in compared.stdout and run is not None and run.run_id in compared.stdout
    assert "Epochs" in compared.stdout
    for name, page in pages.items():
        screenshot = tmp_path / f"mlflow-{name}.png"
        shot = headless(chromium, profile, *options, f"--screenshot={screenshot}", page, timeout=180)
        assert shot.returncode == 0 and screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert screenshot.stat().st_size > 20_000, f"{screenshot} is nearly empty: the page did not render"
        print(f"screenshot: {screenshot}")


@pytest.mark.parametrize("store", ["sqlite", "server"])
def test_compare_takes_its_runs_from_mlflow(stores: dict[str, Logged], store: str) -> None:
    """``compare(..., from_mlflow=True)`` by execution id (the parent runs' names): the params and metrics as the
    store has them, equal to the executions' own."""
    from pipeline import compare

    logged = stores[store]
    first, second = logged.executions
    frame = compare(first.id, second.id, from_mlflow=True, workdir=logged.workdir, mlflow_tracking_uri=logged.uri)
    assert list(frame.columns) == [first.id, second.id, "differs"]
    assert frame.loc["parameter: Epochs"].tolist() == ["3", "4", True]
    assert frame.loc["parameter: linear_learner.epochs"].tolist() == ["3", "4", True]
    assert frame.loc["parameter: PredictorType", "differs"] == False  # noqa: E712 - a numpy bool
    runs = [execution.mlflow_run for execution in logged.executions]
    assert frame.loc["run"].tolist()[:2] == [run.run_id for run in runs if run is not None]
    local = compare(first, second)  # from the executions' own records: the MLflow rows read the same
    shown = [name for name in local.index if name.startswith("metric: ")]
    assert len(shown) >= 8
    columns = [first.id, second.id]
    assert frame.loc[shown, columns].values.tolist() == local.loc[shown, columns].values.tolist()
    for execution, column in ((first, first.id), (second, second.id)):
        final = {item["MetricName"]: item["Value"] for item in _train_properties(execution)["FinalMetricDataList"]}
        for name, value in final.items():
            assert frame.loc[f"metric: final/{name}", column] == f"{value:.4f}"
        package = execution.model_package
        assert package is not None and frame.loc["model package", column] == package["arn"]


def test_llpipe_compare_from_mlflow_by_run_id(stores: dict[str, Logged], capsys: pytest.CaptureFixture) -> None:
    logged = stores["sqlite"]
    runs = [execution.mlflow_run for execution in logged.executions]
    assert runs[0] is not None and runs[1] is not None
    workdir = str(logged.workdir)
    code = cli.main(["compare", "--from-mlflow", runs[0].run_id, runs[1].run_id, "--workdir", workdir, "--json"])
    assert code == 0
    shown = json.loads(capsys.readouterr().out)
    first, second = (execution.id for execution in logged.executions)
    assert shown["parameter: Epochs"] == {first: "3", second: "4", "differs": True}
    assert shown["run"] == {first: runs[0].run_id, second: runs[1].run_id, "differs": True}
    missing = cli.main(["compare", "--from-mlflow", runs[0].run_id, "nosuchexecution", "--workdir", workdir])
    assert missing == 2
    assert capsys.readouterr().err.strip() == (
        f"llpipe compare: no MLflow run 'nosuchexecution' in {logged.uri}: give a run id, or an execution id of "
        f"experiment '{EXPERIMENT}' (--mlflow-experiment names another)"
    )
