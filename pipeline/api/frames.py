"""A pandas DataFrame as pipeline input: written once into the work dir as a CSV file named by its content.

The same frame (same columns, dtypes' text and values) gives the same bytes, hence the same file, which is never
rewritten: its modification time stays, so its DataVersion stays and a second run on it hits the step cache. A
changed frame is a new file, a new DataVersion, and Preprocess runs again.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pipeline.core.errors import DataError
from pipeline.core.files import write_text_atomically

NAME_PREFIX = "frame-"


def write_frame(frame: Any, folder: Path) -> Path:
    """``<folder>/frame-<sha256 of the CSV, 16 hex>.csv`` (header row, no index), written only if absent."""
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"data: expected a path or a pandas DataFrame, got {type(frame).__name__}")
    if frame.empty:
        raise DataError("data: the DataFrame has no rows or no columns")
    duplicated = sorted({str(name) for name in frame.columns[frame.columns.duplicated()]})
    if duplicated:
        raise DataError(f"data: the DataFrame has duplicated column names: {', '.join(duplicated)}")
    text = frame.to_csv(index=False)
    path = Path(folder) / f"{NAME_PREFIX}{hashlib.sha256(text.encode()).hexdigest()[:16]}.csv"
    if not path.is_file():
        write_text_atomically(path, text)
    return path
