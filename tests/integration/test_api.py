"""The Python API (``from pipeline import run_local, compare, executions, ...``) on real local runs: a DataFrame in,
the execution's steps, metrics, gate, predictions and plots out, read back from the files the pipeline wrote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.drift_table import LABEL
from support.finished_run import FinishedRun
from support.settings import FAST

from pipeline import cli
from pipeline.api import run_local
from pipeline.api._shared import split_options
from pipeline.api.comparison import side_by_side
from pipeline.api.execution import LocalExecution, metrics_frame
from pipeline.core.errors import ConfigError, DataError, ParameterError
from pipeline.local.executions import ExecutionStore
from pipeline.local.workdir import Workdir

REPOSITORY = Path(__file__).resolve().parents[2]


def breast_cancer() -> pd.DataFrame:
    from sklearn.datasets import load_breast_cancer

    return load_breast_cancer(as_frame=True).frame


@pytest.fixture(scope="module")
def two_runs(
    finished_run: FinishedRun, tmp_path_factory: pytest.TempPathFactory
) -> tuple[LocalExecution, LocalExecution, Path]:
    """Two runs on the same DataFrame in one work dir: the shared finished run (the drift table at FAST, in a copy of
    its work dir) and a second one with more epochs."""
    workdir = finished_run.copy_to(tmp_path_factory.mktemp("api") / "work")
    record = ExecutionStore(workdir / "executions").load(finished_run.execution_id)
    first = LocalExecution.in_workdir(record, Workdir(workdir))
    second = run_local(
        finished_run.frame.copy(), LABEL, "binary_classifier", workdir=workdir, progress=False, **{**FAST, "Epochs": 4}
    )
    return first, second, workdir


def test_python_c_run_local_on_a_dataframe_returns_the_metrics_of_its_evaluation_json(tmp_path: Path) -> None:
    """Enough test rows (>= 200) that the report carries real bootstrap standard deviations, not NaN."""
    script = """
