"""An endpoint's data-capture files, read: the one reader of SageMaker's capture format.

SageMaker writes each sampled request as one JSON line, under
``<destination>/<endpoint>/<variant>/yyyy/mm/dd/hh/<MM-SS-mmm>-<uuid>.jsonl``::

    {"captureData": {"endpointInput": {"observedContentType": "text/csv", "mode": "INPUT", "data": "1.5,red",
     "encoding": "CSV"}, "endpointOutput": {...}}, "eventMetadata": {"eventId": "...", "inferenceTime":
     "2024-01-19T19:27:57Z"}, "eventVersion": "0"}

``llpipe serve`` adds ``eventMetadata.modelPackageArn``, the version that answered, and
``eventMetadata.samplingPercentage``, the share of requests its capture kept (not keys SageMaker writes:
:attr:`CaptureRecord.model_package_arn` and :attr:`CaptureRecord.sampling_percentage` are None without them).

``data`` is the payload as text (``encoding`` CSV or JSON) or base64 (``BASE64``). :func:`records` gives the records
of a time window (the hour folders that overlap it, then each record's ``inferenceTime``); :func:`request_rows`
turns a request into rows of raw values: ``text/csv`` lines (with or without a header line naming the columns),
``application/json`` (a record, a list of records or rows, ``{"instances": [...]}`` with records, rows,
``{"features": [...]}`` or ``{"data": {"features": {"values": [...]}}}``) and ``application/jsonlines`` (one of those
per line; also spelled ``application/x-ndjson``...: headers are read by :mod:`containerlib.content_types`, as the
server read them). A row is a dict (named columns) or a list (positional: named by the baseline's columns when it has as
many values, else ``_c0``, ``_c1``, ...).
"""

from __future__ import annotations

import base64
import binascii
import csv
import io
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Union

from containerlib.content_types import CSV, JSON, JSONLINES, JSONLINES_ALIASES, RAW_ROW_TYPES, media_type
from dataquality import AnalyzerError

CAPTURE_SUFFIX = ".jsonl"
MODEL_PACKAGE_KEY = "modelPackageArn"  # llpipe's key in eventMetadata: the model package version that answered
SAMPLING_KEY = "samplingPercentage"  # llpipe's key in eventMetadata: the percentage of requests capture kept
_HOUR_FOLDERS = re.compile(r"^\d{4}/\d{2}/\d{2}/\d{2}$")

Row = Union[dict, list]


