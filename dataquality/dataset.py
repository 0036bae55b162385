"""The data set an analysis reads, as chunks of raw values: the analyzer's ``dataset_source`` and ``dataset_format``.

Formats (``dataset_format`` is their JSON, as the SDK's ``DatasetFormat`` writes it): ``{"csv": {"header": true}}``
(every field as text; an empty field is missing; without a header the columns are ``_c0``, ``_c1``, ...),
``{"json": {"lines": true}}`` (one flat JSON object per line; without ``lines`` a file holds an array of them),
``{"parquet": {}}`` and ``{"sagemakerCaptureJson": {...}}`` (an endpoint's capture files: the requests' rows,
:mod:`dataquality.capture`, within the ``start_time``-``end_time`` window). Every file under the source is read, in
name order, except those (and folders) whose names start with ``.`` or ``_``. Each chunk comes with where it was read,
for messages.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from containerlib.content_types import RAW_ROW_TYPES
from dataquality import AnalyzerError
from dataquality.capture import named, records, request_rows

CHUNK_ROWS = 50_000
FORMATS = ("csv", "json", "parquet", "sagemakerCaptureJson")


@dataclass(frozen=True)
class DatasetFormat:
    """One of :data:`FORMATS` and its options."""

    kind: str
    header: bool = False
    lines: bool = True

    @classmethod
    def parse(cls, text: str) -> DatasetFormat:
        """``dataset_format``'s JSON (``{"csv": {"header": true, "output_columns_position": "START"}}``)."""
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            raise AnalyzerError(f"dataset_format {text!r} is not JSON ({error})") from None
        if not isinstance(document, dict) or len(document) != 1 or next(iter(document)) not in FORMATS:
            raise AnalyzerError(f"dataset_format {text!r}: expected one of {', '.join(FORMATS)} with its options")
        kind, options = next(iter(document.items()))
        options = options or {}
        if not isinstance(options, dict):
            raise AnalyzerError(f"dataset_format {text!r}: the options of {kind} must be an object")
        return cls(
            kind=kind,
            header=_flag(options.get("header", False), "header"),
            lines=_flag(options.get("lines", options.get("line", True)), "lines"),
        )


def _flag(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("true", "false"):
        return str(value).lower() == "true"
    raise AnalyzerError(f"dataset_format option {name} must be true or false, got {value!r}")


def dataset_files(source: Path) -> list[Path]:
    """The files of the data set: every file under ``source`` (or ``source`` itself), hidden ones excepted."""
    if source.is_file():
        return [source]
    if not source.is_dir():
        raise AnalyzerError(f"dataset_source {source} does not exist")
    return [
        path
        for path in sorted(source.rglob("*"))
        if path.is_file() and not any(part.startswith((".", "_")) for part in path.relative_to(source).parts)
    ]


def chunks(
    source: Path,
    dataset_format: DatasetFormat,
    columns: Sequence[str] = (),
    start: datetime | None = None,
    end: datetime | None = None,
) -> Iterator[tuple[str, pd.DataFrame]]:
    """The data set's raw values, a chunk at a time, each with the file it came from (relative to ``source``).
    ``columns`` (the baseline's, in order) name positional rows of capture data."""
    if dataset_format.kind == "sagemakerCaptureJson":
        yield from _capture_chunks(source, columns, start, end)
        return
    for path in dataset_files(source):
        name = path.relative_to(source).as_posix() if path != source else path.name
        try:
            if dataset_format.kind == "csv":
                yield from ((name, frame) for frame in _csv_chunks(path, dataset_format.header))
            elif dataset_format.kind == "json":
                yield from ((name, frame) for frame in _json_chunks(path, dataset_format.lines))
            else:
                yield from ((name, frame) for frame in _parquet_chunks(path))
        except AnalyzerError:
            raise
        except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as error:
            raise AnalyzerError(
                f"{name}: cannot be read as {dataset_format.kind} ({type(error).__name__}: {error})"
            ) from None


def _csv_chunks(path: Path, header: bool) -> Iterator[pd.DataFrame]:
    if path.stat().st_size == 0:
        return
    reader = pd.read_csv(
        path,
        dtype=str,
        header=0 if header else None,
        keep_default_na=False,
        na_values=[""],
        chunksize=CHUNK_ROWS,
    )
    for frame in reader:
        if not header:
            frame.columns = [f"_c{index}" for index in range(len(frame.columns))]
        yield frame


def _json_chunks(path: Path, lines: bool) -> Iterator[pd.DataFrame]:
    with path.open(encoding="utf-8") as text:
        if not lines:
            document = json.load(text)
            rows = document if isinstance(document, list) else [document]
            for start in range(0, len(rows), CHUNK_ROWS):
                yield _frame(rows[start : start + CHUNK_ROWS], f"{path.name}")
            return
        batch: list[Any] = []
        for number, line in enumerate(text, start=1):
            if not line.strip():
                continue
            try:
                batch.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise AnalyzerError(f"{path.name} line {number}: not JSON ({error})") from None
            if len(batch) == CHUNK_ROWS:
                yield _frame(batch, path.name)
                batch = []
        if batch:
            yield _frame(batch, path.name)


def _frame(rows: list[Any], name: str) -> pd.DataFrame:
    if not all(isinstance(row, dict) for row in rows):
        raise AnalyzerError(f"{name}: every JSON record must be an object of column values")
    return pd.DataFrame.from_records(rows).astype(object)


def _parquet_chunks(path: Path) -> Iterator[pd.DataFrame]:
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches(batch_size=CHUNK_ROWS):
        yield batch.to_pandas()


def _capture_chunks(
    source: Path, columns: Sequence[str], start: datetime | None, end: datetime | None
) -> Iterator[tuple[str, pd.DataFrame]]:
    batch: list[dict] = []
    where = ""
    encoded: dict[str, int] = {}  # requests of encoded inputs (Linear Learner's own formats): no raw rows to check
    for record in records(source, start, end):
        if record.endpoint_input is None:
            continue
        if record.endpoint_input.media_type not in RAW_ROW_TYPES:
            kind = record.endpoint_input.observed_content_type
            encoded[kind] = encoded.get(kind, 0) + 1
            continue
        where = record.where.rsplit(" line ", 1)[0]
        for row in request_rows(record.endpoint_input, columns, record.where):
            batch.append(named(row, columns))
        if len(batch) >= CHUNK_ROWS:
            yield where, pd.DataFrame.from_records(batch).astype(object)
            batch = []
    if batch:
        yield where, pd.DataFrame.from_records(batch).astype(object)
    for kind, count in sorted(encoded.items()):
        print(
            f"skipped {count} captured request(s) of {kind}: encoded inputs hold no raw rows to check", file=sys.stderr
        )
