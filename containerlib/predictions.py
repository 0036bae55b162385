"""Batch-transform predictions paired with the test split's labels: what Evaluate scores, and what the Python API
shows as an execution's predictions (``pipeline/execution.py``), read the same way.

For every RecordIO-protobuf test shard ``F`` under the test folder (recursively, hidden files skipped), the batch
transform wrote ``F.out`` under the predictions folder: jsonlines, one object per record, in order (``score``, and
``predicted_label`` for classifiers). The counts must match file by file; values are checked against the predictor
type's output format. Bad input is a :class:`PredictionsError` naming the file, the line or record, and what was
expected.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from containerlib.errors import InputError
from containerlib.names import BINARY_CLASSIFIER, MULTICLASS_CLASSIFIER, PREDICTIONS_SUFFIX, REGRESSOR
from containerlib.recordio import read as read_recordio

# Linear Learner's binary classifier emits a probability as "score", except with hinge loss: a margin (any real number).
MARGIN_LOSSES = ("hinge_loss",)


class PredictionsError(InputError):
    """Predictions or test shards that cannot be paired and read: the message names the file, the record and what
    was expected."""


@dataclass(frozen=True)
class Scored:
    """All test records in shard order: labels, scores (probabilities, margins or values), predicted labels."""

    labels: np.ndarray
    scores: np.ndarray  # (n,) binary probability or margin, or regression value; (n, k) multiclass probabilities
    predicted_labels: np.ndarray | None  # None for regression
    file_count: int
    score_kind: str = "probability"  # "margin" for a hinge-loss binary classifier, "value" for regression


def find_test_shards(test_dir: Path) -> list[Path]:
    """Every test shard under ``test_dir`` (recursively, hidden files skipped), by relative name."""
    if not test_dir.is_dir():
        raise PredictionsError(f"test dir {test_dir} does not exist or is not a directory")
    shards = sorted(
        path
        for path in test_dir.rglob("*")
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(test_dir).parts)
    )
    if not shards:
        raise PredictionsError(f"test dir {test_dir} holds no test shards")
    return shards


def read_labels(shard: Path) -> np.ndarray:
    """The labels of one RecordIO-protobuf test shard, float64."""
    try:
        with shard.open("rb") as fileobj:
            _, labels = read_recordio(fileobj)
    except Exception as error:  # the codec's own message says which record and why
        raise PredictionsError(f"test shard {shard}: cannot read RecordIO-protobuf: {error}") from error
    if labels is None:
        raise PredictionsError(f"test shard {shard}: records carry no labels; evaluation needs labelled test data")
    labels = np.asarray(labels, dtype=np.float64).reshape(-1)
    bad = np.flatnonzero(~np.isfinite(labels))
    if bad.size:
        raise PredictionsError(
            f"test shard {shard}: record {bad[0]}: label is {labels[bad[0]]}, expected a finite number"
        )
    return labels


def read_prediction_lines(out_file: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, JSON object) for each non-blank line of a batch-transform ``.out`` file."""
    with out_file.open("r", encoding="utf-8") as lines:
        for line_number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise PredictionsError(f"{out_file}: line {line_number}: not valid JSON ({error.msg})") from error
            if not isinstance(record, dict) or "score" not in record:
                raise PredictionsError(f"{out_file}: line {line_number}: expected an object with a 'score' field")
            yield line_number, record


