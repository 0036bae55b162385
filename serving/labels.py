"""Linear Learner's answers with the label values: each prediction gains ``label`` (``label_values[predicted_label]``,
or the number itself when the labels were numbers); ``score`` and ``predicted_label`` stay as Linear Learner gave
them, so clients of the bare algorithm keep working."""

from __future__ import annotations

from typing import Any

from containerlib.content_types import JSON, JSONLINES, RESPONSE_TYPES, media_type
from containerlib.linear_learner.responses import (
    PREDICTED_LABEL,
    ResponseError,
    parse_response_body,
    response_body,
)
from serving import RequestError
from serving.model import ServingSpec


def label_of(predicted_label: Any, spec: ServingSpec) -> Any:
    """The label value of one predicted label."""
    if spec.label_values is None:
        return predicted_label
    return spec.label_values[int(predicted_label)]


def with_labels(predictions: list[dict[str, Any]], spec: ServingSpec) -> list[dict[str, Any]]:
    """Each prediction with its ``label`` (regressors' predictions have none and are returned as they are)."""
    if spec.predictor_type == "regressor":
        return predictions
    return [{**item, "label": label_of(item[PREDICTED_LABEL], spec)} for item in predictions]


def parse_predictions(body: bytes, content_type: str) -> list[dict[str, Any]]:
    """Linear Learner's response body (``{"predictions": [...]}`` or JSON Lines) as its prediction objects."""
    if media_type(content_type) not in RESPONSE_TYPES:
        raise RequestError(f"the labels container reads {JSON} or {JSONLINES}, not {content_type!r}", 415)
    try:
        return parse_response_body(body, content_type)
    except (ResponseError, ValueError) as error:  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise RequestError(f"Linear Learner's response cannot be read: {error}") from None


def render(predictions: list[dict[str, Any]], accept: str) -> tuple[bytes, str]:
    """Predictions in Linear Learner's response shape for ``accept``: JSON ``{"predictions": [...]}`` or JSON
    Lines, one object per line."""
    body = response_body(predictions, accept)
    if body is None:
        raise RequestError(f"accept type {accept!r} is not one of {list(RESPONSE_TYPES)}", 406)
    return body
