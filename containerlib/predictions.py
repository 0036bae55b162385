"""Batch-transform predictions paired with the test split's labels: what Evaluate scores, and what the Python API
shows as an execution's predictions (``pipeline/execution.py``), read the same way.

For every RecordIO-protobuf test shard ``F`` under the test folder (recursively, hidden files skipped), the batch
transform wrote ``F.out`` under the predictions folder: jsonlines, one object per record, in order (``score``, and
``predicted_label`` for classifiers). The counts must match file by file; values are checked against the predictor
type's output format. Bad input is a :class:`PredictionsError` naming the file, the line or record, and what was
expected.

Evaluate streams them (:func:`iter_scored`: shard by shard, ``DEFAULT_CHUNK_RECORDS`` records decoded and lines
parsed at a time, so memory holds one chunk whatever the split's size); the Python API reads them whole
(:func:`load_scored`), and the baseline and the champion score the test features chunk by chunk
(:func:`iter_test_batches`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from containerlib.errors import InputError
from containerlib.linear_learner.responses import MARGIN_LOSSES, ResponseError, parse_response, response_object
from containerlib.names import BINARY_CLASSIFIER, MULTICLASS_CLASSIFIER, PREDICTIONS_SUFFIX, REGRESSOR
from containerlib.recordio import iter_batches


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


DEFAULT_CHUNK_RECORDS = 1 << 16  # records decoded, parsed and scored at a time: memory holds one chunk, not a split


@dataclass(frozen=True)
class ScoredChunk:
    """Consecutive test records of one shard: labels (float32, as RecordIO stores them), scores (float64: ``(n,)``,
    or ``(n, k)`` multiclass probabilities), predicted labels (int64; None for regression)."""

    labels: np.ndarray
    scores: np.ndarray
    predicted_labels: np.ndarray | None
    shard: str = ""  # the test shard the records are from, relative to the test folder (as in Pairing)


@dataclass(frozen=True)
class Pairing:
    """Every test shard (by relative name) and the ``.out`` file the batch transform wrote for it, checked to exist."""

    shards: list[tuple[Path, str, Path]]  # (test shard, its name relative to the test dir, its .out file)
    test_dir: Path
    predictions_dir: Path


def pair_predictions(predictions_dir: Path, test_dir: Path) -> Pairing:
    """Pairs every test shard with its ``.out`` file: no prediction file without a shard, no shard without one."""
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
    pairs = []
    for shard in shards:
        relative = shard.relative_to(test_dir).as_posix()
        out_file = predictions_dir / (relative + PREDICTIONS_SUFFIX)
        if not out_file.is_file():
            raise PredictionsError(f"missing predictions for test shard {relative}: expected {out_file}")
        pairs.append((shard, relative, out_file))
    return Pairing(pairs, test_dir, predictions_dir)


def iter_test_batches(shard: Path, chunk_records: int = DEFAULT_CHUNK_RECORDS) -> Iterator[tuple[int, Any, np.ndarray]]:
    """(index of the first record, features, float32 labels) of one RecordIO-protobuf test shard, ``chunk_records``
    at a time; labels checked present and finite (the message names the shard and the record)."""
    first = 0
    try:
        with shard.open("rb") as fileobj:
            batches = iter_batches(fileobj, chunk_records)
            while True:
                try:
                    features, labels = next(batches)
                except StopIteration:
                    return
                except Exception as error:  # the codec's own message says which record and why
                    raise PredictionsError(f"test shard {shard}: cannot read RecordIO-protobuf: {error}") from error
                if labels is None:
                    raise PredictionsError(
                        f"test shard {shard}: records carry no labels; evaluation needs labelled test data"
                    )
                labels = np.asarray(labels, dtype=np.float32).reshape(-1)
                bad = np.flatnonzero(~np.isfinite(labels))
                if bad.size:
                    raise PredictionsError(
                        f"test shard {shard}: record {first + bad[0]}: label is {labels[bad[0]]}, expected a finite "
                        "number"
                    )
                yield first, features, labels
                first += len(labels)
    except OSError as error:
        raise PredictionsError(f"test shard {shard}: cannot read it ({error.strerror or error})") from error


def read_prediction_lines(out_file: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, response object) for each non-blank line of a batch-transform ``.out`` file."""
    with out_file.open("r", encoding="utf-8") as lines:
        for line_number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = response_object(line)
            except ResponseError as error:
                raise PredictionsError(f"{out_file}: line {line_number}: {error}") from error
            yield line_number, record


def score_kind(predictor_type: str, loss: str) -> str:
    """What the predictions' ``score`` is: a probability, a margin (hinge loss) or a regression value."""
    if predictor_type == REGRESSOR:
        return "value"
    return "margin" if predictor_type == BINARY_CLASSIFIER and loss in MARGIN_LOSSES else "probability"


