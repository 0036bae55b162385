"""Raw rows to Linear Learner features, the one implementation Preprocess (training data) and the serving featurizer
(requests) share: numeric columns as float32 features, categorical columns feature-hashed into ``hash_buckets``
indicators (``blake2b-64("column=value") mod buckets``, :mod:`containerlib.stable_hash`), in the schema's feature
order, with which cells are missing (the caller applies its missing-value policy)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from containerlib.stable_hash import stable_hash64

# (row index in the frame, column name, the cell) -> the exception to raise for text that is not a number
BadNumber = Callable[[int, str, Any], Exception]


@dataclass(frozen=True)
class FeatureLayout:
    """Which columns are features, in which order, and how many hash buckets a categorical column takes."""

    feature_columns: tuple[str, ...]
    categorical_columns: tuple[str, ...]
    hash_buckets: int

    @property
    def numeric_columns(self) -> tuple[str, ...]:
        return tuple(column for column in self.feature_columns if column not in self.categorical_columns)

    @property
    def feature_offsets(self) -> dict[str, int]:
        """Index of each feature column's first feature."""
        offsets, offset = {}, 0
        for column in self.feature_columns:
            offsets[column] = offset
            offset += self.hash_buckets if column in self.categorical_columns else 1
        return offsets

    @property
    def feature_dim(self) -> int:
        return len(self.numeric_columns) + len(self.categorical_columns) * self.hash_buckets


@dataclass
class Encoded:
    """Rows as features: ``features`` float32 (n, feature_dim), 0 where a value is missing; ``absent`` (n, feature
    columns) marks the missing cells; ``category_hashes`` the 64-bit hashes of each categorical column's values."""

    features: np.ndarray
    absent: np.ndarray
    category_hashes: dict = field(default_factory=dict)


def encode_features(
    frame: pd.DataFrame, layout: FeatureLayout, bad_number: BadNumber, numeric: np.ndarray | None = None
) -> Encoded:
    """The features of every row of ``frame`` (columns matched by name); ``numeric`` is the numeric columns as
    float32 when a reader already has them. Text in a numeric column raises ``bad_number(row, column, value)``."""
    n = len(frame)
    if numeric is None:
        numeric = numeric_block(frame, layout.numeric_columns, bad_number)
    absent_numeric = ~np.isfinite(numeric)
    if absent_numeric.any():
        numeric = numeric.copy(order="F")  # to_numpy may return pandas' own read-only block; keep the caller's
        numeric[absent_numeric] = 0.0
    if not layout.categorical_columns:
        return Encoded(numeric, absent_numeric)  # numeric columns are the feature columns, in order
    features = np.zeros((n, layout.feature_dim), dtype=np.float32, order="F")
    absent = np.zeros((n, len(layout.feature_columns)), dtype=bool)
    offsets = layout.feature_offsets
    positions = {column: index for index, column in enumerate(layout.feature_columns)}
    features[:, [offsets[column] for column in layout.numeric_columns]] = numeric
    absent[:, [positions[column] for column in layout.numeric_columns]] = absent_numeric
    hashes: dict[str, np.ndarray] = {}
    for column in layout.categorical_columns:
        absent[:, positions[column]], hashes[column] = _hash_categorical(
            frame[column], column, layout.hash_buckets, features, offsets[column]
        )
    return Encoded(features, absent, hashes)


def numeric_block(frame: pd.DataFrame, columns: Sequence[str], bad_number: BadNumber) -> np.ndarray:
    """The numeric feature columns as a float32 matrix; non-finite values (and float32 overflow) kept as such."""
    with np.errstate(over="ignore", invalid="ignore"):
        block = frame[list(columns)]
        if all(pd.api.types.is_numeric_dtype(dtype) for dtype in block.dtypes):
            return block.to_numpy(dtype=np.float32, na_value=np.nan)
        values = np.empty((len(frame), len(columns)), dtype=np.float32, order="F")
        for index, column in enumerate(columns):
            values[:, index] = to_number(frame[column], bad_number)
        return values  # column-major as pandas stores it: Preprocess's row hashes read it column by column


def to_number(column: pd.Series, bad_number: BadNumber) -> np.ndarray:
    """A column as float64 (NaN for missing); text that is not a number raises ``bad_number`` for its first row."""
    if pd.api.types.is_numeric_dtype(column.dtype) or pd.api.types.is_bool_dtype(column.dtype):
        return column.to_numpy(dtype=np.float64, na_value=np.nan)
    numbers = pd.to_numeric(column, errors="coerce")
    bad = numbers.isna().to_numpy() & column.notna().to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise bad_number(row, str(column.name), column.iloc[row])
    return numbers.to_numpy(dtype=np.float64, na_value=np.nan)


def _hash_categorical(
    column: pd.Series, name: str, buckets: int, features: np.ndarray, offset: int
) -> tuple[np.ndarray, np.ndarray]:
    """Set one indicator per row in ``features[:, offset:offset+buckets]``; return the mask of missing values and
    the 64-bit hashes of the distinct values."""
    codes, uniques = pd.factorize(column.astype("object"))  # missing -> code -1
    hashes = np.array([stable_hash64(f"{name}={str(value).strip()}") for value in uniques], dtype=np.uint64)
    bucket_of_unique = (hashes % np.uint64(buckets)).astype(np.int64)
    present = codes >= 0
    rows = np.flatnonzero(present)
    features[rows, offset + bucket_of_unique[codes[present]]] = 1.0
    return ~present, hashes
