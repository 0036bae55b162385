"""Real tables through the whole local pipeline with no flags but data, label and predictor type: text feature
columns, string labels, missing values, column orders that differ between files, several instances.

Before the schema was inferred, the first of these failed in Preprocess on the text value 'No'.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.partial_runs import UP_TO_THE_REPORT, partial_run
from support.settings import FAST

from pipeline import cli
from pipeline.api.execution import LocalExecution
from pipeline.definition.config import load_config
from pipeline.local.data import user_data
from pipeline.local.executions import ExecutionStore
from pipeline.local.runner import LocalRun, build_local_run
from pipeline.local.workdir import Workdir


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> LocalRun:
    return build_local_run(load_config(env={}), Workdir(tmp_path_factory.mktemp("unused")))


def default_table(rows: int, seed: int = 0) -> pd.DataFrame:
    """The textbook 'Default' shape: a No/Yes label, a No/Yes student column, balance and income."""
    rng = np.random.default_rng(seed)
    student = rng.random(rows) < 0.3
    balance = np.clip(rng.normal(1000, 500, rows), 0, None).round(2)
    income = np.where(student, rng.normal(17000, 5000, rows), rng.normal(40000, 10000, rows)).round(2)
    default = rng.random(rows) < 1 / (1 + np.exp(-(-5 + 0.004 * balance - 0.8 * student)))
    return pd.DataFrame(
        {
            "default": np.where(default, "Yes", "No"),
            "student": np.where(student, "Yes", "No"),
            "balance": balance,
            "income": income,
        }
    )


def report_of(run: LocalRun, record) -> dict:
    return json.loads(run.s3.path(record.steps["Evaluate"].properties["PropertyFiles"]["EvaluationReport"]).read_text())


def test_the_default_table_runs_with_no_other_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's command, verbatim: it failed on `student` = 'No' and had no way to declare text columns."""
    default_table(1000).to_csv(tmp_path / "default.csv", index=False)
    workdir = tmp_path / "work"
    code = cli.main(["run", "--data", str(tmp_path / "default.csv"), "--label-column", "default",
                     "--predictor-type", "binary_classifier", "--workdir", str(workdir)])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "categorical columns (text values in the sample): student" in out
    assert "label values (mapped to 0..1 in this order): No, Yes" in out
    (record,) = ExecutionStore(workdir / "executions").list()
    schema_url = record.parameters["SchemaUrl"]
    assert schema_url.startswith("s3://llpipe-local/linear-learner-pipeline/schemas/") and schema_url in out
    assert record.parameters["LabelValues"] == "No,Yes" and record.parameters["CategoricalColumns"] == "student"
    schema = json.loads((workdir / "s3" / schema_url.removeprefix("s3://")).read_text())
    assert schema["feature_columns"] == ["student", "balance", "income"]
    run_report = json.loads(next((workdir / "s3").rglob("evaluation.json")).read_text())
    assert set(run_report["binary_classification_metrics"]["confusion_matrix"]) == {"No", "Yes"}
    assert run_report["class_names"] == ["No", "Yes"] and set(run_report["per_class_metrics"]) == {"No", "Yes"}
    assert run_report["gate"]["value"] > 0.8
    shown = cli.main(["execution", "show", record.id, "--workdir", str(workdir)])
    assert shown == 0 and f"SchemaUrl={schema_url}" in capsys.readouterr().out.replace("\n", "")


