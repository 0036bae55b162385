"""Chunks of a file, read through the container library's table reader, converted to Linear Learner rows: float32
features (categorical columns feature-hashed into indicator blocks) then the label, with each row's split and the
missing-value policy applied."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from containerlib.stable_hash import stable_hash64
from containerlib.tables.chunks import Chunk, read_chunks
from containerlib.tables.header import read_header
from preprocessing import PreprocessError
from preprocessing.hashing import assign_splits, hash_texts, row_hashes
from preprocessing.labels import LabelSpec, encode_labels
from preprocessing.layout import Schema, check_columns
from preprocessing.values import RowLocator, show, to_float64


def iter_chunks(
    path: Path, schema: Schema, chunk_rows: int, name: str | None = None
) -> Iterator[tuple[RowLocator, Chunk]]:
    """The used columns of one file, ``chunk_rows`` rows at a time; errors name the file as ``name`` (default: its
    path)."""
    name = name or str(path)
    header = read_header(path, name)
    check_columns(name, header, schema)
    first_row = 1
    try:
        text = schema.text_columns + ([schema.label_column] if schema.label_as_text else [])
        for chunk in read_chunks(path, header, schema.used_columns, text, schema.numeric_columns, chunk_rows):
            yield RowLocator(name, first_row), chunk
            first_row += len(chunk)
    except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as error:
        after = f" after data row {first_row - 1}" if first_row > 1 else ""
        raise PreprocessError(f"{name}: unreadable{after} ({type(error).__name__}: {error})") from error


@dataclass
class Converted:
    """One chunk as Linear Learner input rows and the split of each row."""

    rows: np.ndarray  # C-ordered float32 (n, feature_dim + 1): the features, then the label
    split: np.ndarray  # uint8 split code per row
    dropped: int
    category_hashes: dict[str, np.ndarray] = field(default_factory=dict)  # column -> hashes of its distinct values


def convert_chunk(
    chunk: Chunk,
    where: RowLocator,
    schema: Schema,
    labels: LabelSpec,
    missing_policy: str,
    seed: int,
    fractions: tuple[float, float, float],
) -> Converted:
    """Features, labels and the split of every row of one chunk, applying the missing-value policy."""
    frame, n = chunk.frame, len(chunk)
    numeric = chunk.numeric if chunk.numeric is not None else _numeric_block(frame, schema.numeric_columns, where)
    absent_numeric = ~np.isfinite(numeric)
    category_hashes: dict[str, np.ndarray] = {}
    if absent_numeric.any():
        numeric = numeric.copy(order="F")  # to_numpy may return pandas' own read-only block; keep the chunk's
        numeric[absent_numeric] = 0.0
    if schema.categorical_columns:
        features = np.zeros((n, schema.feature_dim), dtype=np.float32, order="F")
        absent = np.zeros((n, len(schema.feature_columns)), dtype=bool)
        offsets = schema.feature_offsets
        numeric_positions = [schema.feature_columns.index(column) for column in schema.numeric_columns]
        features[:, [offsets[column] for column in schema.numeric_columns]] = numeric
        absent[:, numeric_positions] = absent_numeric
        for column in schema.categorical_columns:
            absent[:, schema.feature_columns.index(column)], category_hashes[column] = _hash_categorical(
                frame[column], column, schema.hash_buckets, features, offsets[column]
            )
    else:
        features, absent = numeric, absent_numeric  # numeric columns are the feature columns, in order
    missing_feature = absent.any(axis=1)

    label_values, missing_label = encode_labels(frame[schema.label_column], labels, where)
    bad = missing_feature | missing_label
    if bad.any():
        if missing_policy == "error" or (missing_policy == "zero" and missing_label.any()):
            row = int(np.flatnonzero(missing_label if missing_policy == "zero" else bad)[0])
            if missing_label[row]:
                what = f"label column {schema.label_column!r} value {show(chunk.value(schema.label_column, row))}"
            else:
                name = schema.feature_columns[int(absent[row].argmax())]
                what = f"column {name!r} value {show(chunk.value(name, row))}"
            hint = "=drop" if missing_policy == "zero" else "=zero (features) or =drop (rows)"
            raise PreprocessError(
                f"{where.at(row)}: {what} is missing or not a finite float32 (use --param MissingValues{hint}; "
                "preprocess.py: --missing)"
            )
    keep = ~bad if missing_policy == "drop" else np.ones(n, dtype=bool)
    if not keep.all():
        features, label_values = features[keep], label_values[keep]
    if schema.id_column:
        ids = frame[schema.id_column][keep]
        if ids.isna().any():
            row = int(np.flatnonzero(frame[schema.id_column].isna().to_numpy() & keep)[0])
            raise PreprocessError(f"{where.at(row)}: id column {schema.id_column!r} is empty")
        hashes = hash_texts(ids, seed)
    else:
        hashes = row_hashes(features, label_values, seed)
    rows = np.empty((len(label_values), schema.feature_dim + 1), dtype=np.float32)
    rows[:, :-1] = features
    rows[:, -1] = label_values
    return Converted(rows, assign_splits(hashes, fractions), int(n - keep.sum()), category_hashes)


def _numeric_block(frame: pd.DataFrame, columns: Sequence[str], where: RowLocator) -> np.ndarray:
    """The numeric feature columns as a float32 matrix; non-finite values (and float32 overflow) kept as such."""
    with np.errstate(over="ignore", invalid="ignore"):
        block = frame[list(columns)]
        if all(pd.api.types.is_numeric_dtype(dtype) for dtype in block.dtypes):
            values = block.to_numpy(dtype=np.float32, na_value=np.nan)
        else:
            values = np.empty((len(frame), len(columns)), dtype=np.float32, order="F")
            for index, column in enumerate(columns):
                values[:, index] = to_float64(frame[column], where, f"column {column!r}")
        return values  # column-major as pandas stores it: row_hashes reads it column by column


def _hash_categorical(
    column: pd.Series, name: str, buckets: int, features: np.ndarray, offset: int
) -> tuple[np.ndarray, np.ndarray]:
    """Set one indicator per row in ``features[:, offset:offset+buckets]``; return the mask of missing values and
    the 64-bit hashes of the distinct values (for the summary's distinct-value and bucket counts)."""
    codes, uniques = pd.factorize(column.astype("object"))  # missing -> code -1
    hashes = np.array([stable_hash64(f"{name}={str(value).strip()}") for value in uniques], dtype=np.uint64)
    bucket_of_unique = (hashes % np.uint64(buckets)).astype(np.int64)
    present = codes >= 0
    rows = np.flatnonzero(present)
    features[rows, offset + bucket_of_unique[codes[present]]] = 1.0
    return ~present, hashes
