"""The smoke test of a deployed version, backend-neutral: rows of its execution's test split, the answers batch
transform gave for them, and the checks of an endpoint's answers against those and against the live version's.

A :class:`SmokeCase` is built from pairs of a RecordIO-protobuf test shard and its batch-transform ``.out`` file
(jsonlines, one object per record, in order), as the pipeline's Transform step wrote them: the first records of the
shards in key order, sent as one ``application/x-recordio-protobuf`` request (the format batch transform read), with
the matching ``.out`` lines as the expected answers and the records' labels for the quality check. The checks:

- **consistency** (:func:`compare_answers`): the endpoint answers what batch transform answered for the same rows:
  the same predicted labels (a label name is accepted for index ``k`` when the case knows the label values), scores
  within a relative tolerance. A failure means the endpoint does not serve the registered model as it was tested.
- **quality** (:func:`quality`): the version's gate-like metric on the rows (binary: AUC of the scores; multiclass:
  accuracy of the highest score; regression: r2), computed from scores only, so answers that name labels and answers
  that number them score alike. The deploy flow compares the candidate's batch-transform answers with what the live
  version answers for the same rows (a paired comparison) before anything changes.
"""

from __future__ import annotations

import io
import json
import math
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from containerlib.linear_learner.responses import PREDICTIONS, ResponseError, response_object
from containerlib.recordio import MAGIC
from pipeline.core.names import JSONLINES, RECORDIO

MAX_BODY_BYTES = 5 * 1024 * 1024  # below InvokeEndpoint's 6 MB payload limit
SCORE_TOLERANCE = 1e-5  # relative: the same model answers the same float32 bits; JSON may print them differently
_LENGTH_MASK = (1 << 29) - 1


class SmokeError(ValueError):
    """Test rows or answers that cannot be read or paired: the message names the file or the answer."""


@dataclass(frozen=True)
class SmokeCase:
    """One request of test rows and what the version must answer for them."""

    body: bytes
    content_type: str
    accept: str
    expected: tuple[dict[str, Any], ...]  # batch transform's answers, one per row
    labels: tuple[float, ...]  # the rows' true labels (0..K-1 for classifiers, values for regression)
    sources: tuple[str, ...]  # the shards the rows came from
    label_values: tuple[str, ...] | None = None  # names of classes 0..K-1 when answers may name them

    @property
    def rows(self) -> int:
        return len(self.expected)


@dataclass(frozen=True)
class Consistency:
    """The endpoint's answers against batch transform's for the same rows."""

    rows: int
    mismatches: tuple[str, ...]  # the first few, each naming the row
    mismatch_count: int
    max_score_difference: float

    @property
    def passed(self) -> bool:
        return self.rows > 0 and self.mismatch_count == 0


@dataclass(frozen=True)
class QualityCheck:
    """The candidate's metric on the rows against the live version's on the same rows."""

    metric: str
    candidate: float
    live: float
    tolerance: float
    live_package_arn: str

    @property
    def passed(self) -> bool:
        return self.candidate >= self.live - self.tolerance


@dataclass(frozen=True)
class SmokeResult:
    """What the smoke test found: the quality comparison (None when nothing was live or it could not be made), the
    consistency of the new endpoint (None when it was never reached), and notes (why a check was not made)."""

    rows: int
    quality: QualityCheck | None = None
    consistency: Consistency | None = None
    error: str | None = None  # the endpoint could not be invoked: its error
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def passed(self) -> bool:
        quality_ok = self.quality is None or self.quality.passed
        return self.error is None and quality_ok and self.consistency is not None and self.consistency.passed

    def summary(self) -> str:
        """One line: what passed or failed, and why."""
        parts = [f"{self.rows} test rows"]
        if self.quality is not None:
            q = self.quality
            verdict = "ok" if q.passed else "WORSE"
            parts.append(f"{q.metric} {q.candidate:.4f} vs live {q.live:.4f} (tolerance {q.tolerance:g}): {verdict}")
        if self.error:
            parts.append(f"invocation failed: {self.error}")
        elif self.consistency is not None:
            c = self.consistency
            if c.passed:
                parts.append(f"answers equal batch transform's (largest score difference {c.max_score_difference:.2g})")
            else:
                parts.append(f"{c.mismatch_count} answer(s) differ from batch transform's: {'; '.join(c.mismatches)}")
        parts.extend(self.notes)
        return "; ".join(parts)


