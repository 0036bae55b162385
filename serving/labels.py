"""Linear Learner's answers with the label values: each prediction gains ``label`` (``label_values[predicted_label]``,
or the number itself when the labels were numbers); ``score`` and ``predicted_label`` stay as Linear Learner gave
them, so clients of the bare algorithm keep working."""

from __future__ import annotations

import json
from typing import Any

from serving import RequestError
from serving.model import ServingSpec
from serving.requests import JSON, JSONLINES, media_type


def label_of(predicted_label: Any, spec: ServingSpec) -> Any:
    """The label value of one predicted label."""
    if spec.label_values is None:
        return predicted_label
    return spec.label_values[int(predicted_label)]


def with_labels(predictions: list[dict[str, Any]], spec: ServingSpec) -> list[dict[str, Any]]:
    """Each prediction with its ``label`` (regressors' predictions have none and are returned as they are)."""
    if spec.predictor_type == "regressor":
        return predictions
    return [{**item, "label": label_of(item["predicted_label"], spec)} for item in predictions]


def parse_predictions(body: bytes, content_type: str) -> list[dict[str, Any]]:
    """Linear Learner's response body (``{"predictions": [...]}`` or JSON Lines) as its prediction objects."""
    kind = media_type(content_type)
    text = body.decode("utf-8")
    if kind == JSON:
        return list(json.loads(text)["predictions"])
    if kind == JSONLINES:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    raise RequestError(f"the labels container reads {JSON} or {JSONLINES}, not {content_type!r}", 415)


def render(predictions: list[dict[str, Any]], accept: str) -> tuple[bytes, str]:
    """Predictions in Linear Learner's response shape for ``accept``: JSON ``{"predictions": [...]}`` or JSON
    Lines, one object per line."""
    kind = media_type(accept or JSON)
    if kind in (JSON, "*/*"):
        return json.dumps({"predictions": predictions}).encode(), JSON
    if kind == JSONLINES:
        return "".join(json.dumps(item) + "\n" for item in predictions).encode(), JSONLINES
    raise RequestError(f"accept type {accept!r} is not one of {[JSON, JSONLINES]}", 406)
