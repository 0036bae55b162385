"""Linear Learner's response objects, built and read back in one place: batch transform's ``.out`` lines, the local
endpoint's answers, the labels container's reading of them, Evaluate's and the smoke test's reading of them.

One record's response, per predictor type: binary ``{"score": p, "predicted_label": 0|1}``, multiclass
``{"score": [p0, ..], "predicted_label": k}``, regressor ``{"score": y}``; scores are the float32 values as Python
floats, so the JSON of a response is the same whoever writes it. A response body is JSON
``{"predictions": [...]}`` or JSON Lines, one object per line (:mod:`containerlib.content_types`).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from containerlib.content_types import JSON, JSONLINES, RESPONSE_TYPES, media_type, response_type
from containerlib.names import BINARY_CLASSIFIER, MULTICLASS_CLASSIFIER, REGRESSOR

SCORE = "score"
PREDICTED_LABEL = "predicted_label"
PREDICTIONS = "predictions"  # the JSON response body's list of response objects
# llpipe's served answers only: on a row with values outside a one-hot column's vocabulary, {column: value} (encoded
# as column=(other)); Linear Learner's own responses never carry it
UNSEEN_CATEGORIES = "unseen_categories"
# a binary classifier's score is a margin (any real number) with these losses, else a probability
MARGIN_LOSSES = ("hinge_loss",)


class ResponseError(ValueError):
    """A response object or body that is not Linear Learner's: the message says which field and what was expected
    (the caller adds where it was read)."""


def responses(predictor_type: str, score: np.ndarray, label: np.ndarray | None) -> list[dict[str, Any]]:
    """The response objects of scored records (``LinearModel.predict``'s score and predicted label)."""
    scores = score.tolist()
    if predictor_type == REGRESSOR:
        return [{SCORE: s} for s in scores]
    assert label is not None, "a classifier's predictions carry predicted labels"
    return [{SCORE: s, PREDICTED_LABEL: k} for s, k in zip(scores, label.tolist())]  # noqa: B905 - Python 3.9


def response_lines(predictor_type: str, score: np.ndarray, label: np.ndarray | None) -> list[str]:
    """The response objects' JSON, one string per record, as ``json.dumps`` writes them (``repr`` of a finite
    float is its JSON and round-trips exactly; formatting beats ``json.dumps`` per record). A non-finite score is an
    error: JSON has no such number."""
    if not np.all(np.isfinite(score)):
        raise ResponseError("the model produced a non-finite score; its weights or the input overflow float range")
    if predictor_type == REGRESSOR:
        return [f'{{"{SCORE}": {s!r}}}' for s in score.tolist()]
    assert label is not None, "a classifier's predictions carry predicted labels"
    pairs = zip(score.tolist(), label.tolist())  # noqa: B905 - Python 3.9 has no strict=; one label per score
    if predictor_type == MULTICLASS_CLASSIFIER:
        return [f'{{"{SCORE}": [{", ".join(map(repr, row))}], "{PREDICTED_LABEL}": {k}}}' for row, k in pairs]
    return [f'{{"{SCORE}": {s!r}, "{PREDICTED_LABEL}": {k}}}' for s, k in pairs]


def response_object(line: str) -> dict[str, Any]:
    """One JSON Lines response: an object with a ``score`` field."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise ResponseError(f"not valid JSON ({error.msg})") from None
    if not isinstance(record, dict) or SCORE not in record:
        raise ResponseError(f"expected an object with a '{SCORE}' field")
    return record


def parse_response(
    record: dict[str, Any], predictor_type: str, margin: bool = False
) -> tuple[float | list[float], int | None]:
    """(score, predicted label) of one response object, checked against the predictor type's form: a binary score
    is a probability in [0, 1] unless ``margin``; a multiclass score a list of at least 2 numbers; predicted labels
    integers in [0, number of classes)."""
    score = record.get(SCORE)
    if predictor_type == REGRESSOR:
        return _number(score, SCORE), None
    if PREDICTED_LABEL not in record:
        raise ResponseError(f"expected a '{PREDICTED_LABEL}' field")
    if predictor_type == BINARY_CLASSIFIER:
        value = _number(score, SCORE)
        if not margin and not 0.0 <= value <= 1.0:
            raise ResponseError(
                f"'{SCORE}' is {score!r}, expected a probability "
                f"(a margin only with --loss (pipeline parameter Loss) {' or '.join(MARGIN_LOSSES)})"
            )
        return value, _class_index(record[PREDICTED_LABEL], 2)
    if not isinstance(score, list) or len(score) < 2:
        raise ResponseError(f"'{SCORE}' is {score!r}, expected a list of class probabilities")
    return [_number(value, SCORE) for value in score], _class_index(record[PREDICTED_LABEL], len(score))


def response_body(items: list[dict[str, Any]], accept: str | None) -> tuple[bytes, str] | None:
    """Response objects as the body ``accept`` asks for and its content type: JSON ``{"predictions": [...]}`` (no
    Accept, ``*/*``) or JSON Lines; None when ``accept`` names neither."""
    kind = response_type(accept)
    if kind == JSON:
        return json.dumps({PREDICTIONS: items}).encode(), JSON
    if kind == JSONLINES:
        return "".join(json.dumps(item) + "\n" for item in items).encode(), JSONLINES
    return None


def parse_response_body(body: bytes, content_type: str) -> list[dict[str, Any]]:
    """The response objects of a body of ``content_type`` (JSON ``{"predictions": [...]}`` or JSON Lines)."""
    kind = media_type(content_type)
    if kind not in RESPONSE_TYPES:
        raise ResponseError(f"a response is {JSON} or {JSONLINES}, not {content_type!r}")
    text = body.decode("utf-8")
    if kind == JSON:
        document = json.loads(text)
        if not isinstance(document, dict) or not isinstance(document.get(PREDICTIONS), list):
            raise ResponseError(f'an {JSON} response is {{"{PREDICTIONS}": [objects]}}')
        return list(document[PREDICTIONS])
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _number(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ResponseError(f"'{field}' is {value!r}, expected a finite number")
    return float(value)


def _class_index(value: Any, classes: int) -> int:
    number = _number(value, PREDICTED_LABEL)
    if number != int(number) or not 0 <= number < classes:
        raise ResponseError(f"'{PREDICTED_LABEL}' is {value!r}, expected an integer in [0, {classes})")
    return int(number)
