"""Evaluate's predictions file with row ids, the test rows' fingerprint, and the coefficients section (issue 40)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support.evaluation_inputs import SHARD_NAMES, binary_case, write_job_inputs

from containerlib.linear_learner.model import LinearModel
from containerlib.row_ids import RowIdsError, RowsFingerprint, ids_file, row_ids
from evaluation.coefficients import coefficients_section, feature_scale
from evaluation.job import evaluate
from pipeline.api.execution import coefficients_frame


def binary_inputs(root: Path, n: int = 60) -> tuple[Path, Path, Path, np.ndarray]:
    labels, scores, predicted = binary_case(n)
    records = [{"score": float(s), "predicted_label": int(p)} for s, p in zip(scores, predicted, strict=True)]
    predictions_dir, test_dir, output_dir = write_job_inputs(root, labels, records)
    return predictions_dir, test_dir, output_dir, labels


def write_ids(summary: Path, test_dir: Path, rows: dict[str, list[int]]) -> None:
    summary.mkdir(parents=True, exist_ok=True)
    for name, numbers in rows.items():
        ids_file(summary, name).parent.mkdir(parents=True, exist_ok=True)
        ids_file(summary, name).write_text("\n".join(row_ids(None, f"in/{name}.csv", numbers)) + "\n")


def shard_labels(test_dir: Path) -> dict[str, list[int]]:
    """Each test shard's labels, in the order Evaluate pairs the shards (by relative name)."""
    from containerlib.recordio import read

    labels = {}
    for name in sorted(SHARD_NAMES):
        with (test_dir / name).open("rb") as handle:
            labels[name] = read(handle)[1].astype(int).tolist()
    return labels


def test_each_prediction_is_written_with_its_row_id_and_the_rows_fingerprinted(tmp_path: Path) -> None:
    predictions_dir, test_dir, output_dir, labels = binary_inputs(tmp_path)
    by_shard = shard_labels(test_dir)
    rows = {name: [3 * index + 2 for index in range(len(shard))] for name, shard in by_shard.items()}
    write_ids(tmp_path / "summary", test_dir, rows)
    report = evaluate(predictions_dir, test_dir, output_dir, "binary_classifier", summary_dir=tmp_path / "summary")
    lines = [json.loads(line) for line in (output_dir / "predictions.jsonl").read_text().splitlines()]
    assert [(line["file"], line["row"]) for line in lines] == [
        (f"in/{name}.csv", row) for name in by_shard for row in rows[name]
    ]
    assert [line["label"] for line in lines] == [label for shard in by_shard.values() for label in shard]
    fingerprint = RowsFingerprint()
    for name in reversed(SHARD_NAMES):  # any order: the same fingerprint
        for line in reversed(row_ids(None, f"in/{name}.csv", rows[name])):
            fingerprint.add(line)
    assert report["test_rows"]["count"] == len(labels)
    assert report["test_rows"]["fingerprint"] == fingerprint.as_dict()["fingerprint"]


def test_ids_that_run_short_fail_and_leave_no_predictions_file(tmp_path: Path) -> None:
    predictions_dir, test_dir, output_dir, _ = binary_inputs(tmp_path)
    short = {name: list(range(1, len(shard))) for name, shard in shard_labels(test_dir).items()}  # one id short
    write_ids(tmp_path / "summary", test_dir, short)
    with pytest.raises(RowIdsError, match=r"ends after fewer ids than test shard"):
        evaluate(predictions_dir, test_dir, output_dir, "binary_classifier", summary_dir=tmp_path / "summary")
    assert not [path for path in output_dir.rglob("*") if path.is_file()]


def test_without_ids_there_is_no_predictions_file_and_no_fingerprint(tmp_path: Path) -> None:
    predictions_dir, test_dir, output_dir, _ = binary_inputs(tmp_path)
    report = evaluate(predictions_dir, test_dir, output_dir, "binary_classifier")
    assert "test_rows" not in report and not (output_dir / "predictions.jsonl").exists()


def test_coefficients_are_named_ranked_by_standardised_weight_and_framed() -> None:
    model = LinearModel("binary_classifier", "logistic", np.array([[0.5], [-2.0], [0.1]], dtype=np.float32),
                        np.array([0.25], dtype=np.float32))  # fmt: skip
    features = np.array([[0.0, 1.0, 100.0], [10.0, 1.5, 300.0], [20.0, 1.0, 200.0]])
    scale = feature_scale(features)
    section = coefficients_section(model, ["age", "colour#3", "income"], scale, 3)
    assert [item["feature"] for item in section["features"]] == ["income", "age", "colour#3"]  # 8.2 > 4.1 > 0.47
    assert section["features"][0]["standardised_weight"] == pytest.approx(0.1 * np.std([100.0, 300.0, 200.0]), 1e-6)
    assert section["bias"] == 0.25
    frame = coefficients_frame({"coefficients": section})
    assert list(frame.columns) == ["feature", "weight", "standard_deviation", "standardised_weight"]
    assert frame.feature.tolist() == ["income", "age", "colour#3", "(bias)"]


def test_multiclass_coefficients_list_a_weight_per_class_and_unnamed_features_get_positions() -> None:
    weights = np.array([[1.0, -1.0, 0.0], [0.0, 0.0, 3.0]], dtype=np.float32)
    model = LinearModel("multiclass_classifier", "softmax_loss", weights, np.zeros(3, dtype=np.float32))
    section = coefficients_section(model, ["only one name"], None, None)
    assert section["ranked_by"] == "weight"
    assert section["features"][0] == {"feature": "feature_1", "weight": [0.0, 0.0, 3.0]}
    frame = coefficients_frame({"coefficients": section})
    assert {"weight_0", "weight_1", "weight_2"} <= set(frame.columns)
