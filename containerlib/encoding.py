"""Raw rows to Linear Learner features, the one implementation Preprocess (training data) and the serving featurizer
(requests) share, in the schema's feature order. Each feature column has one encoding (:class:`ColumnEncoding`):

- a number: one float32 feature;
- a text column with few values (``one_hot``): one indicator per value of its vocabulary (decided once, by schema
  inference, and stored in the schema), then ``column=(other)`` for any value outside it;
- a text column with many values (``hashed``): ``blake2b-64("column=value") mod buckets`` indicators
  (:mod:`containerlib.stable_hash`);
- with ``MissingValues=impute``, a column that had gaps in the training sample also gets ``column=(missing)``, set
  where the value is missing (a number's gap is filled with its ``fill``, the training median).

Which cells are missing and which text values were outside a vocabulary are returned with the features; the caller
applies its missing-value policy (:func:`impute`). Boolean spellings are decided here, once (:func:`boolean_meaning`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from containerlib.stable_hash import stable_hash64
from containerlib.time_text import FORMS, to_seconds

NUMBER, ONE_HOT, HASHED = "number", "one_hot", "hashed"
OTHER = "(other)"  # the feature of a one-hot column's values outside its vocabulary
MISSING = "(missing)"  # the feature set where a column's value is missing (MissingValues=impute)
DEFAULT_HASH_BUCKETS = 16  # a text column's buckets when nothing decided its encoding (no schema inference)
# the spellings of a yes/no value, compared stripped and lower-cased: a one-hot column whose values are all spellings
# of two meanings matches a value by its meaning ("YES", "y", true all find the column's "Yes")
BOOLEAN_SPELLINGS = {
    "true": True,
    "false": False,
    "yes": True,
    "no": False,
    "y": True,
    "n": False,
    "t": True,
    "f": False,
    "1": True,
    "0": False,
}


def boolean_meaning(value: Any) -> bool | None:
    """True or False when ``value`` is a boolean or one of :data:`BOOLEAN_SPELLINGS` (any case), else None."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    return BOOLEAN_SPELLINGS.get(str(value).strip().lower())


@dataclass(frozen=True)
class ColumnEncoding:
    """How one feature column becomes features (see the module's docstring)."""

    column: str
    kind: str = NUMBER
    values: tuple[str, ...] = ()  # one_hot: the vocabulary, in feature order
    boolean: bool = False  # one_hot: values matched by their yes/no meaning
    buckets: int = 0  # hashed
    fill: float | None = None  # MissingValues=impute: a number column's missing values become this
    indicator: bool = False  # MissingValues=impute: a "column=(missing)" feature after the column's own
    _lookup: dict[Any, int] = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        lookup = {value: index for index, value in enumerate(self.values)}
        if self.boolean:
            for index, value in enumerate(self.values):
                meaning = boolean_meaning(value)
                lookup.update({(True, meaning): index})
        object.__setattr__(self, "_lookup", lookup)

    @property
    def width(self) -> int:
        """How many features the column takes."""
        own = 1 if self.kind == NUMBER else len(self.values) + 1 if self.kind == ONE_HOT else self.buckets
        return own + (1 if self.indicator else 0)

    def index_of(self, value: Any) -> int | None:
        """A one-hot value's place in the vocabulary (the text as written, or its yes/no meaning for a boolean
        column); None outside it."""
        found = self._lookup.get(category_text(value))
        if found is None and self.boolean:
            meaning = boolean_meaning(value)
            found = None if meaning is None else self._lookup.get((True, meaning))
        return found

    def feature_names(self) -> list[str]:
        """``column`` for a number, ``column=value`` and ``column=(other)`` for one-hot, ``column#bucket`` for
        hashed, then ``column=(missing)`` with an indicator."""
        if self.kind == NUMBER:
            names = [self.column]
        elif self.kind == ONE_HOT:
            names = [f"{self.column}={value}" for value in self.values] + [f"{self.column}={OTHER}"]
        else:
            names = [f"{self.column}#{bucket}" for bucket in range(self.buckets)]
        return names + ([f"{self.column}={MISSING}"] if self.indicator else [])

    def to_json(self) -> dict[str, Any]:
        """The encoding as the schema stores it."""
        document: dict[str, Any] = {"kind": self.kind}
        if self.kind == ONE_HOT:
            document.update(values=list(self.values), boolean=self.boolean)
        if self.kind == HASHED:
            document["buckets"] = self.buckets
        if self.fill is not None:
            document["fill"] = self.fill
        if self.indicator:
            document["indicator"] = True
        return document

    @classmethod
    def from_json(cls, column: str, document: Mapping) -> ColumnEncoding:
        """The encoding of ``column`` from the schema's entry (:meth:`to_json`)."""
        kind = str(document.get("kind") or NUMBER)
        if kind not in (NUMBER, ONE_HOT, HASHED):
            raise ValueError(f"column {column!r}: unknown encoding kind {kind!r}")
        fill = document.get("fill")
        return cls(
            column,
            kind,
            tuple(str(value) for value in document.get("values") or ()),
            bool(document.get("boolean")),
            int(document.get("buckets") or 0),
            None if fill is None else float(fill),
            bool(document.get("indicator")),
        )


