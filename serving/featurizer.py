"""Rows to Linear Learner's input with the encoding Preprocess used (:func:`containerlib.encoding.encode_features`)
and its missing-value policy; the features go on to Linear Learner as RecordIO-protobuf (float32, exact)."""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np
import pandas as pd

from containerlib.content_types import JSON, RECORDIO, media_type
from containerlib.encoding import encode_features, impute
from containerlib.names import UNSEEN_REFUSE, UNSEEN_VARIABLE
from containerlib.recordio.reader import RecordIOError, read
from containerlib.recordio.writer import write_dense
from serving import RequestError
from serving.model import ServingSpec
from serving.requests import parse_rows


def _bad_number(row: int, column: str, value: Any) -> Exception:
    return RequestError(f"row {row + 1}, column {column!r}: {value!r} is not a number")


def featurize(frame: Any, spec: ServingSpec) -> np.ndarray:
    """float32 features (rows, feature_dim) of a request's rows (:data:`serving.requests.Rows`) or a DataFrame
    (:func:`featurize_rows`)."""
    return featurize_rows(frame, spec)[0]


def featurize_rows(frame: Any, spec: ServingSpec) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """float32 features (rows, feature_dim) of a request's rows, and per row the values of one-hot columns outside
    their vocabulary (``{column: value}``, empty for most rows), encoded as ``column=(other)``. Missing values are
    treated as Preprocess treated them: imputed (MissingValues=impute) or zeroed (zero); otherwise a missing value
    answers 400 naming row and column. An unseen value answers 400 when the endpoint refuses them."""
    encoded = encode_features(frame, spec.layout, _bad_number)

    def cell(column: str, row: int) -> Any:
        return frame[column].iloc[row] if isinstance(frame, pd.DataFrame) else frame[column][row]

    if spec.missing_policy == "impute":
        for row, position in zip(*(index.tolist() for index in np.nonzero(encoded.absent))):  # noqa: B905 - 3.9
            column = spec.layout.feature_columns[position]
            value = cell(column, row)
            if not _is_gap(value):  # a number beyond float32 or inf is a client's fault, not a gap to fill
                raise RequestError(f"row {row + 1}, column {column!r} is {_shown(value)}, not a finite float32")
        unfilled = impute(encoded, spec.layout)
        if unfilled:
            row = int(np.flatnonzero(encoded.absent[:, spec.layout.feature_columns.index(unfilled[0])])[0])
            raise RequestError(
                f"row {row + 1}, column {unfilled[0]!r} has no value and the model holds no value to impute it with"
            )
    elif spec.missing_policy != "zero" and encoded.absent.any():
        row, position = (int(index[0]) for index in np.nonzero(encoded.absent))
        column = spec.layout.feature_columns[position]
        value = cell(column, row)
        problem = "has no value" if value is None else f"is {_shown(value)}, not a finite float32"
        raise RequestError(
            f"row {row + 1}, column {column!r} {problem}; the model was trained with "
            f"MissingValues={spec.missing_policy}, so every feature needs a value"
        )
    unseen: list[dict[str, Any]] = [{} for _ in range(len(encoded.features))]
    for column, mask in encoded.unseen.items():
        for row in np.flatnonzero(mask).tolist():
            unseen[row][column] = _plain(cell(column, row))
    if spec.unseen == UNSEEN_REFUSE:
        refused = next(((row, values) for row, values in enumerate(unseen) if values), None)
        if refused is not None:
            row, values = refused
            column, value = next(iter(values.items()))
            known = spec.layout.encoding(column).values
            shown = ", ".join(map(repr, known[:10])) + (f" and {len(known) - 10} more" if len(known) > 10 else "")
            raise RequestError(
                f"row {row + 1}, column {column!r}: value {value!r} was not seen in training (its values: {shown}); "
                f"this endpoint refuses unseen values ({UNSEEN_VARIABLE}={UNSEEN_REFUSE})"
            )
    return np.ascontiguousarray(encoded.features, dtype=np.float32), unseen


def _is_gap(value: Any) -> bool:
    """A missing cell: None (JSON null, a CSV's missing-value text) or a DataFrame's NaN/NaT."""
    if value is None:
        return True
    return not isinstance(value, (str, bytes)) and bool(pd.isna(value))


def _plain(value: Any) -> Any:
    """A cell as a JSON value (numpy scalars as Python's)."""
    return value.item() if isinstance(value, np.generic) else value


def _shown(value: Any) -> str:
    return repr(value.item() if isinstance(value, np.generic) else value)


def request_features(body: bytes, content_type: str, spec: ServingSpec) -> np.ndarray:
    """Any request the inference pipeline takes as float32 features (:func:`request_rows_features`)."""
    return request_rows_features(body, content_type, spec)[0]


def request_rows_features(body: bytes, content_type: str, spec: ServingSpec) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Any request the inference pipeline takes as float32 features: raw rows (CSV, JSON, JSON Lines) encoded as
    Preprocess did, or rows already encoded (RecordIO-protobuf, Linear Learner's JSON ``{"instances": [{"features":
    [...]}]}``) as they are; the width is checked against the model's features. With them, each row's unseen
    categorical values (:func:`featurize_rows`; none for encoded rows)."""
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
        return featurize_rows(parse_rows(body, content_type, spec), spec)
    if features.ndim != 2 or features.shape[1] != spec.layout.feature_dim:
        raise RequestError(
            f"encoded records have {features.shape[-1] if features.ndim else 0} features; the model takes "
            f"{spec.layout.feature_dim}"
        )
    return features, [{} for _ in range(len(features))]


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
