"""Raw rows to Linear Learner features, the one implementation Preprocess (training data) and the serving featurizer
(requests) share: numeric columns as float32 features, categorical columns feature-hashed into ``hash_buckets``
indicators (``blake2b-64("column=value") mod buckets``, :mod:`containerlib.stable_hash`), in the schema's feature
order, with which cells are missing (the caller applies its missing-value policy)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from containerlib.stable_hash import stable_hash64
from containerlib.time_text import FORMS, to_seconds

# (row index in the frame, column name, the cell) -> the exception to raise for text that is not a number
BadNumber = Callable[[int, str, Any], Exception]


@dataclass(frozen=True)
class FeatureLayout:
    """Which columns are features, in which order, and how many hash buckets a categorical column takes."""

    feature_columns: tuple[str, ...]
    categorical_columns: tuple[str, ...]
    hash_buckets: int
    # (numeric column, value) pairs: the value is subtracted in float64 before the feature becomes float32, so a
    # column whose offset dwarfs its spread (1e8 + N(0, 1)) keeps its spread (float32 holds 1e8 in steps of 8); the
    # schema decides them (``pipeline.definition.centring``), Preprocess and the serving featurizer apply them
    centres: tuple[tuple[str, float], ...] = ()
    # (numeric column, kind) pairs: columns of date-time or time-of-day text, read as seconds
    # (:mod:`containerlib.time_text`); the schema decides them
    times: tuple[tuple[str, str], ...] = ()

    def numeric_centres(self, columns: Sequence[str]) -> np.ndarray | None:
        """The centre of each of ``columns`` (0 where none), float64; None when no column has one."""
        given = dict(self.centres)
        if not any(given.get(column) for column in columns):
            return None
        return np.array([float(given.get(column) or 0.0) for column in columns], dtype=np.float64)

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
    frame: Any, layout: FeatureLayout, bad_number: BadNumber, numeric: np.ndarray | None = None
) -> Encoded:
    """The features of every row of ``frame`` (columns matched by name): a DataFrame (Preprocess's chunks), or a
    mapping of column name to a list of cells (a request's rows: text, numbers, None for missing), which the
    serving featurizer takes without pandas' per-call overhead. ``numeric`` is the numeric columns as float32 when a
    reader already has them, centred (``layout.centres``) as :func:`numeric_block` centres. Text in a numeric column
    raises ``bad_number(row, column, value)``."""
    n = len(frame) if isinstance(frame, pd.DataFrame) else len(frame[layout.feature_columns[0]])
    if numeric is None:
        centres = layout.numeric_centres(layout.numeric_columns)
        numeric = numeric_block(frame, layout.numeric_columns, bad_number, centres, dict(layout.times))
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
        hash_column = _hash_categorical if isinstance(frame, pd.DataFrame) else _hash_cells
        absent[:, positions[column]], hashes[column] = hash_column(
            frame[column], column, layout.hash_buckets, features, offsets[column]
        )
    return Encoded(features, absent, hashes)


def numeric_block(
    frame: Any,
    columns: Sequence[str],
    bad_number: BadNumber,
    centres: np.ndarray | None = None,
    times: Mapping[str, str] | None = None,
) -> np.ndarray:
    """The numeric feature columns as a float32 matrix, each minus its centre (``centres``, float64, aligned with
    ``columns``) taken in float64 first; a column of ``times`` (column -> kind) read from its date-time or
    time-of-day text as seconds; non-finite values (and float32 overflow) kept as such."""
    times = times or {}
    with np.errstate(over="ignore", invalid="ignore"):
        if not isinstance(frame, pd.DataFrame):
            cells = [
                _seconds(frame[column], column, times[column], bad_number)
                if column in times
                else cells_to_float64(frame[column], column, bad_number)
                for column in columns
            ]
            n = len(frame[columns[0]]) if columns else 0
            values = np.array(cells, dtype=np.float64).reshape(len(columns), n).T
            return (values if centres is None else values - centres).astype(np.float32, order="F")
        block = frame[list(columns)]
        if not times and all(pd.api.types.is_numeric_dtype(dtype) for dtype in block.dtypes):
            if centres is None:
                return block.to_numpy(dtype=np.float32, na_value=np.nan)
            return (block.to_numpy(dtype=np.float64, na_value=np.nan) - centres).astype(np.float32, order="F")
        values = np.empty((len(frame), len(columns)), dtype=np.float32, order="F")
        for index, column in enumerate(columns):
            if column in times:
                number = np.array(_seconds(frame[column].tolist(), column, times[column], bad_number))
            else:
                number = to_number(frame[column], bad_number)
            values[:, index] = number if centres is None else number - centres[index]
        return values  # column-major as pandas stores it: Preprocess's row hashes read it column by column


def _seconds(cells: Sequence[Any], column: str, kind: str, bad_number: BadNumber) -> list[float]:
    """A date-time or time-of-day column's cells as seconds; text of another form raises ``bad_number`` naming the
    form expected."""

    def bad_value(row: int, cell: Any) -> Exception:
        error = bad_number(row, column, cell)
        return type(error)(f"{error}; the column holds {FORMS[kind]}")

    return to_seconds(cells, kind, bad_value)


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


def _float(number: int | float) -> float:
    """A JSON number as a float: an integer beyond float range becomes infinity (refused as not finite later),
    not an OverflowError."""
    try:
        return float(number)
    except OverflowError:
        return math.inf if number > 0 else -math.inf


def cells_to_float64(cells: Sequence[Any], column: str, bad_number: BadNumber) -> list[float]:
    """Cells of a request as pandas reads them into a number column: None (missing) NaN, numbers as they are,
    text as a float; pandas' true/false spellings as 1 and 0 only when every value of the column is one (as its
    reader makes a boolean column); other text raises ``bad_number``."""
    texts = [str(cell).strip() for cell in cells if cell is not None and not isinstance(cell, (bool, int, float))]
    booleans = bool(texts) and all(text in BOOLEAN_TEXT for text in texts)
    values = []
    for row, cell in enumerate(cells):
        if cell is None:
            values.append(math.nan)
        elif isinstance(cell, (bool, int, float)):
            values.append(_float(cell))
        else:
            text = str(cell).strip()
            number = BOOLEAN_TEXT[text] if booleans else None
            if number is None and text not in BOOLEAN_TEXT and "_" not in text:
                try:
                    number = float(text)
                except ValueError:
                    number = None
            if number is None:
                raise bad_number(row, column, cell)
            values.append(number)
    return values


BOOLEAN_TEXT = {"True": 1.0, "TRUE": 1.0, "true": 1.0, "False": 0.0, "FALSE": 0.0, "false": 0.0}  # pandas' defaults


def category_text(value: Any) -> str:
    """The text a categorical value is hashed as: text as written (stripped); a boolean (a JSON true, a DataFrame's
    bool) as ``true``/``false``, the spelling Preprocess hashes a Parquet boolean column with (Arrow's cast to
    string), which the data-quality baseline and ``llpipe monitor`` use too. Python's ``str(True)`` gave "True", a
    value the model never saw: a JSON client's booleans fell in untrained buckets without a word."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    return str(value).strip()


def _hash_cells(
    cells: Sequence[Any], name: str, buckets: int, features: np.ndarray, offset: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_hash_categorical` for a request's cells (None or NaN missing; a value hashed as its text)."""
    absent = np.zeros(len(cells), dtype=bool)
    seen: dict[str, int] = {}
    for row, cell in enumerate(cells):
        if cell is None or (isinstance(cell, float) and math.isnan(cell)):
            absent[row] = True
            continue
        text = f"{name}={category_text(cell)}"
        if text not in seen:
            seen[text] = stable_hash64(text)
        features[row, offset + seen[text] % buckets] = 1.0
    return absent, np.array(list(seen.values()), dtype=np.uint64)


def _hash_categorical(
    column: pd.Series, name: str, buckets: int, features: np.ndarray, offset: int
) -> tuple[np.ndarray, np.ndarray]:
    """Set one indicator per row in ``features[:, offset:offset+buckets]``; return the mask of missing values and
    the 64-bit hashes of the distinct values."""
    codes, uniques = pd.factorize(column.astype("object"))  # missing -> code -1
    hashes = np.array([stable_hash64(f"{name}={category_text(value)}") for value in uniques], dtype=np.uint64)
    bucket_of_unique = (hashes % np.uint64(buckets)).astype(np.int64)
    present = codes >= 0
    rows = np.flatnonzero(present)
    features[rows, offset + bucket_of_unique[codes[present]]] = 1.0
    return ~present, hashes
