"""The Evaluate job run as its container runs it: evaluate.py from its code bundle in the scikit-learn image's
environment (Python 3.9, numpy 1.24.1), a separate process: its exit status, its one-line error and exit message,
and the same report this interpreter writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.container import Container
from support.evaluation_inputs import predictions_for, write_binary_inputs, write_shards_of_every_kind

from evaluation.evaluate import main


@pytest.fixture
def binary_inputs(tmp_path: Path) -> tuple[Path, Path]:
    return write_binary_inputs(tmp_path)


def test_count_mismatch_fails_naming_the_file_and_both_counts(
    tmp_path: Path, binary_inputs: tuple[Path, Path], container: Container
) -> None:
    """Run as the container runs it: a separate process, a non-zero exit, one line on stderr, no report."""
    predictions_dir, test_dir = binary_inputs
    out_file = predictions_dir / "nested" / "part-2.recordio.out"
    lines = out_file.read_text().splitlines(keepends=True)
    out_file.write_text("".join(lines[:-1]))
    output_dir = tmp_path / "evaluation"
    args = ["--predictions-dir", predictions_dir, "--test-dir", test_dir, "--output-dir", output_dir]
    (tmp_path / "output").mkdir()  # SageMaker's /opt/ml/output: the line is also the job's ExitMessage
    resource_config = tmp_path / "resourceconfig.json"
    resource_config.write_text(json.dumps({"current_host": "algo-1", "hosts": ["algo-1"]}))
    args += ["--exit-message-file", tmp_path / "output" / "message", "--resource-config", resource_config]
    result = container.run("evaluate", "--predictor-type", "binary_classifier", *args)
    assert result.returncode == 1 and not output_dir.exists()
    stderr = result.stderr
    assert len(stderr.strip().splitlines()) == 1 and stderr.startswith("evaluate: error: ")
    assert f"{out_file} holds {len(lines) - 1} predictions" in stderr
    assert f"test shard nested/part-2.recordio holds {len(lines)} records" in stderr
    assert (tmp_path / "output" / "message").read_bytes() == f"algo-1: {stderr}".encode()


def test_an_unexpected_failure_still_says_what_it_was_in_the_exit_message(
    tmp_path: Path, binary_inputs: tuple[Path, Path], container: Container
) -> None:
    """A defect rather than bad input (here the output folder is a file): traceback in the log, last line in
    ExitMessage."""
    predictions_dir, test_dir = binary_inputs
    not_a_folder = tmp_path / "evaluation"
    not_a_folder.write_text("")
    (tmp_path / "output").mkdir()
    resource_config = tmp_path / "resourceconfig.json"
    resource_config.write_text(json.dumps({"current_host": "algo-1", "hosts": ["algo-1"]}))
    args = ["--predictions-dir", predictions_dir, "--test-dir", test_dir, "--output-dir", not_a_folder]
    args += ["--exit-message-file", tmp_path / "output" / "message", "--resource-config", resource_config]
    result = container.run("evaluate", "--predictor-type", "binary_classifier", *args)
    assert result.returncode == 1 and "Traceback (most recent call last)" in result.stderr
    message = (tmp_path / "output" / "message").read_text()
    assert message.startswith("algo-1: evaluate: unexpected ") and message.endswith(" (traceback in the log)\n")
    assert str(not_a_folder) in message and message.count("\n") == 1


def test_runs_from_its_code_bundle(tmp_path: Path, binary_inputs: tuple[Path, Path], container: Container) -> None:
    """The container runs evaluate.py with the packages of its bundle, without the repository's, on Python 3.9."""
    predictions_dir, test_dir = binary_inputs
    output_dir = tmp_path / "out"
    args = ["--predictions-dir", predictions_dir, "--test-dir", test_dir, "--output-dir", output_dir]
    result = container.run("evaluate", *args, "--predictor-type", "binary_classifier", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "gate auc = " in result.stdout
    assert json.loads((output_dir / "evaluation.json").read_text())["gate"]["metric"] == "auc"


@pytest.mark.parametrize(
    ("predictor_type", "loss"),
    [
        ("binary_classifier", "logistic"),
        ("binary_classifier", "hinge_loss"),
        ("multiclass_classifier", "softmax_loss"),
        ("regressor", "squared_loss"),
    ],
)
def test_the_image_environment_gives_the_report_of_this_interpreter(
    tmp_path: Path, container: Container, predictor_type: str, loss: str
) -> None:
    """evaluate.py from its code bundle on Python 3.9 / numpy 1.24.1 / scikit-learn 1.2.1, on single-record, sparse
    and split-record shards, writes the report this interpreter's run writes."""
    labels, predictions = predictions_for(predictor_type, loss, 240)
    predictions_dir, test_dir = write_shards_of_every_kind(tmp_path, labels, predictions)
    args = ["--predictions-dir", predictions_dir, "--test-dir", test_dir, "--predictor-type", predictor_type]
    args += ["--loss", loss]
    result = container.run("evaluate", *args, "--output-dir", tmp_path / "image")
    assert result.returncode == 0, result.stderr
    assert main([*map(str, args), "--output-dir", str(tmp_path / "here")]) == 0
    in_image = json.loads((tmp_path / "image" / "evaluation.json").read_text())
    here = json.loads((tmp_path / "here" / "evaluation.json").read_text())
    assert in_image["dataset"] == {"item_count": 240, "file_count": 4}
    expected_kind = {"binary_classifier": "probability", "regressor": "value"}.get(predictor_type, "probability")
    assert in_image["score"] == {"kind": "margin" if loss == "hinge_loss" else expected_kind}
    assert in_image["gate"]["value"] == pytest.approx(here["gate"]["value"], rel=1e-9)
    section = next(key for key in in_image if key.endswith("_metrics"))
    for name, entry in here[section].items():
        if isinstance(entry, dict) and "value" in entry:
            assert in_image[section][name]["value"] == pytest.approx(entry["value"], rel=1e-9, nan_ok=True), name
