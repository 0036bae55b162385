"""Cell values in messages: where a row is ('file row N') and how a value is shown, and text read as numbers."""

from __future__ import annotations

import csv
import gzip
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from containerlib.tables.files import is_gzip, is_parquet
from preprocessing import PreprocessError


@dataclass(frozen=True)
class RowLocator:
    """Turns a row index within a chunk into 'file row N' for messages."""

    name: str  # the file's name in messages (InputNames)
    first_row: int  # 1-based data row number of the chunk's first row
    path: Path | None = None  # the file on this machine: a cell's text as written, for a message
    source: str = ""  # the file's name relative to the input folder: its rows' ids (containerlib.row_ids)

    def at(self, index: int) -> str:
        return f"{self.name} row {self.first_row + index}"

    def cell_text(self, column: str, index: int) -> str | None:
        """A CSV cell's text as written (the readers turn an empty cell and the text 'NaN' alike into NaN); None for
        Parquet or when the row cannot be found. Read once, on the error path only."""
        if self.path is None or is_parquet(self.path):
            return None
        opener: Any = gzip.open if is_gzip(self.path) else open
        wanted = self.first_row + index
        try:
            with opener(self.path, "rt", encoding="utf-8-sig", newline="") as handle:
                rows = (fields for fields in csv.reader(handle) if fields)  # the readers skip blank lines too
                header = next(rows)
                for number, fields in enumerate(rows, start=1):
                    if number == wanted:
                        return fields[header.index(column)] if column in header else None
        except (OSError, ValueError, EOFError, csv.Error, StopIteration, IndexError):
            return None
        return None


def describe_missing(where: RowLocator, column: str, index: int, value: Any) -> str:
    """Why a cell counts as missing, in words: empty, the text 'NaN' (or 'NA', ...), or a number float32 cannot hold;
    not pandas' ``nan`` for all three."""
    shown = value.item() if isinstance(value, np.generic) else value
    if isinstance(shown, (int, float)) and not isinstance(shown, bool) and not math.isnan(shown):
        return f"value {show(value)} is not a finite float32"
    text = where.cell_text(column, index)
    if text is None:
        return "is null (missing)" if shown is None else f"value {show(value)} is missing"
    if not text.strip():
        return "is empty"
    return f"holds the text {text!r}, read as a missing value"


def show(value: Any) -> str:
    """A cell value for a message: numpy scalars shown as plain Python values."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def to_float64(column: pd.Series, where: RowLocator, what: str, hint: Callable[[], str] | None = None) -> np.ndarray:
    """A column as float64 (NaN for missing); text that is not a number is an error naming file, row and column."""
    if pd.api.types.is_numeric_dtype(column.dtype) or pd.api.types.is_bool_dtype(column.dtype):
        return column.to_numpy(dtype=np.float64, na_value=np.nan)
    numbers = pd.to_numeric(column, errors="coerce")
    bad = numbers.isna().to_numpy() & column.notna().to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        fix = (
            hint()
            if hint
            else "declare text columns as categorical (feature-hashed) with --categorical-columns (pipeline "
            f"parameter CategoricalColumns), adding {column.name} to the columns already declared"
        )
        raise PreprocessError(f"{where.at(row)}: {what} has non-numeric value {show(column.iloc[row])}; {fix}")
    return numbers.to_numpy(dtype=np.float64, na_value=np.nan)