class PredictionReader:
    """One ``.out`` file read a chunk at a time, each line validated against the predictor type's output format;
    a binary ``score`` is a probability in [0, 1] unless ``kind`` is ``margin`` (any finite number)."""

    def __init__(self, out_file: Path, predictor_type: str, kind: str, classes: int | None = None) -> None:
        self.out_file, self.predictor_type, self.margin = out_file, predictor_type, kind == "margin"
        self.classes = classes  # multiclass: the number of classes every line's score must have
        self.lines = read_prediction_lines(out_file)
        self.count = 0  # predictions read

    def take(self, count: int) -> tuple[np.ndarray, np.ndarray | None]:
        """The next ``count`` predictions (fewer at the end of the file): scores float64, predicted labels int64."""
        scores: list[Any] = []
        predicted: list[int] = []
        for line_number, record in itertools.islice(self.lines, count):
            try:
                score, label = parse_response(record, self.predictor_type, margin=self.margin)
            except ResponseError as error:
                raise PredictionsError(f"{self.out_file}: line {line_number}: {error}") from None
            if isinstance(score, list):
                if self.classes is None:
                    self.classes = len(score)
                elif len(score) != self.classes:
                    raise PredictionsError(
                        f"{self.out_file}: line {line_number}: 'score' has {len(score)} classes, earlier lines have "
                        f"{self.classes}"
                    )
            scores.append(score)
            if label is not None:
                predicted.append(label)
        self.count += len(scores)
        width = (0, self.classes or 0) if self.predictor_type == MULTICLASS_CLASSIFIER else (0,)
        values = np.asarray(scores, dtype=np.float64) if scores else np.empty(width)
        if self.predictor_type == REGRESSOR:
            return values, None
        return values, np.asarray(predicted, dtype=np.int64)

    def remaining(self) -> int:
        """How many predictions are left (read through, each line still validated as JSON)."""
        return sum(1 for _ in self.lines)


def iter_scored(
    pairing: Pairing, predictor_type: str, kind: str = "probability", chunk_records: int = DEFAULT_CHUNK_RECORDS
) -> Iterator[ScoredChunk]:
    """The test records with their predictions, shard by shard in order, ``chunk_records`` at a time: memory holds
    one chunk. The counts must match file by file; classifier labels must be class indices the predictions name."""
    classes: int | None = None
    total = 0
    for shard, relative, out_file in pairing.shards:
        reader = PredictionReader(out_file, predictor_type, kind)
        records = 0
        for first, _, labels in iter_test_batches(shard, chunk_records):
            records = first + len(labels)
            scores, predicted = reader.take(len(labels))
            if len(scores) < len(labels):
                records = sum(len(more) for _, _, more in iter_test_batches(shard, chunk_records))
                _count_mismatch(out_file, reader.count, relative, records)
            if classes is not None and reader.classes is not None and reader.classes != classes:
                widths = sorted({classes, reader.classes})
                raise PredictionsError(
                    f"{pairing.predictions_dir}: .out files disagree on the number of classes: {widths}"
                )
            classes = reader.classes if reader.classes is not None else classes
            if predictor_type != REGRESSOR and scores.size:
                check_class_labels(labels, 2 if predictor_type == BINARY_CLASSIFIER else scores.shape[1], shard, first)
            yield ScoredChunk(labels, scores, predicted, relative)
        if reader.count == records and (extra := reader.remaining()):
            _count_mismatch(out_file, reader.count + extra, relative, records)
        total += records
    if total == 0:
        raise PredictionsError(f"test dir {pairing.test_dir}: the test shards hold no records")


def _count_mismatch(out_file: Path, predictions: int, relative: str, records: int) -> None:
    raise PredictionsError(
        f"{out_file} holds {predictions} predictions but test shard {relative} holds {records} records: the counts "
        "must match"
    )


def load_scored(predictions_dir: Path, test_dir: Path, predictor_type: str, loss: str = "auto") -> Scored:
    """Every test record with its prediction, whole (the Python API's view; Evaluate streams :func:`iter_scored`)."""
    kind = score_kind(predictor_type, loss)
    pairing = pair_predictions(predictions_dir, test_dir)
    chunks = list(iter_scored(pairing, predictor_type, kind))
    labels = np.concatenate([chunk.labels for chunk in chunks]).astype(np.float64)
    scores = np.concatenate([chunk.scores for chunk in chunks if chunk.scores.size])
    predicted = None
    if predictor_type != REGRESSOR:
        predicted = np.concatenate([chunk.predicted_labels for chunk in chunks])  # type: ignore[misc]
    return Scored(labels, scores, predicted, len(pairing.shards), kind)


def check_class_labels(labels: np.ndarray, classes: int, shard: Path, first: int = 0) -> None:
    """Classifier labels must be class indices the predictions can name (``first``: the index of labels[0])."""
    bad = np.flatnonzero((labels != np.round(labels)) | (labels < 0) | (labels >= classes))
    if bad.size:
        raise PredictionsError(
            f"test shard {shard}: record {first + bad[0]}: label {labels[bad[0]]} is not a class index in "
            f"[0, {classes})"
        )
