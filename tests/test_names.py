"""The container scripts cannot import ``pipeline``: their copies of the shared names equal ``pipeline.core.names``."""

from __future__ import annotations

from evaluation import evaluate
from pipeline.core import names
from preprocessing import preprocess


def test_preprocess_keeps_the_shared_names() -> None:
    assert preprocess.PREDICTOR_TYPES == names.PREDICTOR_TYPES
    assert preprocess.CSV_SUFFIXES == names.CSV_SUFFIXES
    assert preprocess.PARQUET_SUFFIXES == names.PARQUET_SUFFIXES
    assert preprocess.SHARD_SUFFIX == names.SHARD_SUFFIX


def test_preprocess_defaults_its_split_as_the_definition_and_preflight() -> None:
    parser = preprocess.build_parser()
    defaults = {"ValidationFraction": "validation_fraction", "TestFraction": "test_fraction"}
    assert {name: parser.get_default(option) for name, option in defaults.items()} == names.SPLIT_FRACTIONS


def test_evaluate_keeps_the_shared_names() -> None:
    assert evaluate.PREDICTOR_TYPES == names.PREDICTOR_TYPES
    assert evaluate.GATE_METRICS == names.GATE_METRICS
    assert evaluate.METRICS_SECTIONS == names.METRICS_SECTIONS
    assert evaluate.REPORT_NAME == names.REPORT_NAME
    assert (evaluate.CHAMPION, evaluate.DECISION) == (names.CHAMPION, names.DECISION)


def test_both_scripts_write_the_exit_message_alike() -> None:
    """Each script keeps its own copy of the helper, as of the names above: both write SageMaker's file alike."""
    import inspect

    for script in (preprocess, evaluate):
        assert script.EXIT_MESSAGE_FILE == names.EXIT_MESSAGE_FILE
        assert script.EXIT_MESSAGE_BYTES == names.EXIT_MESSAGE_BYTES
    assert inspect.getsource(preprocess.write_exit_message) == inspect.getsource(evaluate.write_exit_message)


def test_step_status_reads_and_writes_as_plain_strings() -> None:
    import json

    assert json.dumps({"status": names.StepStatus.FAILED}) == '{"status": "Failed"}'
    assert {names.StepStatus.SUCCEEDED: "green"}.get("Succeeded") == "green", "a status read back from JSON is a str"
    assert f"{names.StepStatus.SKIPPED}" == "Skipped"


def test_run_data_takes_every_suffix_convert_and_preprocess_take(tmp_path) -> None:
    from pipeline.local.data import data_files

    for name in ("a.csv", "b.csv.gz", "c.parquet", "d.pq", "notes.txt", "_SUCCESS"):
        (tmp_path / name).write_bytes(b"")
    base, files = data_files(tmp_path)
    assert base == tmp_path
    assert [path.name for path in files] == ["a.csv", "b.csv.gz", "c.parquet", "d.pq"]