# (row index in the frame, column name, the cell) -> the exception to raise for text that is not a number
BadNumber = Callable[[int, str, Any], Exception]


@dataclass(frozen=True)
class FeatureLayout:
    """Which columns are features, in which order, and how each becomes features: ``encodings`` as decided (the
    schema's), else a number, or a text column hashed into ``hash_buckets``."""

    feature_columns: tuple[str, ...]
    categorical_columns: tuple[str, ...]
    hash_buckets: int = DEFAULT_HASH_BUCKETS
    encodings: tuple[ColumnEncoding, ...] = ()  # ColumnEncoding of the columns whose encoding was decided
    # (numeric column, value) pairs: the value is subtracted in float64 before the feature becomes float32, so a
    # column whose offset dwarfs its spread (1e8 + N(0, 1)) keeps its spread (float32 holds 1e8 in steps of 8); the
    # schema decides them (``pipeline.definition.centring``), Preprocess and the serving featurizer apply them
    centres: tuple[tuple[str, float], ...] = ()
    # (numeric column, kind) pairs: columns of date-time or time-of-day text, read as seconds
    # (:mod:`containerlib.time_text`); the schema decides them
    times: tuple[tuple[str, str], ...] = ()
    _columns: tuple[ColumnEncoding, ...] = field(default=(), init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        decided = {encoding.column: encoding for encoding in self.encodings}
        text = set(self.categorical_columns)
        columns = tuple(
            decided.get(column)
            or (ColumnEncoding(column, HASHED, buckets=self.hash_buckets) if column in text else ColumnEncoding(column))
            for column in self.feature_columns
        )
        object.__setattr__(self, "_columns", columns)  # once: thousands of columns are looked up per chunk

    def encoding(self, column: str) -> ColumnEncoding:
        """One feature column's encoding."""
        return self._columns[self.feature_columns.index(column)]

    @property
    def columns(self) -> tuple[ColumnEncoding, ...]:
        """Every feature column's encoding, in order."""
        return self._columns

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
        for encoding in self.columns:
            offsets[encoding.column] = offset
            offset += encoding.width
        return offsets

    @property
    def feature_dim(self) -> int:
        return sum(encoding.width for encoding in self.columns)

    @property
    def feature_names(self) -> list[str]:
        """The name of every feature in model order (``column``, ``column=value``, ``column=(other)``,
        ``column#bucket``, ``column=(missing)``): a weight's index is its name's."""
        return [name for encoding in self.columns for name in encoding.feature_names()]


@dataclass
class Encoded:
    """Rows as features: ``features`` float32 (n, feature_dim), 0 where a value is missing (before :func:`impute`);
    ``absent`` (n, feature columns) marks the missing cells; ``category_hashes`` the 64-bit hashes of each hashed
    column's values; ``unseen`` each one-hot column's rows whose value was outside the vocabulary (only columns with
    such rows)."""

    features: np.ndarray
    absent: np.ndarray
    category_hashes: dict[str, np.ndarray] = field(default_factory=dict)
    unseen: dict[str, np.ndarray] = field(default_factory=dict)


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
    columns = layout.columns
    if not layout.categorical_columns and not any(encoding.indicator for encoding in columns):
        return Encoded(numeric, absent_numeric)  # numeric columns are the feature columns, in order
    features = np.zeros((n, layout.feature_dim), dtype=np.float32, order="F")
    absent = np.zeros((n, len(layout.feature_columns)), dtype=bool)
    offsets = layout.feature_offsets
    positions = {column: index for index, column in enumerate(layout.feature_columns)}
    features[:, [offsets[column] for column in layout.numeric_columns]] = numeric
    absent[:, [positions[column] for column in layout.numeric_columns]] = absent_numeric
    hashes: dict[str, np.ndarray] = {}
    unseen: dict[str, np.ndarray] = {}
    table = isinstance(frame, pd.DataFrame)
    for encoding in columns:
        if encoding.kind == NUMBER:
            continue
        cells = frame[encoding.column]
        position = positions[encoding.column]
        if encoding.kind == HASHED:
            hash_column = _hash_categorical if table else _hash_cells
            absent[:, position], hashes[encoding.column] = hash_column(
                cells, encoding.column, encoding.buckets, features, offsets[encoding.column]
            )
        else:
            absent[:, position], outside = _one_hot(cells, encoding, features, offsets[encoding.column], table)
            if outside.any():
                unseen[encoding.column] = outside
    return Encoded(features, absent, hashes, unseen)


def impute(encoded: Encoded, layout: FeatureLayout) -> list[str]:
    """MissingValues=impute on encoded rows, in place: a number's gap filled with its ``fill`` (a raw value: minus
    the column's centre, as the column's other values are), the column's ``=(missing)`` feature set where it has one.
    Returns the columns with a gap and no fill (the caller's error)."""
    if not encoded.absent.any():
        return []
    offsets = layout.feature_offsets
    centres = dict(layout.centres)
    unfilled: list[str] = []
    for position, encoding in enumerate(layout.columns):
        rows = np.flatnonzero(encoded.absent[:, position])
        if not len(rows):
            continue
        if encoding.kind == NUMBER:
            if encoding.fill is None:
                unfilled.append(encoding.column)
                continue
            encoded.features[rows, offsets[encoding.column]] = encoding.fill - centres.get(encoding.column, 0.0)
        if encoding.indicator:
            encoded.features[rows, offsets[encoding.column] + encoding.width - 1] = 1.0
    return unfilled


def _one_hot(
    cells: Any, encoding: ColumnEncoding, features: np.ndarray, offset: int, table: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Set each row's value's indicator (``column=(other)`` outside the vocabulary); return the masks of missing
    values and of values outside the vocabulary."""
    if table:
        codes, uniques = pd.factorize(cells.astype("object"))  # missing -> code -1
    else:
        values = [None if cell is None or (isinstance(cell, float) and math.isnan(cell)) else cell for cell in cells]
        keys = [None if value is None else (type(value).__name__, value) for value in values]
        codes_of: dict[Any, int] = {}
        uniques: list[Any] = []
        codes_list: list[int] = []
        for key, value in zip(keys, values):  # noqa: B905 - Python 3.9
            if key is None:
                codes_list.append(-1)
                continue
            if key not in codes_of:
                codes_of[key] = len(uniques)
                uniques.append(value)
            codes_list.append(codes_of[key])
        codes = np.array(codes_list, dtype=np.int64)
    other = len(encoding.values)
    index = [encoding.index_of(value) for value in uniques]
    column_of_unique = np.array([other if found is None else found for found in index], dtype=np.int64)
    present = codes >= 0
    rows = np.flatnonzero(present)
    features[rows, offset + column_of_unique[codes[present]]] = 1.0
    outside = np.zeros(len(codes), dtype=bool)
    outside[rows] = column_of_unique[codes[present]] == other
    return ~present, outside


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
            n = len(frame[columns[0]]) if columns else len(next(iter(frame.values()), ()))
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
