"""A table's column names exactly as written, checked: every column named, no name twice."""

from __future__ import annotations

import csv
import gzip
from collections.abc import Sequence
from pathlib import Path

from containerlib.errors import TableError
from containerlib.tables.files import is_gzip, is_parquet


def read_header(path: Path, name: str | None = None) -> list[str]:
    """The column names of one input file exactly as written; a name written twice is an error naming it (as
    ``name``, default its path).

    CSV headers are read with the csv module: pandas would silently rename a second ``label`` to ``label.1``."""
    name = name or str(path)
    try:
        if is_parquet(path):
            import pyarrow.parquet as pq

            header = [str(name) for name in pq.ParquetFile(path).schema_arrow.names]
        else:
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
