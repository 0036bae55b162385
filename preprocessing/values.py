"""Cell values in messages: where a row is ('file row N') and how a value is shown, and text read as numbers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from preprocessing import PreprocessError


@dataclass(frozen=True)
class RowLocator:
    """Turns a row index within a chunk into 'file row N' for messages."""

    name: str  # the file's name in messages (InputNames)
    first_row: int  # 1-based data row number of the chunk's first row

    def at(self, index: int) -> str:
        return f"{self.name} row {self.first_row + index}"


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
            else f"declare text columns as categorical (feature-hashed) with --param CategoricalColumns={column.name} "
            "(added to the columns already declared; preprocess.py: --categorical-columns)"
        )
        raise PreprocessError(f"{where.at(row)}: {what} has non-numeric value {show(column.iloc[row])}; {fix}")
    return numbers.to_numpy(dtype=np.float64, na_value=np.nan)
