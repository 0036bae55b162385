"""Counting a table's data rows in one cheap pass (no parsing beyond the header), checking on the way what would
otherwise fail, or silently mislead, only once a job reads it: text that is not UTF-8, a truncated or damaged gzip
stream, rows with more fields than the header (often a trailing comma) or fewer (a row cut short), an unreadable
Parquet footer."""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import itertools
import zlib
from collections.abc import Iterator
from pathlib import Path

from containerlib.errors import TableError
from containerlib.tables.files import is_gzip, is_parquet
from containerlib.tables.header import MAGIC, check_gzip_magic, csv_text_error, short_row_message
from containerlib.tables.parquet_types import check_flat_columns

HEADER_SAMPLE_ROWS = 1000  # rows compared with the header's field count
BLOCK = 1 << 22


def count_rows(path: Path) -> int:
    """The data rows of one file (CSV: lines after the header; Parquet: from its footer); TableError naming the file
    (and the data row) for what a job could not read."""
    return _parquet_rows(path) if is_parquet(path) else _csv_rows(path)


def _parquet_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
        rows = int(parquet.metadata.num_rows)
    except Exception as error:  # noqa: BLE001 - pyarrow raises several types for a damaged file
        raise TableError(f"{path}: not a readable Parquet file ({error}); re-export or re-download it") from None
    check_flat_columns(parquet.schema_arrow, str(path))  # the types Preprocess cannot read, said before the run
    return rows


def _blocks(path: Path) -> Iterator[bytes]:
    """The file's bytes (decompressed for .gz); a truncated or damaged gzip is a ``TableError`` naming the file."""
    opener = gzip.open if is_gzip(path) else open
    try:
        with opener(path, "rb") as handle:
            while block := handle.read(BLOCK):
                yield block
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise TableError(
            f"{path}: the gzip data is truncated or damaged ({error}); re-create or re-download it"
        ) from None


def _csv_rows(path: Path) -> int:
    """Data rows of a CSV (lines after the header); bytes that are not UTF-8 and rows with more fields than the
    header are errors naming the file and the data row."""
    _check_not_binary(path)
    decoder = codecs.getincrementaldecoder("utf-8")()
    lines = 0  # newlines seen before the current block
    head = bytearray()
    last = b""
    for block in _blocks(path):
        try:
            decoder.decode(block)
        except UnicodeDecodeError as error:
            row = lines + block.count(b"\n", 0, error.start)
            raise TableError(
                f"{path}: data row {row} (line {row + 1}) is not UTF-8 text (byte 0x{block[error.start]:02x}); "
                "save the file as UTF-8"
            ) from None
        if len(head) < BLOCK:
            head += block[: BLOCK - len(head)]
        lines += block.count(b"\n")
        last = block[-1:]
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise TableError(f"{path}: the last row ends inside a UTF-8 character; save the file as UTF-8") from None
    _check_fields(path, bytes(head))
    if last and last != b"\n":
        lines += 1  # the last line has no newline
    return max(lines - 1, 0)


def _check_not_binary(path: Path) -> None:
    """A compressed, Parquet or zip file under a CSV name, or a file named .gz that is not gzip: said as such (once
    "not UTF-8 text" or "Not a gzipped file")."""
    if is_gzip(path):
        check_gzip_magic(path)
        return
    with open(path, "rb") as handle:
        start = handle.read(4)
    for magic, what in MAGIC.items():
        if start.startswith(magic):
            raise TableError(f"{path}: not CSV text but {what}")


def _check_fields(path: Path, head: bytes) -> None:
    """The first rows have as many fields as the header; an extra (often trailing, empty) field is named, and so are
    the columns a short (cut) row lacks, which pandas would fill with missing values without a word."""
    text = head.decode("utf-8", errors="ignore")
    if "\r" in text and "\n" not in text:  # CR-only line endings: one "line" as csv and this scan count them
        raise csv_text_error(str(path), text)
    cut = len(head) == BLOCK
    if cut:
        text = text[: text.rfind("\n") + 1]  # whole lines only
    reader = csv.reader(io.StringIO(text))
    try:
        _check_rows(path, reader, cut)
    except csv.Error as error:
        raise csv_text_error(str(path), text, error, reader.line_num) from None


def _check_rows(path: Path, reader: Iterator[list[str]], cut: bool) -> None:
    header = next(reader, None)
    if not header:
        return
    for separator in (";", "\t", "|"):
        if len(header) == 1 and separator in header[0]:
            raise TableError(
                f"{path}: the header is one column {header[0][:80]!r}: the file is separated by {separator!r}; "
                "CSV files here are comma-separated: re-export it with commas"
            )
    rows = list(itertools.islice(reader, HEADER_SAMPLE_ROWS + 1))
    if cut and len(rows) <= HEADER_SAMPLE_ROWS:
        rows = rows[:-1]  # the head may end inside a quoted field: its last row may be cut short by the block
    for row_number, row in enumerate(rows[:HEADER_SAMPLE_ROWS], start=1):
        if len(row) > len(header):
            extra = ", ".join(repr(value) for value in row[len(header) :])
            raise TableError(
                f"{path}: data row {row_number} has {len(row)} fields but the header names {len(header)} "
                f"(extra: {extra}; a trailing comma?); remove the extra field or name it in the header"
            )
        if row and len(row) < len(header):  # an empty line (no fields) is skipped, as pandas skips it
            raise TableError(f"{path}: {short_row_message(row_number, len(row), header)}")