def test_multiclass_text_labels_shuffled_columns_two_processing_three_training_instances(
    built: LocalRun, tmp_path: Path
) -> None:
    """Issue 11, case 1 end to end: files with another column order on 2 processing instances give the same model
    input as aligned files; and issue 13 on 3 training instances with string classes and a text column. The aligned
    files run the whole pipeline; the shuffled ones its Preprocess step (the model input, compared byte for byte)."""
    from sklearn.datasets import load_iris

    frame = load_iris(as_frame=True).frame
    frame["species"] = frame.pop("target").map({0: "setosa", 1: "versicolor", 2: "virginica"})
    frame["colour"] = np.random.default_rng(1).choice(["red", "green", "blue"], len(frame))
    frame.loc[[3, 40], "colour"] = None  # missing text values: an all-zero block under MissingValues=zero
    aligned, shuffled = tmp_path / "aligned", tmp_path / "shuffled"
    for folder in (aligned, shuffled):
        folder.mkdir()
        for part in range(4):
            rows = frame.iloc[part::4]
            if folder == shuffled and part % 2:
                rows = rows[list(reversed(rows.columns))]
            rows.to_csv(folder / f"part-{part}.csv", index=False)
    outputs = {}
    for folder in (aligned, shuffled):
        workdir = tmp_path / f"work-{folder.name}"
        if folder == aligned:
            run = LocalRun(built.config, Workdir(workdir), built.definition_json, built.uploads)
        else:
            run = partial_run(built, workdir, ["Preprocess"])
        source = user_data(folder, "species", "multiclass_classifier")
        overrides = {**FAST, "ProcessingInstanceCount": "2", "TrainingInstanceCount": "3", "MissingValues": "zero"}
        prepared = run.prepare(source, overrides, sample_rows=1000)
        inferred = prepared.inferred
        assert inferred is not None
        assert inferred.parameters["LabelValues"] == "setosa,versicolor,virginica"
        assert inferred.parameters["NumClasses"] == "3" and inferred.parameters["CategoricalColumns"] == "colour"
        record = prepared.execute()
        assert record.status == "Succeeded", record.failure_reason
        assert len(record.steps["Preprocess"].logs) == 2
        if folder == aligned:
            assert len(record.steps["Train"].logs) == 3
            report = report_of(run, record)
            assert report["class_names"] == ["setosa", "versicolor", "virginica"]
            assert set(report["multiclass_classification_metrics"]["confusion_matrix"]["virginica"]) == {
                "setosa",
                "versicolor",
                "virginica",
            }
            assert report["gate"]["value"] > 0.5, "well above chance (1/3) after 3 epochs"
        else:
            assert set(record.steps) == {"Preprocess"}
        test_uri = record.steps["Preprocess"].properties["ProcessingOutputConfig"]["Outputs"]
        outputs[folder.name] = sorted(
            path.read_bytes()
            for item in test_uri
            if item["OutputName"] in ("train", "validation", "test")
            for path in run.s3.path(item["S3Output"]["S3Uri"]).glob("*.pbr")
        )
    assert outputs["aligned"] and outputs["aligned"] == outputs["shuffled"], (
        "the same RecordIO bytes whatever the column order in files"
    )


def test_regression_with_a_text_feature_and_a_collision_warning(built: LocalRun, tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    city = rng.choice(["Paris", "Lyon", "Nice", "Rome", "Oslo"], 400)
    x = rng.normal(size=400)
    price = 3 * x + np.where(city == "Paris", 5.0, 0.0) + rng.normal(scale=0.1, size=400)
    pd.DataFrame({"city": city, "x": x, "price": price}).to_parquet(tmp_path / "houses.pq", index=False)
    run = partial_run(built, tmp_path / "work", UP_TO_THE_REPORT)  # the warning is Preprocess's, in the summary
    source = user_data(tmp_path / "houses.pq", "price", "regressor")  # .pq was refused by --data before
    overrides = {**FAST, "HashBuckets": "2"}
    prepared = run.prepare(source, overrides, sample_rows=100)
    inferred = prepared.inferred
    assert inferred is not None and inferred.parameters["CategoricalColumns"] == "city"
    assert any("share 2 of 2 hash buckets" in note for note in inferred.notes)
    record = prepared.execute()
    assert record.status == "Succeeded", record.failure_reason
    from pipeline.cli.render.summary import summarise

    summary = summarise(LocalExecution(record, run.s3), render_plots=False)
    expected = "categorical column 'city': 5 distinct value(s) in 2 of 2 hash buckets"
    assert any(expected in warning for warning in summary["warnings"])
