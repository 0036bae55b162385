"""The bundled example: scikit-learn's breast cancer data set (569 rows, 30 features, binary label).

It is written as several CSV parts so that two processing instances each get files under ``ShardedByS3Key``,
with a header row, snake_case column names and the label in a column named ``label`` (1 = benign).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from pipeline.core.files import write_text_atomically

EXAMPLE_LABEL_COLUMN = "label"
EXAMPLE_PREDICTOR_TYPE = "binary_classifier"
EXAMPLE_PARTS = 4


def write_example_data(folder: Path, parts: int = EXAMPLE_PARTS) -> list[Path]:
    """Write ``part-00000.csv`` ... into ``folder`` (rows dealt round-robin, so every part mixes both classes).

    Files that already hold the same bytes are left alone, so re-runs see the same data and hit the step cache. A
    complete set written by this scikit-learn version is reused without importing scikit-learn (seconds)."""
    from importlib import metadata

    marker = folder / f".complete-{parts}-sklearn-{metadata.version('scikit-learn')}"
    paths = [folder / f"part-{part:05d}.csv" for part in range(parts)]
    if marker.is_file() and marker.read_text() == _digest(paths):
        return paths
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    frame = data.frame.rename(columns=lambda name: re.sub(r"\W+", "_", name.strip()).lower())
    frame = frame.rename(columns={"target": EXAMPLE_LABEL_COLUMN})
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for part in range(parts):
        path = folder / f"part-{part:05d}.csv"
        text = frame.iloc[part::parts].to_csv(index=False)
        if not path.is_file() or path.read_text() != text:  # unchanged files keep their identity (and the cache)
            write_text_atomically(path, text)
        written.append(path)
    for stale in folder.glob(".complete-*"):
        stale.unlink()
    marker.write_text(_digest(written))
    return written


def _digest(paths: list[Path]) -> str:
    """SHA-256 of the parts' bytes (a few kB each), so an edited or missing part is rewritten."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes() if path.is_file() else b"\0missing")
    return digest.hexdigest()