import json
import numpy as np, pandas as pd
from pipeline import run_local
rng = np.random.default_rng(7)
features = rng.normal(size=(1500, 4))
label = (features @ [1.5, -1.0, 0.5, 0.0] + rng.normal(scale=1.0, size=1500) > 0).astype(int)
frame = pd.DataFrame(features, columns=["a", "b", "c", "d"]).assign(label=label)
execution = run_local(frame, "label", "binary_classifier", Epochs=3, NumModels=2, MiniBatchSize=100)
print(json.dumps({
    "id": execution.id, "status": execution.status, "report": str(execution.report_path),
    "metrics": execution.metrics.reset_index().to_dict(orient="records"), "gate": execution.gate,
}))
"""
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["status"] == "Succeeded"
    report_path = Path(outcome["report"])
    assert report_path.is_relative_to(tmp_path / ".llpipe" / "s3") and outcome["id"] in str(report_path)
    report = json.loads(report_path.read_text())
    assert report["dataset"]["item_count"] >= 200
    section = report["binary_classification_metrics"]
    scalars = {
        name: entry
        for name, entry in section.items()
        if isinstance(entry, dict) and "value" in entry and not name.endswith("_best_constant_classifier")
    }
    metrics = {row["metric"]: row for row in outcome["metrics"]}
    assert set(metrics) == set(scalars) and len(metrics) == 11
    for name, entry in scalars.items():
        assert metrics[name]["value"] == entry["value"], name
        assert metrics[name]["standard_deviation"] == entry["standard_deviation"], name
        assert entry["standard_deviation"] > 0 or name in ("false_positive_rate",), name
    for name in ("accuracy", "precision", "recall", "f1"):
        baseline = section[f"{name}_best_constant_classifier"]["value"]
        assert metrics[name]["best_constant_classifier"] == baseline
    # MetricThreshold -1 (the default): the threshold is the automatic floor Evaluate decided with
    assert outcome["gate"] == {
        "metric": "auc",
        "value": section["auc"]["value"],
        "threshold": report["decision"]["threshold_floor"],
        "metric_threshold": -1.0,
        "passed": True,
    }
    assert report["decision"]["automatic_floor"]["applied"] is True
    [staged] = (tmp_path / ".llpipe" / "frames").glob("frame-*.csv")
    assert list(pd.read_csv(staged).columns) == ["a", "b", "c", "d", "label"]


def test_the_execution_reads_steps_predictions_plots_and_model(two_runs: tuple, finished_run: FinishedRun) -> None:
    first, _, _ = two_runs
    assert first.succeeded and first.failure_reason is None
    steps = first.steps
    assert list(steps.columns) == ["step", "type", "status", "seconds", "cache_hit"]
    assert list(steps.step) == list(first.record.steps)
    assert dict(zip(steps.step, steps.status, strict=True))["QualityGateFailed"] == "Skipped"
    assert (steps[steps.status == "Succeeded"].seconds >= 0).all()

    report = first.report
    predictions = first.predictions()
    assert list(predictions.columns) == ["file", "row", "label", "score", "predicted_label"]
    assert len(predictions) == report["dataset"]["item_count"]
    # a DataFrame is staged as one CSV file: its data row N is the frame's row N - 1
    assert predictions.file.str.match(r"frame-[0-9a-f]+\.csv$").all()
    classes = first.parameters["LabelValues"].split(",")  # the labels as Preprocess encoded them: 0, 1 in this order
    labels = finished_run.frame[LABEL].map(classes.index).to_numpy()
    assert (predictions.label.to_numpy() == labels[predictions.row.to_numpy() - 1]).all()
    accuracy = float((predictions.label == predictions.predicted_label).mean())
    assert accuracy == pytest.approx(report["binary_classification_metrics"]["accuracy"]["value"])
    assert predictions.score.between(0, 1).all()

    names = ["roc_curve.png", "precision_recall_curve.png", "confusion_matrix.png"]
    assert [path.name for path in first.plots] == names
    assert all(path.read_bytes().startswith(b"\x89PNG") for path in first.plots)
    assert first.model_path.name == "model.tar.gz" and first.model_path.is_file()
    assert first.model_package["version"] == 1 and first.model_package["approval_status"] == "PendingManualApproval"
    assert first.parameters["Epochs"] == 3 and first.parameters["LabelColumn"] == LABEL


def test_the_same_frame_is_the_same_data_version_and_hits_the_cache(two_runs: tuple) -> None:
    first, second, workdir = two_runs
    assert second.parameters["DataVersion"] == first.parameters["DataVersion"]
    assert second.parameters["InputDataUrl"] == first.parameters["InputDataUrl"]
    cache_hits = dict(zip(second.steps.step, second.steps.cache_hit, strict=True))
    assert cache_hits["Preprocess"] == first.id, "unchanged data: Preprocess comes from the cache"
    assert cache_hits["Train"] is None, "Epochs changed: Train ran again"
    assert len(list((workdir / "frames").glob("*.csv"))) == 1


def test_executions_tell_runs_apart_and_compare_shows_what_differs(two_runs: tuple) -> None:
    from pipeline import compare, executions

    first, second, workdir = two_runs
    listed = executions(workdir=workdir)
    assert list(listed.id) == [second.id, first.id]
    newest = listed.iloc[0]
    version = first.parameters["DataVersion"]
    assert (
        newest.data.startswith("frame-") and version in newest.data and f"({LABEL}, binary_classifier)" in newest.data
    )
    assert "Epochs=4" in newest.parameters and "MiniBatchSize=50" in newest.parameters
    assert "DataVersion" not in newest.parameters
    assert newest.gate == f"auc={second.gate['value']:.4f}"

    table = compare(first.id, second.id, workdir=workdir)
    assert list(table.columns) == [first.id, second.id, "differs"]
    assert table.loc["parameter: Epochs"].tolist() == [3, 4, True]
    assert not table.loc["parameter: DataVersion", "differs"]
    auc = first.metrics.loc["auc"]
    assert table.loc["metric: auc", first.id].startswith(f"{auc.value:.4f}")
    assert table.loc["model package", second.id].startswith("linear-learner-models v2")
    assert side_by_side(first, first).differs.sum() == 0


def test_the_cli_lists_and_compares_the_same_runs(two_runs: tuple, capsys: pytest.CaptureFixture[str]) -> None:
    first, second, workdir = two_runs
    assert cli.main(["executions", "--workdir", str(workdir), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [row["id"] for row in rows] == [second.id, first.id]
    assert rows[0]["gate"].startswith("auc=") and "Epochs=4" in rows[0]["parameters"]
    assert cli.main(["compare", first.id, second.id, "--workdir", str(workdir), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["parameter: Epochs"] == {first.id: 3, second.id: 4, "differs": True}
    assert "parameter: LabelColumn" not in shown, "rows that agree are left out without --all"
    assert cli.main(["compare", first.id, "nope", "--workdir", str(workdir)]) == 1
    assert "no execution 'nope'" in capsys.readouterr().err


def test_an_execution_renders_in_jupyter_with_its_plots_inline(two_runs: tuple) -> None:
    first, _, _ = two_runs
    html = first._repr_html_()
    assert f"Execution {first.id}" in html and "Succeeded" in html
    assert "<table" in html and "QualityGateFailed" in html and "standard_deviation" in html
    assert html.count('src="data:image/png;base64,') == 3
    assert "Quality gate: auc" in html


def test_the_train_job_has_a_scaling_record_with_its_hosts(two_runs: tuple, capsys: pytest.CaptureFixture[str]) -> None:
    """Two local instances (the definition's TrainingInstanceCount): each host's records, shards, compute and sync
    time, and the job's global batch (instances x MiniBatchSize), shown by the API, Jupyter, the CLI and --json."""
    first, _, workdir = two_runs
    [record] = first.scaling
    assert record["step"] == "Train" and record["job"].startswith(f"pipelines-{first.id}")
    assert record["instances"] == 2 and record["global_batch"] == 2 * int(FAST["MiniBatchSize"])
    hosts = record["hosts"]
    assert [host["host"] for host in hosts] == ["algo-1", "algo-2"] and record["idle_hosts"] == []
    assert all(host["train_shards"] >= 1 and len(host["epochs"]) == int(FAST["Epochs"]) for host in hosts)
    assert record["records"] == sum(epoch["records"] for host in hosts for epoch in host["epochs"])
    assert all(0 <= host["sync_seconds"] <= host["seconds"] for host in hosts)
    assert 0 <= record["sync_share"] < 1 and record["imbalance"] >= 1 and record["throughput"] > 0
    assert f"Scaling of {record['job']}" in first._repr_html_()
    assert cli.main(["execution", "show", first.id, "--workdir", str(workdir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["scaling"] == first.scaling
    assert cli.main(["execution", "show", first.id, "--workdir", str(workdir)]) == 0
    shown = capsys.readouterr().out
    assert "global batch 100" in shown and "algo-2" in shown


def test_the_scaling_study_trains_the_preprocess_output_at_each_count(
    two_runs: tuple, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """llpipe scaling on an execution: its own Train request at 1 and 2 instances; the table's figures are the jobs'
    own scaling records; the plot and the JSON are written. More instances than train shards: refused up front."""
    from pipeline.api.scaling import ScalingStudyError, scaling_study

    first, _, workdir = two_runs
    argv = ["scaling", "--execution", first.id, "--instances", "1,2", "--workdir", str(workdir)]
    assert cli.main([*argv, "--output", str(tmp_path / "study"), "--json"]) == 0
    study = json.loads(capsys.readouterr().out)
    assert study["train_shards"] == 2 and [row["instances"] for row in study["rows"]] == [1, 2]
    throughputs = []  # the records' unrounded throughputs: the study derives speedup and efficiency from these
    for row in study["rows"]:
        [job] = row["jobs"]
        record = json.loads((tmp_path / "study" / "jobs" / job / "scaling.json").read_text())
        throughputs.append(record["throughput"])
        assert record["instances"] == row["instances"] and record["global_batch"] == row["global_batch"]
        assert row["min_seconds"] == round(record["training_seconds"], 4)
        assert row["throughput"] == round(record["throughput"], 1)
        assert row["validation_objective"] is not None and row["test_metric"] is not None
    one, two = study["rows"]
    assert two["speedup"] == round(throughputs[1] / throughputs[0], 3)
    assert two["efficiency"] == round(throughputs[1] / throughputs[0] / 2, 3)
    assert two["global_batch"] == 2 * one["global_batch"]
    assert (
        study["recommended"] in (1, 2) and "smallest count within 10% of the best throughput" in study["recommendation"]
    )
    assert Path(study["plot"]).read_bytes().startswith(b"\x89PNG")
    assert json.loads(Path(study["json_path"]).read_text()) == study
    with pytest.raises(
        ScalingStudyError, match=r"up to 3 but Preprocess wrote 2 train shard\(s\).*TrainingInstanceCount=3"
    ):
        scaling_study(first, [1, 3], output=tmp_path / "refused")
    assert not (tmp_path / "refused").exists()


def test_bad_input_is_refused_before_anything_is_staged(tmp_path: Path) -> None:
    frame = breast_cancer()
    with pytest.raises(DataError, match=r"label_column 'label' is not a column of the DataFrame: mean radius"):
        run_local(frame, "label", "binary_classifier", workdir=tmp_path, progress=False)
    with pytest.raises(DataError, match="data needs label_column and predictor_type"):
        run_local(frame, "target", workdir=tmp_path, progress=False)
    with pytest.raises(DataError, match="predictor_type 'binary'"):
        run_local(frame, "target", "binary", workdir=tmp_path, progress=False)
    with pytest.raises(DataError, match="expected a path or a pandas DataFrame, got list"):
        run_local([[1, 2]], "target", "binary_classifier", workdir=tmp_path, progress=False)
    with pytest.raises(ConfigError, match="unknown setting 'bukcet'"):
        run_local(frame, "target", "binary_classifier", workdir=tmp_path, progress=False, bukcet="x")
    assert not (tmp_path / "executions").exists() and not (tmp_path / "s3").exists()
    with pytest.raises(ParameterError, match="unknown parameter"):
        run_local(frame, "target", "binary_classifier", workdir=tmp_path, progress=False, Epoch=3)
    assert not (tmp_path / "executions").exists() and not (tmp_path / "s3").exists()


def test_capitalised_keywords_are_parameters_the_others_settings() -> None:
    settings, parameters = split_options({"bucket": "b", "Epochs": 3, "UseBias": False, "MetricThreshold": 0.5})
    assert settings == {"bucket": "b"}
    assert parameters == {"Epochs": "3", "UseBias": "false", "MetricThreshold": "0.5"}


def test_metrics_keep_undefined_values_as_nan() -> None:
    report = {"regression_metrics": {"mse": {"value": 2.5, "standard_deviation": "NaN"}, "r2": {"value": "NaN"}}}
    frame = metrics_frame(report)
    assert list(frame.columns) == ["value", "standard_deviation"]
    assert frame.loc["mse", "value"] == 2.5 and np.isnan(frame.loc["mse", "standard_deviation"])
    assert np.isnan(frame.loc["r2", "value"])
    assert metrics_frame(None).empty


def test_import_pipeline_stays_light() -> None:
    heavy = "('pandas', 'sagemaker', 'numpy', 'boto3')"
    script = f"import sys, pipeline; print(sorted(m for m in {heavy} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_linear_learner_is_shown_beside_the_scikit_learn_baseline_everywhere(
    two_runs: tuple, capsys: pytest.CaptureFixture[str]
) -> None:
    """The report's baseline section reaches the API, the frame, compare, Jupyter, the summary and execution show."""
    from pipeline.cli.render.summary import summarise

    first, second, workdir = two_runs
    report = first.report
    section = report["baseline"]["binary_classification_metrics"]
    baseline = first.baseline
    assert baseline["metric"] == "auc" and baseline["value"] == report["baseline"]["gate"]["value"]
    assert baseline["linear_learner_value"] == report["gate"]["value"]
    assert baseline["below_baseline"] is (report["gate"]["value"] < baseline["value"])
    assert baseline["train_records"] == report["baseline"]["train_records"] > 0
    metrics = first.metrics
    assert metrics.loc["auc", "sklearn_baseline"] == section["auc"]["value"]
    deviation = section["f1"]["standard_deviation"]  # "NaN" (as Model Monitor writes it) under 200 test records
    assert metrics.loc["f1", "sklearn_baseline_standard_deviation"] == pytest.approx(float(deviation), nan_ok=True)
    table = side_by_side(first, second)
    assert table.loc["scikit-learn baseline", first.id].startswith(f"auc={baseline['value']:.4f} (Linear Learner ")
    assert "Baseline (scikit-learn StandardScaler + LogisticRegressionCV" in first._repr_html_()
    summary = summarise(first, render_plots=False)
    assert summary["baseline"]["value"] == baseline["value"]
    assert summary["baseline"]["metrics"]["auc"] == section["auc"]["value"]
    assert cli.main(["execution", "show", first.id, "--workdir", str(workdir)]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "Baseline (scikit-learn" in shown and f"auc = {baseline['value']:.4f}; Linear Learner" in shown
    assert cli.main(["execution", "show", first.id, "--workdir", str(workdir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["baseline"] == baseline


def test_a_model_below_the_baseline_says_so() -> None:
    from rich.console import Console

    from pipeline.cli.render.summary import baseline_summary, print_baseline

    report = {
        "gate": {"metric": "auc", "value": 0.586},
        "baseline": {
            "model": "scikit-learn LogisticRegressionCV",
            "train_records": 4075,
            "binary_classification_metrics": {"auc": {"value": 0.735, "standard_deviation": 0.03}},
            "gate": {"metric": "auc", "value": 0.735},
        },
    }
    console = Console(record=True, width=300)
    print_baseline(baseline_summary(report), console)
    assert console.export_text().strip() == (
        "Baseline (scikit-learn LogisticRegressionCV, 4075 train records): auc = 0.7350; Linear Learner 0.5860: "
        "BELOW the baseline by 0.1490"
    )
