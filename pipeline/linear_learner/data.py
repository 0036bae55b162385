"""Reading a channel's files (RecordIO-protobuf or headerless CSV with the label first), piece by piece, into blocks
on disk or one in-memory dataset, with clear errors naming the file, the record and what was expected.

The trainer's modules (``Dataset``, ``blocks``) are imported where a channel is read for training: Batch Transform
reads its files through :func:`iter_file` in ``llpipe``'s own process, which then skips the trainer's imports
(scipy.special among them, about 0.35 CPU-s)."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from pipeline.core.errors import AlgorithmInputError
from pipeline.core.names import CSV

if TYPE_CHECKING:
    from pipeline.linear_learner.blocks import BlockChannel
    from pipeline.linear_learner.trainer import Dataset


def channel_files(directory: Path) -> list[Path]:
    """The files of a channel directory in name order (hidden files skipped)."""
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.rglob("*") if p.is_file() and not p.name.startswith("."))


READ_RECORDS = 4096  # records decoded at a time while a channel is checked and stored


def read_features_and_labels(path: Path, content_type: str, *, labels_in_csv: bool = True):
    """(features, labels or None) of one whole file; CSV labels are the first column when ``labels_in_csv``."""
    pieces = list(iter_file(path, content_type, sys.maxsize, labels_in_csv=labels_in_csv))
    if not pieces:
        return np.empty((0, 0), dtype=np.float32), None
    if len(pieces) == 1:
        return pieces[0][1], pieces[0][2]
    stack = sp.vstack if sp.issparse(pieces[0][1]) else np.concatenate
    labels = None if pieces[0][2] is None else np.concatenate([piece[2] for piece in pieces])
    return stack([piece[1] for piece in pieces]), labels


def iter_file(path: Path, content_type: str, records: int, *, labels_in_csv: bool = True):
    """(index of the first record, features, labels or None) of one file, ``records`` at a time; errors name the
    file and the record (0-based for RecordIO, 1-based rows for CSV)."""
    if content_type == CSV:
        yield from _iter_csv(path, records, labels_in_csv)
        return
    from containerlib.recordio import RecordIOError, iter_batches

    first = 0
    try:
        with path.open("rb") as stream:
            for features, labels in iter_batches(stream, records):
                yield first, _checked_recordio(path, features, first), labels
                first += features.shape[0]
    except RecordIOError as error:  # its message may name the file already: name it once
        raise AlgorithmInputError(
            f"{path}: record {error.record_index} at byte offset {error.offset}: {error.problem}"
        ) from None


def _checked_recordio(path: Path, features, first: int):
    if sp.issparse(features):
        features = sp.csr_matrix(features, dtype=np.float32)
        values = features.data
    else:
        features = np.ascontiguousarray(features, dtype=np.float32)
        values = features
    if not np.all(np.isfinite(values)):
        rows = np.flatnonzero(~np.isfinite(features.toarray() if sp.issparse(features) else features).all(axis=1))
        raise AlgorithmInputError(
            f"{path}: record {first + int(rows[0])} has a NaN or infinite feature; expected finite numbers"
        )
    return features


def _iter_csv(path: Path, records: int, labels_in_csv: bool):
    import pandas as pd

    first = 0
    try:
        with pd.read_csv(  # closed also when the reader stops early (a bad record further on): no file left open
            path, header=None, dtype=str, keep_default_na=False, skip_blank_lines=True, chunksize=min(records, 1 << 30)
        ) as chunks:
            for frame in chunks:
                yield first, *_csv_numbers(path, frame, first, labels_in_csv)
                first += len(frame)
    except pd.errors.EmptyDataError:
        raise AlgorithmInputError(
            f"{path}: the CSV file is empty; expected rows of numbers (label first, no header)"
        ) from None
    except pd.errors.ParserError as error:
        raise AlgorithmInputError(
            f"{path}: malformed CSV ({str(error).strip()}); expected the same number of fields on every row"
        ) from None


def _csv_numbers(path: Path, frame, first: int, labels_in_csv: bool):
    import pandas as pd

    numbers = frame.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(numbers)
    if bad.any():
        row, column = (int(i) for i in np.argwhere(bad)[0])
        raise AlgorithmInputError(
            f"{path}: row {first + row + 1}, column {column + 1} is {frame.iat[row, column]!r}; expected a finite "
            "number (CSV without header, label in the first column)"
        )
    if labels_in_csv:
        if numbers.shape[1] < 2:
            raise AlgorithmInputError(
                f"{path}: rows have {numbers.shape[1]} field(s); expected the label and at least one feature"
            )
        return np.ascontiguousarray(numbers[:, 1:], dtype=np.float32), numbers[:, 0].astype(np.float32)
    return np.ascontiguousarray(numbers, dtype=np.float32), None


def checked_records(
    name: str,
    files: Sequence[Path],
    content_type: str,
    *,
    feature_dim: int | None,
    predictor_type: str,
    num_classes: int,
    records: int = READ_RECORDS,
) -> Iterator[Dataset]:
    """Every record of a channel, checked, as pieces of up to ``records``: each must have a valid label and
    ``feature_dim`` features (or as many as the first file's)."""
    from pipeline.linear_learner.trainer import Dataset

    width = feature_dim
    seen = False
    for path in files:
        for first, features, file_labels in iter_file(path, content_type, records):
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
            check_labels(path, file_labels, predictor_type, num_classes, first)
            seen = True
            yield Dataset(features=features, labels=np.asarray(file_labels, dtype=np.float32))
    if not seen:
        raise AlgorithmInputError(f"channel {name!r} has no records")


def read_channel(
    name: str,
    files: Sequence[Path],
    content_type: str,
    *,
    feature_dim: int | None,
    predictor_type: str,
    num_classes: int,
) -> Dataset:
    """All files of a channel as one in-memory Dataset (see :func:`checked_records`)."""
    from pipeline.linear_learner.trainer import Dataset

    parts = list(
        checked_records(
            name,
            files,
            content_type,
            feature_dim=feature_dim,
            predictor_type=predictor_type,
            num_classes=num_classes,
            records=sys.maxsize,
        )
    )
    if any(sp.issparse(p.features) for p in parts):
        matrix = sp.vstack([sp.csr_matrix(p.features) for p in parts], format="csr", dtype=np.float32)
    else:
        matrix = parts[0].features if len(parts) == 1 else np.vstack([p.features for p in parts])
    return Dataset(features=matrix, labels=np.concatenate([p.labels for p in parts]))


def open_channel(
    name: str,
    files: Sequence[Path],
    content_type: str,
    folder: Path,
    *,
    feature_dim: int | None,
    predictor_type: str,
    num_classes: int,
    multiple_of: int = 1,
) -> BlockChannel:
    """A channel checked once and stored in ``folder`` as blocks read back one at a time (``blocks.py``)."""
    from pipeline.linear_learner.blocks import write_blocks

    records = checked_records(
        name, files, content_type, feature_dim=feature_dim, predictor_type=predictor_type, num_classes=num_classes
    )
    return write_blocks(folder, records, multiple_of)


def check_labels(path: Path, labels: np.ndarray, predictor_type: str, num_classes: int, first: int = 0) -> None:
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
            f"{path}: record {first + index} (0-based) has label {float(labels[index])!r}; expected {expected}"
        )