def take_records(data: bytes, count: int, name: str = "shard") -> tuple[bytes, int]:
    """The bytes of the first ``count`` whole records of a RecordIO stream (split records kept whole) and how
    many there were; stops early rather than pass :data:`MAX_BODY_BYTES`."""
    position = taken = 0
    end = 0
    while taken < count and position < len(data):
        start = position
        while True:  # one logical record: a whole frame (flag 0) or first, middle..., last frames (1, 2..., 3)
            if position + 8 > len(data):
                raise SmokeError(f"{name}: truncated RecordIO frame header at byte offset {position}")
            magic, word = struct.unpack_from("<II", data, position)
            if magic != MAGIC:
                raise SmokeError(f"{name}: no RecordIO magic number at byte offset {position}")
            length, flag = word & _LENGTH_MASK, word >> 29
            position += 8 + (length + 3) // 4 * 4
            if position > len(data):
                raise SmokeError(f"{name}: record {taken} at byte offset {start} is truncated")
            if flag in (0, 3):
                break
        if position > MAX_BODY_BYTES and taken:
            break
        taken += 1
        end = position
    return data[:end], taken


def expected_lines(text: bytes, count: int, name: str) -> list[dict[str, Any]]:
    """The first ``count`` answers of a batch-transform ``.out`` file (blank lines skipped)."""
    answers: list[dict[str, Any]] = []
    for number, line in enumerate(text.decode("utf-8", errors="replace").splitlines(), start=1):
        if len(answers) == count:
            break
        if not line.strip():
            continue
        try:
            answers.append(response_object(line))
        except ResponseError as error:
            raise SmokeError(f"{name}: line {number}: {error}") from None
    if len(answers) < count:
        raise SmokeError(f"{name}: {len(answers)} answer(s) for {count} record(s) of its shard")
    return answers


def case_from_shards(
    pairs: Iterable[tuple[str, bytes, str, bytes]], rows: int, label_values: Sequence[str] | None = None
) -> SmokeCase:
    """The first ``rows`` records of (shard name, shard bytes, .out name, .out bytes) pairs, read lazily in order."""
    bodies: list[bytes] = []
    expected: list[dict[str, Any]] = []
    sources: list[str] = []
    size = 0
    for shard_name, shard, out_name, out in pairs:
        body, count = take_records(shard, rows - len(expected), shard_name)
        if size + len(body) > MAX_BODY_BYTES and expected:
            break
        if count:
            bodies.append(body)
            size += len(body)
            expected.extend(expected_lines(out, count, out_name))
            sources.append(shard_name)
        if len(expected) >= rows:
            break
    if not expected:
        raise SmokeError("the execution's test split holds no records to smoke-test with")
    body = b"".join(bodies)
    return SmokeCase(
        body=body,
        content_type=RECORDIO,
        accept=JSONLINES,
        expected=tuple(expected),
        labels=tuple(_labels(body)),
        sources=tuple(sources),
        label_values=tuple(label_values) if label_values else None,
    )


def _labels(body: bytes) -> list[float]:
    from containerlib.recordio import read

    try:
        _, labels = read(io.BytesIO(body))
    except ValueError as error:
        raise SmokeError(f"test records: {error}") from None
    if labels is None:
        raise SmokeError("test records carry no labels")
    return [float(value) for value in labels.reshape(-1)]