def _number(value: Any, out_file: Path, line_number: int, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PredictionsError(f"{out_file}: line {line_number}: '{field}' is {value!r}, expected a finite number")
    return float(value)


def _class_index(value: Any, classes: int, out_file: Path, line_number: int) -> int:
    number = _number(value, out_file, line_number, "predicted_label")
    if number != int(number) or not 0 <= number < classes:
        raise PredictionsError(
            f"{out_file}: line {line_number}: 'predicted_label' is {value!r}, expected an integer in [0, {classes})"
        )
    return int(number)


def score_kind(predictor_type: str, loss: str) -> str:
    """What the predictions' ``score`` is: a probability, a margin (hinge loss) or a regression value."""
    if predictor_type == REGRESSOR:
        return "value"
    return "margin" if predictor_type == BINARY_CLASSIFIER and loss in MARGIN_LOSSES else "probability"


def read_predictions(
    out_file: Path, predictor_type: str, kind: str = "probability"
) -> tuple[np.ndarray, np.ndarray | None]:
    """Scores and predicted labels of one ``.out`` file, validated against the predictor type's output format;
    a binary ``score`` is a probability in [0, 1] unless ``kind`` is ``margin`` (any finite number)."""
    scores: list[Any] = []
    predicted: list[int] = []
    classes: int | None = None
    for line_number, record in read_prediction_lines(out_file):
        score = record["score"]
        if predictor_type == REGRESSOR:
            scores.append(_number(score, out_file, line_number, "score"))
            continue
        if "predicted_label" not in record:
            raise PredictionsError(f"{out_file}: line {line_number}: expected a 'predicted_label' field")
        if predictor_type == BINARY_CLASSIFIER:
            value = _number(score, out_file, line_number, "score")
            if kind != "margin" and not 0.0 <= value <= 1.0:
                raise PredictionsError(
                    f"{out_file}: line {line_number}: 'score' is {score!r}, expected a probability "
                    f"(a margin only with --loss (pipeline parameter Loss) {' or '.join(MARGIN_LOSSES)})"
                )
            scores.append(value)
            predicted.append(_class_index(record["predicted_label"], 2, out_file, line_number))
        else:
            if not isinstance(score, list) or len(score) < 2:
                raise PredictionsError(
                    f"{out_file}: line {line_number}: 'score' is {score!r}, expected a list of class probabilities"
                )
            if classes is None:
                classes = len(score)
            elif len(score) != classes:
                raise PredictionsError(
                    f"{out_file}: line {line_number}: 'score' has {len(score)} classes, earlier lines have {classes}"
                )
            scores.append([_number(value, out_file, line_number, "score") for value in score])
            predicted.append(_class_index(record["predicted_label"], classes, out_file, line_number))
    if predictor_type == REGRESSOR:
        return np.asarray(scores, dtype=np.float64), None
    return np.asarray(scores, dtype=np.float64), np.asarray(predicted, dtype=np.int64)


def load_scored(predictions_dir: Path, test_dir: Path, predictor_type: str, loss: str = "auto") -> Scored:
    """Pairs every test shard with its ``.out`` file and checks they describe the same records, file by file."""
    kind = score_kind(predictor_type, loss)
    if not predictions_dir.is_dir():
        raise PredictionsError(f"predictions dir {predictions_dir} does not exist or is not a directory")
    shards = find_test_shards(test_dir)
    expected_outputs = {shard.relative_to(test_dir).as_posix() + PREDICTIONS_SUFFIX for shard in shards}
    unexpected = sorted(
        path.relative_to(predictions_dir).as_posix()
        for path in predictions_dir.rglob(f"*{PREDICTIONS_SUFFIX}")
        if path.is_file() and path.relative_to(predictions_dir).as_posix() not in expected_outputs
    )
    if unexpected:
        raise PredictionsError(
            f"predictions dir {predictions_dir}: {unexpected[0]} has no matching test shard under {test_dir}"
        )
    labels, scores, predicted = [], [], []
    for shard in shards:
        relative = shard.relative_to(test_dir).as_posix()
        out_file = predictions_dir / (relative + PREDICTIONS_SUFFIX)
        if not out_file.is_file():
            raise PredictionsError(f"missing predictions for test shard {relative}: expected {out_file}")
        shard_labels = read_labels(shard)
        shard_scores, shard_predicted = read_predictions(out_file, predictor_type, kind)
        if len(shard_scores) != len(shard_labels):
            raise PredictionsError(
                f"{out_file} holds {len(shard_scores)} predictions but test shard {relative} holds "
                f"{len(shard_labels)} records: the counts must match"
            )
        if predictor_type != REGRESSOR and shard_scores.size:
            classes = 2 if predictor_type == BINARY_CLASSIFIER else shard_scores.shape[1]
            check_class_labels(shard_labels, classes, shard)
        labels.append(shard_labels)
        scores.append(shard_scores)
        if shard_predicted is not None:
            predicted.append(shard_predicted)
    all_labels = np.concatenate(labels)
    if all_labels.size == 0:
        raise PredictionsError(f"test dir {test_dir}: the test shards hold no records")
    non_empty_scores = [block for block in scores if block.size]
    if predictor_type == MULTICLASS_CLASSIFIER:
        widths = {block.shape[1] for block in non_empty_scores}
        if len(widths) > 1:
            raise PredictionsError(f"{predictions_dir}: .out files disagree on the number of classes: {sorted(widths)}")
    all_scores = np.concatenate(non_empty_scores)
    all_predicted = np.concatenate(predicted) if predictor_type != REGRESSOR else None
    return Scored(all_labels, all_scores, all_predicted, len(shards), kind)


def check_class_labels(labels: np.ndarray, classes: int, shard: Path) -> None:
    """Classifier labels must be class indices the predictions can name."""
    bad = np.flatnonzero((labels != np.round(labels)) | (labels < 0) | (labels >= classes))
    if bad.size:
        raise PredictionsError(
            f"test shard {shard}: record {bad[0]}: label {labels[bad[0]]} is not a class index in [0, {classes})"
        )


def read_test_features(test_dir: Path) -> Any:
    """The features of every test shard in the order ``load_scored`` reads labels: dense array or CSR matrix (to
    score another model, e.g. the champion, on the same records)."""
    blocks = []
    for shard in find_test_shards(test_dir):
        try:
            with shard.open("rb") as fileobj:
                features, _ = read_recordio(fileobj)
        except Exception as error:
            raise PredictionsError(f"test shard {shard}: cannot read RecordIO-protobuf: {error}") from error
        if features.shape[0]:
            blocks.append(features)
    if not blocks:
        raise PredictionsError(f"test dir {test_dir}: the test shards hold no records")
    if all(isinstance(block, np.ndarray) for block in blocks):
        return np.concatenate(blocks)
    from scipy import sparse

    return sparse.vstack([sparse.csr_matrix(block) for block in blocks], format="csr")
