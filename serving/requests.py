"""Request bodies to rows: CSV (with a header, or without one: the feature columns in the model's order), JSON
(records, ``{"instances": [...]}`` of records, or one record) and JSON Lines; columns matched by name."""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np
import pandas as pd

from serving import RequestError
from serving.model import ServingSpec

CSV = "text/csv"
JSON = "application/json"
JSONLINES = "application/jsonlines"
RECORDIO = "application/x-recordio-protobuf"
RAW_TYPES = (CSV, JSON, JSONLINES)
MAX_PAYLOAD_BYTES = 6 * 1024 * 1024  # SageMaker real-time endpoints' request limit


def media_type(content_type: str) -> str:
    """``text/csv; charset=utf-8`` -> ``text/csv``; ``application/x-ndjson`` spelled as JSON Lines."""
    kind = content_type.split(";")[0].strip().lower()
    return JSONLINES if kind in ("application/jsonl", "application/x-jsonlines", "application/x-ndjson") else kind


def parse_rows(body: bytes, content_type: str, spec: ServingSpec) -> pd.DataFrame:
    """The feature columns of every row of a request, text as written for categorical columns."""
    kind = media_type(content_type)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RequestError(f"the request body is not UTF-8 text ({error})") from None
    if not text.strip():
        raise RequestError("the request has no rows")
    if kind == CSV:
        frame = _csv_rows(text, spec)
    elif kind == JSON:
        frame = _records(_json_records(text), spec, "record")
    elif kind == JSONLINES:
        frame = _records(_jsonlines_records(text), spec, "line")
    else:
        raise RequestError(f"content type {content_type!r} is not one of {list(RAW_TYPES) + [RECORDIO]}", 415)
    return frame


def _csv_rows(text: str, spec: ServingSpec) -> pd.DataFrame:
    """CSV with a header (recognised by naming a feature or label column), or without one: feature order."""
    columns = list(spec.columns)
    first = next((line for line in text.splitlines() if line.strip()), "")
    fields = [field.strip().strip('"') for field in first.split(",")]
    header = any(field in spec.columns or field == spec.label_column for field in fields)
    if not header and len(fields) != len(columns):
        raise RequestError(
            f"CSV row 1 has {len(fields)} value(s); a CSV without a header needs the {len(columns)} feature "
            f"columns {columns} in this order (or send a header naming the columns)"
        )
    text_columns = {column: str for column in spec.layout.categorical_columns}
    try:
        if header:
            frame = pd.read_csv(io.StringIO(text), dtype=text_columns, skipinitialspace=True)
        else:
            frame = pd.read_csv(io.StringIO(text), header=None, names=columns, dtype=text_columns)
    except (pd.errors.ParserError, ValueError) as error:
        raise RequestError(f"CSV is malformed: {str(error).strip()}") from None
    except pd.errors.EmptyDataError:
        raise RequestError("the request has no rows") from None
    if header:
        frame.columns = [str(column).strip() for column in frame.columns]
        _require_columns(frame.columns, spec, "the CSV header")
    if frame.empty:
        raise RequestError("the request has no rows")
    return frame


def _json_records(text: str) -> list[Any]:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise RequestError(f"the body is not JSON: {error}") from None
    if isinstance(document, dict) and "instances" in document:
        document = document["instances"]
    if isinstance(document, dict):
        return [document]
    if not isinstance(document, list):
        raise RequestError('JSON must be a record, a list of records or {"instances": [records]}')
    return document


def _jsonlines_records(text: str) -> list[Any]:
    records = []
    for number, line in enumerate((line for line in text.splitlines() if line.strip()), start=1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise RequestError(f"JSON Lines line {number} is not JSON: {error}") from None
    return records


def _records(records: list[Any], spec: ServingSpec, unit: str) -> pd.DataFrame:
    """Records (objects keyed by column name) as a frame; categorical values as their text."""
    columns = list(spec.columns)
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise RequestError(f"{unit} {number} is not an object of column: value (got {type(record).__name__})")
        missing = [column for column in columns if column not in record]
        if missing:
            raise RequestError(
                f"{unit} {number}: missing column(s) {missing}; the model's feature columns are {columns}"
            )
    if not records:
        raise RequestError("the request has no rows")
    data = {}
    for column in columns:
        values = [record[column] for record in records]
        if column in spec.layout.categorical_columns:
            data[column] = pd.Series([None if v is None else str(v) for v in values], dtype=object)
        else:
            data[column] = pd.Series([np.nan if v is None else v for v in values], dtype=object)
            bad = [i for i, v in enumerate(values) if isinstance(v, (dict, list, bool))]
            if bad:
                raise RequestError(f"{unit} {bad[0] + 1}, column {column!r}: {values[bad[0]]!r} is not a number")
    return pd.DataFrame(data)


def _require_columns(found: Any, spec: ServingSpec, where: str) -> None:
    missing = [column for column in spec.columns if column not in set(found)]
    if missing:
        raise RequestError(f"{where} lacks column(s) {missing}; the model's feature columns are {list(spec.columns)}")