def parse_answers(body: bytes) -> list[dict[str, Any]]:
    """Linear Learner's answers: ``{"predictions": [...]}`` (application/json) or one object per line (jsonlines)."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        whole = json.loads(text) if text else None
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and isinstance(whole.get(PREDICTIONS), list):
        answers = whole[PREDICTIONS]
    elif isinstance(whole, dict):
        answers = [whole]
    else:
        answers = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                answers.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise SmokeError(f"answer line {number}: not JSON ({error.msg}): {line[:120]!r}") from None
    if not all(isinstance(answer, dict) and "score" in answer for answer in answers):
        raise SmokeError(f"expected answers with a 'score' field, got {text[:200]!r}")
    return answers


def compare_answers(
    expected: Sequence[dict[str, Any]],
    answered: Sequence[dict[str, Any]],
    label_values: Sequence[str] | None = None,
    tolerance: float = SCORE_TOLERANCE,
    shown: int = 3,
) -> Consistency:
    """Row by row: the same predicted label (index ``k`` or ``label_values[k]``) and scores within ``tolerance``."""
    mismatches: list[str] = []
    if len(answered) != len(expected):
        mismatches.append(f"{len(answered)} answers for {len(expected)} rows")
    largest = 0.0
    for row, (want, got) in enumerate(zip(expected, answered, strict=False)):
        problem, difference = _row_problem(want, got, label_values, tolerance)
        largest = max(largest, difference)
        if problem:
            mismatches.append(f"row {row}: {problem}")
    return Consistency(len(expected), tuple(mismatches[:shown]), len(mismatches), largest)


def _row_problem(
    want: dict[str, Any], got: dict[str, Any], label_values: Sequence[str] | None, tolerance: float
) -> tuple[str | None, float]:
    want_scores, got_scores = _scores(want.get("score")), _scores(got.get("score"))
    if got_scores is None or len(got_scores) != len(want_scores or []):
        return f"score {got.get('score')!r}, expected {want.get('score')!r}", math.inf
    difference = max(abs(a - b) / max(1.0, abs(a)) for a, b in zip(want_scores or [], got_scores, strict=False))
    if difference > tolerance:
        return f"score {got.get('score')!r}, expected {want.get('score')!r}", difference
    if "predicted_label" in want and not _same_label(want["predicted_label"], got.get("predicted_label"), label_values):
        return f"predicted_label {got.get('predicted_label')!r}, expected {want['predicted_label']!r}", difference
    return None, difference


def _scores(value: Any) -> list[float] | None:
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return None
    return [float(v) for v in values]


def _same_label(want: Any, got: Any, label_values: Sequence[str] | None) -> bool:
    if want == got:
        return True
    if isinstance(want, (int, float)) and not isinstance(got, (int, float)) and label_values:
        index = int(want)
        return 0 <= index < len(label_values) and str(got) == label_values[index]
    return False


def quality(answers: Sequence[dict[str, Any]], labels: Sequence[float]) -> tuple[str, float] | None:
    """(metric, value) of answers against the true labels, from scores only; None when the rows cannot measure it
    (one class only, constant labels)."""
    if not answers or len(answers) != len(labels):
        return None
    first = answers[0].get("score")
    scores = [_scores(answer.get("score")) or [math.nan] for answer in answers]
    if isinstance(first, list):  # multiclass: the class of the highest score
        hits = [max(range(len(s)), key=s.__getitem__) == int(y) for s, y in zip(scores, labels, strict=True)]
        return "accuracy", sum(hits) / len(hits)
    values = [s[0] for s in scores]
    if "predicted_label" in answers[0]:
        positives = [v for v, y in zip(values, labels, strict=True) if y == 1]
        negatives = [v for v, y in zip(values, labels, strict=True) if y != 1]
        return ("auc", _auc(positives, negatives)) if positives and negatives else None
    mean = sum(labels) / len(labels)
    total = sum((y - mean) ** 2 for y in labels)
    if total == 0:
        return None
    return "r2", 1.0 - sum((y - v) ** 2 for y, v in zip(labels, values, strict=True)) / total


def _auc(positives: list[float], negatives: list[float]) -> float:
    """The probability a positive outscores a negative, ties counting half (Mann-Whitney U over n+ x n-)."""
    ordered = sorted([(v, 1) for v in positives] + [(v, 0) for v in negatives])
    rank_sum = 0.0
    index = 0
    while index < len(ordered):  # average ranks over ties
        end = index
        while end + 1 < len(ordered) and ordered[end + 1][0] == ordered[index][0]:
            end += 1
        average = (index + end) / 2 + 1
        rank_sum += average * sum(positive for _, positive in ordered[index : end + 1])
        index = end + 1
    n_pos, n_neg = len(positives), len(negatives)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
