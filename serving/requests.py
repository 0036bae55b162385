"""Request bodies to rows: CSV (with a header, or without one: the feature columns in the model's order), JSON
(records, ``{"instances": [...]}`` of records, or one record) and JSON Lines; columns matched by name."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from containerlib.content_types import CSV, JSON, JSONLINES, REQUEST_TYPES, media_type
from serving import RequestError
from serving.model import ServingSpec

MAX_PAYLOAD_BYTES = 6 * 1024 * 1024  # SageMaker real-time endpoints' request limit


Rows = dict  # column name -> list of cells (text, numbers, None for missing), the shared encoder's request form


def parse_rows(body: bytes, content_type: str, spec: ServingSpec) -> Rows:
    """The feature columns of every row of a request, by name; cells as sent (CSV: text, pandas' missing-value
    spellings as None), which :func:`containerlib.encoding.encode_features` reads as Preprocess read the table."""
    kind = media_type(content_type)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RequestError(f"the request body is not UTF-8 text ({error})") from None
    if not text.strip():
        raise RequestError("the request has no rows")
    if kind == CSV:
        return _csv_rows(text, spec)
    if kind == JSON:
        return _records(_json_records(text), spec, "record")
    if kind == JSONLINES:
        return _records(_jsonlines_records(text), spec, "line")
    raise RequestError(f"content type {content_type!r} is not one of {list(REQUEST_TYPES)}", 415)


def _csv_rows(text: str, spec: ServingSpec) -> Rows:
    """CSV with a header (recognised by naming a feature or label column), or without one: the feature columns in
    the model's order. Every row must have the header's number of values."""
    try:
        lines = [row for row in csv.reader(io.StringIO(text)) if row]
    except csv.Error as error:
        raise RequestError(f"CSV is malformed: {error}") from None
    names = [field.strip() for field in lines[0]]
    header = any(name in spec.columns or name == spec.label_column for name in names)
    if header:
        lines = lines[1:]
        missing = [column for column in spec.columns if column not in names]
        if missing:
            raise RequestError(
                f"the CSV header lacks column(s) {missing}; the model's features are {list(spec.columns)}"
            )
        if not lines:
            raise RequestError("the request has no rows (only a header)")
    else:
        names = list(spec.columns)
    for number, row in enumerate(lines, start=1):
        if len(row) != len(names):
            expected = "as the header has" if header else f"the feature columns {names} in this order, or send a header"
            raise RequestError(f"CSV row {number} has {len(row)} value(s), expected {len(names)}: {expected}")
    missing_text = _missing_text()
    at = {name: index for index, name in enumerate(names)}
    return {
        column: [None if row[at[column]] in missing_text else row[at[column]] for row in lines]
        for column in spec.columns
    }


def _missing_text() -> frozenset:
    """The texts pandas' CSV reader takes as missing (the table reader Preprocess used), in this pandas."""
    try:
        from pandas._libs.parsers import STR_NA_VALUES

        return frozenset(STR_NA_VALUES)
    except ImportError:  # pragma: no cover - every pandas since 1.0 has it
        return frozenset(["", "NA", "N/A", "NaN", "nan", "NULL", "null", "n/a", "#N/A", "<NA>", "-NaN", "-nan"])


def _json(text: str, what: str) -> Any:
    """``text`` parsed as JSON, or a RequestError (400) naming ``what``: malformed JSON, a number beyond Python's
    digit limit, or nesting deeper than the parser's recursion (a client's fault, never the server's)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise RequestError(f"{what} is nested too deeply to parse; a record is an object of column: value") from None
    except ValueError as error:  # JSONDecodeError, and the digit limit of an integer
        raise RequestError(f"{what} is not JSON: {error}") from None


def _json_records(text: str) -> list[Any]:
    document = _json(text, "the body")
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
        records.append(_json(line, f"JSON Lines line {number}"))
    return records


def _records(records: list[Any], spec: ServingSpec, unit: str) -> Rows:
    """Records (objects keyed by column name) as columns of cells; null is missing."""
    columns = list(spec.columns)
    if not records:
        raise RequestError("the request has no rows")
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise RequestError(f"{unit} {number} is not an object of column: value (got {type(record).__name__})")
        missing = [column for column in columns if column not in record]
        if missing:
            raise RequestError(f"{unit} {number}: missing column(s) {missing}; the model's features are {columns}")
    rows: Rows = {}
    for column in columns:
        cells = [record[column] for record in records]
        bad = [index for index, cell in enumerate(cells) if isinstance(cell, (dict, list))]
        if bad:
            raise RequestError(f"{unit} {bad[0] + 1}, column {column!r}: {cells[bad[0]]!r} is not a single value")
        rows[column] = cells
    return rows
