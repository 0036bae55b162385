"""A pandas DataFrame as pipeline input: written once into the work dir as a CSV file named by its content.

The same frame (same columns, dtypes' text and values) gives the same bytes, hence the same file, which is never
rewritten: its modification time stays, so its DataVersion stays and a second run on it hits the step cache. A
changed frame is a new file, a new DataVersion, and Preprocess runs again. A file already there is reused only when its
bytes are the frame's (the name is their digest): a damaged one is rewritten, with a warning naming it.

Types are decided here, on purpose, since CSV text would hide them: datetime (naive: read as UTC; tz-aware:
converted to UTC), timedelta and Period columns become numbers of seconds (since 1970-01-01 UTC; the duration; the
period's start), as Parquet timestamps do in ``containerlib.tables.parquet_types``: an ordered numeric feature,
never thousands of hashed text values. Complex numbers have no such meaning and are refused, naming the column.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pipeline.core.errors import DataError
from pipeline.core.files import write_bytes_atomically
from pipeline.core.verified import warn_damaged

__all__ = ["numeric_times", "write_frame"]

NAME_PREFIX = "frame-"


def numeric_times(frame: Any) -> Any:
    """``frame`` with its datetime-like columns as float seconds (see the module); a complex column is refused."""
    import pandas as pd
    from pandas.api import types

    converted = {}
    for name in frame.columns:
        column = frame[name]
        if types.is_complex_dtype(column.dtype):
            raise DataError(
                f"data: column {name!r} holds complex numbers ({column.dtype}); a feature is one real number per "
                "row: split it into real and imaginary columns, or leave it out"
            )
        if isinstance(column.dtype, pd.PeriodDtype):
            column = column.dt.start_time
        if isinstance(column.dtype, pd.DatetimeTZDtype):
            column = column.dt.tz_convert("UTC").dt.tz_localize(None)
        if types.is_datetime64_dtype(column.dtype):
            converted[name] = (column - pd.Timestamp("1970-01-01")).dt.total_seconds()
        elif types.is_timedelta64_dtype(column.dtype):
            converted[name] = column.dt.total_seconds()
    return frame.assign(**{str(name): values for name, values in converted.items()}) if converted else frame


def write_frame(frame: Any, folder: Path) -> Path:
    """``<folder>/frame-<sha256 of the CSV, 16 hex>.csv`` (header row, no index), written only if absent or damaged."""
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"data: expected a path or a pandas DataFrame, got {type(frame).__name__}")
    if frame.empty:
        raise DataError("data: the DataFrame has no rows or no columns")
    duplicated = sorted({str(name) for name in frame.columns[frame.columns.duplicated()]})
    if duplicated:
        raise DataError(f"data: the DataFrame has duplicated column names: {', '.join(duplicated)}")
    data = numeric_times(frame).to_csv(index=False).encode("utf-8")
    path = Path(folder) / f"{NAME_PREFIX}{hashlib.sha256(data).hexdigest()[:16]}.csv"
    if path.is_file() and _same_bytes(path, data):
        return path
    if path.exists():
        warn_damaged(path, "its bytes are not those its name is the digest of")
    write_bytes_atomically(path, data)
    return path


def _same_bytes(path: Path, data: bytes) -> bool:
    """Whether the file at ``path`` holds exactly ``data`` (its size first: most damage changes it)."""
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False
