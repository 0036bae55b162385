"""The scikit-learn serving container's handler script (``SAGEMAKER_PROGRAM=inference.py``) for both llpipe
containers of the inference pipeline; ``LLPIPE_SERVING_ROLE`` says which this one is:

- ``featurizer`` (first): raw rows (CSV, JSON, JSON Lines) to Linear Learner's RecordIO-protobuf input; a request
  already in RecordIO-protobuf (batch transform of the encoded test split) passes through unchanged.
- ``labels`` (last): Linear Learner's predictions with their ``label`` value added.

The model folder (``/opt/ml/model``) holds the schema and Preprocess summary of the training run.
"""

from __future__ import annotations

import os
from typing import Any

from containerlib.content_types import JSON, RECORDIO, media_type
from containerlib.names import SERVING_LABELS, SERVING_ROLE_VARIABLE, UNSEEN_OTHER, UNSEEN_VARIABLE
from serving import RequestError
from serving.featurizer import request_features, to_recordio
from serving.labels import parse_predictions, render, with_labels
from serving.model import ServingSpec, load_spec


def model_fn(model_dir: str) -> ServingSpec:
    """The model data, with the container's setting for unseen categorical values (other or refuse)."""
    return load_spec(model_dir, os.environ.get(UNSEEN_VARIABLE) or UNSEEN_OTHER)


def input_fn(body: Any, content_type: str) -> Any:
    """The request as the role reads it: raw rows or pass-through (featurizer), predictions (labels)."""
    data = body if isinstance(body, bytes) else str(body).encode("utf-8")
    if os.environ.get(SERVING_ROLE_VARIABLE) == SERVING_LABELS:
        return ("predictions", parse_predictions(data, content_type))
    if media_type(content_type) == RECORDIO:
        return ("encoded", data)
    return ("raw", data, content_type)


def predict_fn(data: Any, spec: ServingSpec) -> Any:
    kind = data[0]
    if kind == "predictions":
        return ("predictions", with_labels(data[1], spec))
    if kind == "encoded":
        return ("encoded", data[1])
    return ("encoded", to_recordio(request_features(data[1], data[2], spec)))


def output_fn(prediction: Any, accept: str) -> tuple[bytes, str]:
    kind, value = prediction
    if kind == "encoded":
        return value, RECORDIO
    return render(value, accept or JSON)


__all__ = ["RequestError", "input_fn", "model_fn", "output_fn", "predict_fn"]
