"""The bundled example: scikit-learn's breast cancer data set (569 rows, 30 features, binary label).

It is written as several CSV parts so that two processing instances each get files under ``ShardedByS3Key``,
with a header row, snake_case column names and the label in a column named ``label`` (1 = benign). The parts are
made once per scikit-learn version in the user cache (``example-data/`` there) and copied into each work dir from it,
so a fresh work dir does not import scikit-learn (about 2.5 CPU-seconds of a small local run).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from pipeline.core.errors import LlpipeError
from pipeline.core.files import user_cache_dir, write_text_atomically

EXAMPLE_LABEL_COLUMN = "label"
EXAMPLE_PREDICTOR_TYPE = "binary_classifier"
EXAMPLE_PARTS = 4


def write_example_data(folder: Path, parts: int = EXAMPLE_PARTS) -> list[Path]:
    """Write ``part-00000.csv`` ... into ``folder`` (rows dealt round-robin, so every part mixes both classes).

    Files that already hold the same bytes are left alone, so re-runs see the same data and hit the step cache. A
    complete set written by this scikit-learn version is reused without importing scikit-learn (seconds): the
    folder's own, else the user cache's copy."""
    from importlib import metadata

    marker_name = f".complete-{parts}-sklearn-{metadata.version('scikit-learn')}"
    paths = [folder / f"part-{part:05d}.csv" for part in range(parts)]
    if _complete(folder / marker_name, paths):
        return paths
    texts = _cached_texts(marker_name, parts) or _example_texts(parts)
    return _write_set(folder, texts, marker_name)


def _complete(marker: Path, paths: list[Path]) -> bool:
    return marker.is_file() and marker.read_text() == _digest(paths)


def _write_set(folder: Path, texts: list[str], marker_name: str) -> list[Path]:
    """The parts written into ``folder`` and marked complete (a marker of another version removed)."""
    paths = [folder / f"part-{part:05d}.csv" for part in range(len(texts))]
    folder.mkdir(parents=True, exist_ok=True)
    for path, text in zip(paths, texts, strict=True):
        if not path.is_file() or path.read_text() != text:  # unchanged files keep their identity (and the cache)
            write_text_atomically(path, text)
    for stale in folder.glob(".complete-*"):
        stale.unlink(missing_ok=True)
    write_text_atomically(folder / marker_name, _digest(paths))
    return paths


def _example_texts(parts: int) -> list[str]:
    """The parts' CSV texts, made from scikit-learn's copy of the data set (importing it costs seconds)."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    frame = data.frame.rename(columns=lambda name: re.sub(r"\W+", "_", name.strip()).lower())
    frame = frame.rename(columns={"target": EXAMPLE_LABEL_COLUMN})
    return [frame.iloc[part::parts].to_csv(index=False) for part in range(parts)]


def _cached_texts(marker_name: str, parts: int) -> list[str] | None:
    """The parts' texts from the user cache (``example-data/`` there, one set per scikit-learn version), made and
    kept there first when missing; None when the cache cannot be read or written (the caller makes them itself)."""
    try:
        cache = user_cache_dir() / "example-data"
        paths = [cache / f"part-{part:05d}.csv" for part in range(parts)]
        if not _complete(cache / marker_name, paths):
            texts = _example_texts(parts)
            _write_set(cache, texts, marker_name)
            return texts
        return [path.read_text() for path in paths]
    except (OSError, LlpipeError):  # an unwritable or misplaced cache only costs the reuse
        return None


def _digest(paths: list[Path]) -> str:
    """SHA-256 of the parts' bytes (a few kB each), so an edited or missing part is rewritten."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes() if path.is_file() else b"\0missing")
    return digest.hexdigest()
