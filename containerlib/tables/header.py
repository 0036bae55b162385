"""A table's column names exactly as written, checked: every column named, no name twice; and a file named .gz that
is not gzip said as such before gzip's own error."""

from __future__ import annotations

import csv
import gzip
from collections.abc import Sequence
from pathlib import Path

from containerlib.errors import TableError
from containerlib.tables.files import is_gzip, is_parquet

# the first bytes of formats that are not CSV text, often found in a file named .csv
MAGIC = {b"\x1f\x8b": "gzip-compressed data: name it .csv.gz", b"PAR1": "a Parquet file: name it .parquet",
         b"PK\x03\x04": "a zip archive (an .xlsx workbook?): export or unpack it as CSV"}  # fmt: skip


def check_gzip_magic(path: Path, name: str | None = None) -> None:
    """A file named .gz that does not start as gzip data does: said as such (naming it as ``name``, default its
    path), with what it looks like and what to do (gzip's own "Not a gzipped file" reads as if it were damaged)."""
    name = name or str(path)
    with open(path, "rb") as handle:
        start = handle.read(64)
    if not start or start.startswith(b"\x1f\x8b"):
        return
    for magic, what in MAGIC.items():
        if start.startswith(magic):
            raise TableError(f"{name}: named .gz but not gzip-compressed: it is {what}")
    try:
        text = start.decode("utf-8-sig").splitlines()[0]
    except (UnicodeDecodeError, IndexError):
        text = None
    if text is not None and text.isprintable():
        raise TableError(
            f"{name}: named .gz but not gzip-compressed: its first bytes {text[:40]!r} look like text (a plain CSV?); "
            "rename it to .csv, or compress it (gzip the .csv file, which names it .csv.gz)"
        )
    raise TableError(
        f"{name}: named .gz but not gzip-compressed (it starts with {start[:8]!r}, gzip with b'\\x1f\\x8b'); "
        "re-create or re-download it"
    )


def read_header(path: Path, name: str | None = None) -> list[str]:
    """The column names of one input file exactly as written; a name written twice is an error naming it (as
    ``name``, default its path).

    CSV headers are read with the csv module: pandas would silently rename a second ``label`` to ``label.1``."""
    name = name or str(path)
    try:
        if is_parquet(path):
            import pyarrow.parquet as pq

            from containerlib.tables.parquet_types import data_columns

            header = data_columns(pq.ParquetFile(path).schema_arrow)  # a pandas index written as a column is not data
        else:
            if is_gzip(path):
                check_gzip_magic(path, name)
            opener = gzip.open if is_gzip(path) else open
            with opener(path, "rt", encoding="utf-8-sig", newline="") as handle:  # type: ignore[operator]
                header = next(csv.reader(handle), None)
            if not header or header == [""]:
                raise TableError(f"{name}: empty file, expected a header row")
    except (OSError, ValueError, UnicodeDecodeError, EOFError, csv.Error) as error:
        raise TableError(f"{name}: unreadable ({type(error).__name__}: {error})") from error
    check_header(header, name)
    return header


def check_header(header: Sequence[str], name: str) -> None:
    """Every column has a name, and its own: a column without one, or a name written twice, is an error."""
    unnamed = [number for number, column in enumerate(header, start=1) if not column.strip()]
    if unnamed:
        raise TableError(f"{name}: header column(s) {unnamed} (counted from 1) have no name")
    duplicated = sorted({column for column in header if header.count(column) > 1})
    if duplicated:
        raise TableError(
            f"{name}: duplicate column name(s) {duplicated} in the header; every column needs its own name"
        )


def short_row_message(row_number: int, fields: int, header: list[str]) -> str:
    """What is wrong with data row ``row_number`` of ``fields`` fields under ``header`` (more), and what to do."""
    missing = ", ".join(repr(name) for name in header[fields:][:5])
    more = f" and {len(header) - fields - 5} more" if len(header) - fields > 5 else ""
    return (
        f"data row {row_number} has {fields} field(s) but the header names {len(header)} (no value for {missing}"
        f"{more}; a row cut short?); complete the row, or write its empty values as empty fields between commas"
    )


def csv_text_error(name: str, text: str, error: Exception | None = None, line: int | None = None) -> TableError:
    """What Python's csv reader refused in ``text`` (from file ``name``), said with the way out: line endings that
    are a carriage return alone (classic Mac OS), or a carriage return inside an unquoted value (``line``: the
    line, counted from 1, where the reader stopped), or any other csv error as it is."""
    if "\r" in text and "\n" not in text:
        return TableError(
            f"{name}: its lines end with a carriage return alone (CR, classic Mac OS line endings); "
            "save the file with LF or CRLF line endings"
        )
    where = f"line {line}" if line else "a line"
    if error is not None and "new-line character" in str(error):
        return TableError(
            f"{name}: {where} has a carriage return (CR) inside an unquoted value; quote that value or remove the CR"
        )
    return TableError(f"{name}: {where} is not readable CSV ({error})")
