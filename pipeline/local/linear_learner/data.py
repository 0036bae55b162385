"""Reading a channel's files (RecordIO-protobuf or headerless CSV with the label first) into one in-memory dataset,
with clear errors naming the file, the record and what was expected."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from pipeline.errors import AlgorithmInputError
from pipeline.local.linear_learner.trainer import Dataset
from pipeline.names import CSV


def channel_files(directory: Path) -> list[Path]:
    """The files of a channel directory in name order (hidden files skipped)."""
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.rglob("*") if p.is_file() and not p.name.startswith("."))


def read_features_and_labels(path: Path, content_type: str, *, labels_in_csv: bool = True):
    """(features, labels or None) of one file; CSV labels are the first column when ``labels_in_csv``."""
    if content_type == CSV:
        return _read_csv(path, labels_in_csv)
    from preprocessing.recordio import RecordIOError, read

    try:
        with path.open("rb") as stream:
            features, labels = read(stream)
    except RecordIOError as error:  # its message may name the file already: name it once
        raise AlgorithmInputError(
            f"{path}: record {error.record_index} at byte offset {error.offset}: {error.problem}"
        ) from None
    if sp.issparse(features):
        features = sp.csr_matrix(features, dtype=np.float32)
        values = features.data
    else:
        features = np.ascontiguousarray(features, dtype=np.float32)
        values = features
    if not np.all(np.isfinite(values)):
        rows = np.flatnonzero(~np.isfinite(features.toarray() if sp.issparse(features) else features).all(axis=1))
        raise AlgorithmInputError(
            f"{path}: record {int(rows[0])} has a NaN or infinite feature; expected finite numbers"
        )
    return features, labels


def _read_csv(path: Path, labels_in_csv: bool):
    import pandas as pd

    try:
        frame = pd.read_csv(path, header=None, dtype=str, keep_default_na=False, skip_blank_lines=True)
    except pd.errors.EmptyDataError:
        raise AlgorithmInputError(
            f"{path}: the CSV file is empty; expected rows of numbers (label first, no header)"
        ) from None
    except pd.errors.ParserError as error:
        raise AlgorithmInputError(
            f"{path}: malformed CSV ({str(error).strip()}); expected the same number of fields on "
            "every row"
        ) from None
    numbers = frame.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(numbers)
    if bad.any():
        row, column = (int(i) for i in np.argwhere(bad)[0])
        raise AlgorithmInputError(
            f"{path}: row {row + 1}, column {column + 1} is {frame.iat[row, column]!r}; expected a "
            "finite number (CSV without header, label in the first column)"
        )
    if labels_in_csv:
        if numbers.shape[1] < 2:
            raise AlgorithmInputError(
                f"{path}: rows have {numbers.shape[1]} field(s); expected the label and at least one "
                "feature"
            )
        return np.ascontiguousarray(numbers[:, 1:], dtype=np.float32), numbers[:, 0].astype(np.float32)
    return np.ascontiguousarray(numbers, dtype=np.float32), None


def read_channel(name: str, files: Sequence[Path], content_type: str, *, feature_dim: int | None,
                 predictor_type: str, num_classes: int) -> Dataset:
    """All files of a channel as one Dataset; every record must have a valid label and ``feature_dim`` features."""
    parts, labels = [], []
    width = feature_dim
    for path in files:
        features, file_labels = read_features_and_labels(path, content_type)
        if features.shape[0] == 0:
            continue
        if width is None:
            width = int(features.shape[1])
        if features.shape[1] != width:
            expected = "feature_dim" if feature_dim is not None else f"the first file of channel {name!r}"
            raise AlgorithmInputError(
                f"{path}: records have {features.shape[1]} features; expected {width} (from {expected})"
            )
        if file_labels is None:
            raise AlgorithmInputError(f"{path}: records have no label; channel {name!r} needs labelled records")
        check_labels(path, file_labels, predictor_type, num_classes)
        parts.append(features)
        labels.append(np.asarray(file_labels, dtype=np.float32))
    if not parts:
        raise AlgorithmInputError(f"channel {name!r} has no records")
    if any(sp.issparse(p) for p in parts):
        matrix = sp.vstack([sp.csr_matrix(p) for p in parts], format="csr", dtype=np.float32)
    else:
        matrix = parts[0] if len(parts) == 1 else np.vstack(parts)
    return Dataset(features=matrix, labels=np.concatenate(labels))


def check_labels(path: Path, labels: np.ndarray, predictor_type: str, num_classes: int) -> None:
    """Labels must be 0/1 for binary, 0..num_classes-1 for multiclass and finite for regression."""
    if predictor_type == "binary_classifier":
        bad = ~np.isin(labels, (0.0, 1.0))
        expected = "0 or 1 for a binary_classifier"
    elif predictor_type == "multiclass_classifier":
        bad = (labels != np.round(labels)) | (labels < 0) | (labels >= num_classes)
        expected = f"an integer from 0 to {num_classes - 1} (num_classes={num_classes})"
    else:
        bad = ~np.isfinite(labels)
        expected = "a finite number"
    if np.any(bad):
        index = int(np.flatnonzero(bad)[0])
        raise AlgorithmInputError(
            f"{path}: record {index} (0-based) has label {float(labels[index])!r}; expected {expected}"
        )
