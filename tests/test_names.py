"""The container scripts cannot import ``pipeline``: their copies of the shared names must equal ``pipeline.names``."""

from __future__ import annotations

from evaluation import evaluate
from pipeline import names
from preprocessing import preprocess


def test_preprocess_keeps_the_shared_names() -> None:
    assert preprocess.PREDICTOR_TYPES == names.PREDICTOR_TYPES
    assert preprocess.CSV_SUFFIXES == names.CSV_SUFFIXES
    assert preprocess.PARQUET_SUFFIXES == names.PARQUET_SUFFIXES
    assert preprocess.SHARD_SUFFIX == names.SHARD_SUFFIX


def test_evaluate_keeps_the_shared_names() -> None:
    assert evaluate.PREDICTOR_TYPES == names.PREDICTOR_TYPES
    assert evaluate.GATE_METRICS == names.GATE_METRICS
    assert evaluate.METRICS_SECTIONS == names.METRICS_SECTIONS
    assert evaluate.REPORT_NAME == names.REPORT_NAME


def test_step_status_reads_and_writes_as_plain_strings() -> None:
    import json

    assert json.dumps({"status": names.StepStatus.FAILED}) == '{"status": "Failed"}'
    assert {names.StepStatus.SUCCEEDED: "green"}.get("Succeeded") == "green", "a status read back from JSON is a str"
    assert f"{names.StepStatus.SKIPPED}" == "Skipped"