class CaptureError(AnalyzerError):
    """A capture file or record that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class Payload:
    """``captureData.endpointInput`` or ``endpointOutput``."""

    observed_content_type: str
    mode: str
    data: str
    encoding: str

    @property
    def media_type(self) -> str:
        """The content type as :func:`containerlib.content_types.media_type` reads it, as the server did
        (``text/csv; charset=utf-8`` -> ``text/csv``, ``application/x-ndjson`` -> JSON Lines)."""
        return media_type(self.observed_content_type)

    def text(self) -> str:
        """The payload as text (base64 decoded when ``encoding`` is BASE64)."""
        if self.encoding.upper() != "BASE64":
            return self.data
        try:
            return base64.b64decode(self.data, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as error:
            raise ValueError(f"BASE64 data that is not base64 of UTF-8 text ({error})") from None


@dataclass(frozen=True)
class CaptureRecord:
    """One captured request, where it was read (``<file> line N``)."""

    where: str
    event_id: str
    inference_time: datetime
    endpoint_input: Payload | None
    endpoint_output: Payload | None
    inference_id: str | None = None
    model_package_arn: str | None = None  # eventMetadata.modelPackageArn (llpipe serve's), None without it
    sampling_percentage: float | None = None  # eventMetadata.samplingPercentage (llpipe serve's), None without it


def parse_time(text: str, what: str) -> datetime:
    """An ISO 8601 UTC time (``2024-01-19T19:27:57Z``; the spaces of the analyzer docs' ``16: 20: 00Z`` allowed)."""
    cleaned = text.replace(" ", "").replace("Z", "+00:00")
    try:
        moment = datetime.fromisoformat(cleaned)
    except ValueError:
        raise CaptureError(f"{what} {text!r} is not an ISO 8601 time such as 2024-01-19T19:27:57Z") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


def capture_files(root: Path, start: datetime | None = None, end: datetime | None = None) -> list[Path]:
    """The ``.jsonl`` files under ``root`` (sorted) whose ``yyyy/mm/dd/hh`` folder overlaps ``[start, end)``."""
    found = []
    for path in sorted(root.rglob(f"*{CAPTURE_SUFFIX}")):
        relative = path.relative_to(root).parts
        if any(part.startswith((".", "_")) for part in relative) or not path.is_file():
            continue
        hour = _folder_hour(relative[:-1])
        if hour is not None and start is not None and hour + timedelta(hours=1) <= start:
            continue
        if hour is not None and end is not None and hour >= end:
            continue
        found.append(path)
    return found


def _folder_hour(folders: Sequence[str]) -> datetime | None:
    tail = "/".join(folders[-4:])
    if len(folders) < 4 or not _HOUR_FOLDERS.match(tail):
        return None
    try:
        return datetime.strptime(tail, "%Y/%m/%d/%H").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def read_records(path: Path, name: str | None = None) -> Iterator[CaptureRecord]:
    """Every record of one capture file, in order; errors name the file (as ``name``) and line."""
    for record, _ in read_lines(path, name):
        yield record


def read_lines(path: Path, name: str | None = None) -> Iterator[tuple[CaptureRecord, str]]:
    """Every record of one capture file with its line as written (newline included), for copying records out."""
    name = name or str(path)
    try:
        with path.open(encoding="utf-8", newline="") as lines:
            for number, line in enumerate(lines, start=1):
                if line.strip():
                    yield _record(line, f"{name} line {number}"), line if line.endswith("\n") else line + "\n"
    except UnicodeDecodeError as error:
        raise CaptureError(f"{name}: not UTF-8 text ({error})") from None


def _record(line: str, where: str) -> CaptureRecord:
    try:
        document = json.loads(line)
    except json.JSONDecodeError as error:
        raise CaptureError(f"{where}: not a JSON capture record ({error})") from None
    if not isinstance(document, dict) or not isinstance(document.get("captureData"), dict):
        raise CaptureError(f"{where}: a capture record needs a captureData object")
    metadata = document.get("eventMetadata")
    if not isinstance(metadata, dict) or not isinstance(metadata.get("inferenceTime"), str):
        raise CaptureError(f"{where}: a capture record needs eventMetadata.inferenceTime")
    data = document["captureData"]
    return CaptureRecord(
        where=where,
        event_id=str(metadata.get("eventId", "")),
        inference_time=parse_time(metadata["inferenceTime"], f"{where}: eventMetadata.inferenceTime"),
        endpoint_input=_payload(data.get("endpointInput"), f"{where}: captureData.endpointInput"),
        endpoint_output=_payload(data.get("endpointOutput"), f"{where}: captureData.endpointOutput"),
        inference_id=metadata.get("inferenceId"),
        model_package_arn=_optional_text(
            metadata.get(MODEL_PACKAGE_KEY), f"{where}: eventMetadata.{MODEL_PACKAGE_KEY}"
        ),
        sampling_percentage=_optional_percentage(metadata.get(SAMPLING_KEY), f"{where}: eventMetadata.{SAMPLING_KEY}"),
    )


def _optional_percentage(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 100:
        raise CaptureError(f"{where} must be a number in (0, 100], got {value!r}")
    return float(value)


def _optional_text(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise CaptureError(f"{where} must be a non-empty string, got {value!r}")
    return value


def _payload(value: Any, where: str) -> Payload | None:
    if value is None:
        return None
    fields = ("observedContentType", "mode", "data", "encoding")
    if not isinstance(value, dict) or not all(isinstance(value.get(key), str) for key in fields):
        raise CaptureError(f"{where} needs the strings {', '.join(fields)}")
    return Payload(*(value[key] for key in fields))


def records(root: Path, start: datetime | None = None, end: datetime | None = None) -> Iterator[CaptureRecord]:
    """The records under ``root`` whose ``inferenceTime`` is in ``[start, end)``, file by file."""
    for path in capture_files(root, start, end):
        for record in read_records(path, path.relative_to(root).as_posix()):
            if (start is None or record.inference_time >= start) and (end is None or record.inference_time < end):
                yield record


UNSEEN_CATEGORIES = "unseen_categories"  # llpipe serve's field on a prediction (containerlib.linear_learner.responses)


def unseen_counts(captured: Iterator[CaptureRecord]) -> dict[str, int]:
    """Per column, the captured rows whose value was never seen in training, as the answers said
    (``unseen_categories`` on a prediction: ``{column: value}``); answers that cannot be read count nothing."""
    counts: dict[str, int] = {}
    for record in captured:
        output = record.endpoint_output
        if output is None or output.media_type not in (JSON, JSONLINES):
            continue
        try:
            text = output.text()
            if output.media_type == JSON:
                document = json.loads(text)
                items = document.get("predictions") if isinstance(document, dict) else None
            else:
                items = [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError:
            continue
        for item in items or []:
            values = item.get(UNSEEN_CATEGORIES) if isinstance(item, dict) else None
            for column in values if isinstance(values, dict) else ():
                counts[column] = counts.get(column, 0) + 1
    return dict(sorted(counts.items()))


def request_rows(payload: Payload, columns: Sequence[str] = (), where: str = "request") -> list[Row]:
    """The rows of raw values a request carried (see the module's docstring for the forms read)."""
    try:
        text = payload.text()
        kind = payload.media_type
        if kind == CSV:
            return _csv_rows(text, columns)
        if kind == JSON:
            return _json_rows(json.loads(text))
        if kind == JSONLINES:
            return [row for line in text.splitlines() if line.strip() for row in _json_rows(json.loads(line))]
    except (ValueError, csv.Error) as error:  # json.JSONDecodeError is a ValueError
        raise CaptureError(f"{where}: {payload.observed_content_type} data that cannot be read ({error})") from None
    raise CaptureError(
        f"{where}: content type {payload.observed_content_type!r} holds no raw rows to check (readable: "
        f"{', '.join(RAW_ROW_TYPES + JSONLINES_ALIASES)})"
    )


def _csv_rows(text: str, columns: Sequence[str]) -> list[Row]:
    rows: list[Row] = [row for row in csv.reader(io.StringIO(text)) if row]
    if rows and columns and len(set(rows[0])) == len(rows[0]) and set(rows[0]) & set(columns):
        header = rows[0]  # a header line naming columns (as the featurizer tells one): the rows are matched by name
        return [dict(zip(header, row)) for row in rows[1:]]
    return rows


def _json_rows(document: Any) -> list[Row]:
    if isinstance(document, dict) and "instances" in document:
        document = document["instances"]
    if isinstance(document, dict):
        return [_json_row(document)]
    if isinstance(document, list):
        if document and not any(isinstance(item, (dict, list)) for item in document):
            return [document]  # one row of values
        return [_json_row(item) for item in document]
    raise ValueError(f"expected a JSON object or array, got {type(document).__name__}")


def _json_row(item: Any) -> Row:
    if isinstance(item, dict):
        features = item.get("features") if len(item) == 1 else None
        data = item.get("data") if len(item) == 1 else None
        if isinstance(features, list):
            return features
        if isinstance(data, dict) and isinstance((data.get("features") or {}).get("values"), list):
            return data["features"]["values"]
        return item
    if isinstance(item, list):
        return item
    return [item]


def named(row: Row, columns: Sequence[str]) -> dict:
    """A row as {column: value}: positional rows by ``columns`` when the counts match, else ``_c0``, ``_c1`` ..."""
    if isinstance(row, dict):
        return row
    names = list(columns) if len(columns) == len(row) else [f"_c{index}" for index in range(len(row))]
    return dict(zip(names, row))
