"""Rows to Linear Learner's input with the encoding Preprocess used (:func:`containerlib.encoding.encode_features`)
and its missing-value policy; the features go on to Linear Learner as RecordIO-protobuf (float32, exact)."""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np
import pandas as pd

from containerlib.content_types import JSON, RECORDIO, media_type
from containerlib.encoding import encode_features
from containerlib.recordio.reader import RecordIOError, read
from containerlib.recordio.writer import write_dense
from serving import RequestError
from serving.model import ServingSpec
from serving.requests import parse_rows


def _bad_number(row: int, column: str, value: Any) -> Exception:
    return RequestError(f"row {row + 1}, column {column!r}: {value!r} is not a number")


def featurize(frame: Any, spec: ServingSpec) -> np.ndarray:
    """float32 features (rows, feature_dim) of a request's rows (:data:`serving.requests.Rows`) or a DataFrame; a
    missing value answers 400 naming row and column unless the model was trained with missing values zeroed
    (MissingValues=zero), as Preprocess treated them."""
    encoded = encode_features(frame, spec.layout, _bad_number)
    if spec.missing_policy != "zero" and encoded.absent.any():
        row, position = (int(index[0]) for index in np.nonzero(encoded.absent))
        column = spec.layout.feature_columns[position]
        value = frame[column].iloc[row] if isinstance(frame, pd.DataFrame) else frame[column][row]
        problem = "has no value" if value is None else f"is {_shown(value)}, not a finite float32"
        raise RequestError(
            f"row {row + 1}, column {column!r} {problem}; the model was trained with "
            f"MissingValues={spec.missing_policy}, so every feature needs a value"
        )
    return np.ascontiguousarray(encoded.features, dtype=np.float32)


def _shown(value: Any) -> str:
    return repr(value.item() if isinstance(value, np.generic) else value)


def request_features(body: bytes, content_type: str, spec: ServingSpec) -> np.ndarray:
    """Any request the inference pipeline takes as float32 features: raw rows (CSV, JSON, JSON Lines) encoded as
    Preprocess did, or rows already encoded (RecordIO-protobuf, Linear Learner's JSON ``{"instances": [{"features":
    [...]}]}``) as they are; the width is checked against the model's features."""
    kind = media_type(content_type)
    if kind == RECORDIO:
        try:
            features, _ = read(io.BytesIO(body))
        except (RecordIOError, ValueError) as error:
            raise RequestError(f"the body is not RecordIO-protobuf: {error}") from None
        if hasattr(features, "toarray"):
            features = features.toarray()
        features = np.asarray(features, dtype=np.float32)
    elif kind == JSON and _is_encoded_json(body, spec):
        features = _encoded_json(body)
    else:
        return featurize(parse_rows(body, content_type, spec), spec)
    if features.ndim != 2 or features.shape[1] != spec.layout.feature_dim:
        raise RequestError(
            f"encoded records have {features.shape[-1] if features.ndim else 0} features; the model takes "
            f"{spec.layout.feature_dim}"
        )
    return features


def _is_encoded_json(body: bytes, spec: ServingSpec) -> bool:
    """Linear Learner's own JSON (records with a ``features`` list) rather than records of named columns."""
    return "features" not in spec.columns and b'"features"' in body[:4096]


def _encoded_json(body: bytes) -> np.ndarray:
    try:
        document = json.loads(body)
        instances = document["instances"] if isinstance(document, dict) else document
        rows = [instance["features"] for instance in instances]
        return np.asarray(rows, dtype=np.float32)
    except (ValueError, KeyError, TypeError) as error:
        raise RequestError(
            f'Linear Learner JSON must be {{"instances": [{{"features": [numbers]}}, ...]}} ({error})'
        ) from None


def to_recordio(features: np.ndarray) -> bytes:
    """The features as Linear Learner's application/x-recordio-protobuf request body."""
    buffer = io.BytesIO()
    write_dense(buffer, features)
    return buffer.getvalue()
