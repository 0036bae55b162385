"""A CSV range parsed once, every cell as text, and the typed columns derived from that text exactly as Arrow's typed
reader (:mod:`csv_reader`) would have parsed them, so a file is parsed once for both a row's raw cells (its split)
and its values.

Arrow's CSV reader and its string casts parse numbers with the same functions (``ParseValue``: integers, and floats
correctly rounded), so a cast of the text gives the typed reader's values bit for bit. The typed reader's inference
is followed: a cell among the missing-value strings is null; a column of nothing but nulls is of the null type, of
integers (and nulls) int64, of numbers double; text columns keep their text with the missing-value strings null.
Anything else (booleans, dates, a cell with spaces around a number, which the typed reader trims) is not derived:
the caller parses that range again with the typed reader.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any


def text_convert_options(header: Sequence[str]) -> Any:
    """Every column as the text written (quotes removed), nothing read as missing: an empty cell is ``""``."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    return pacsv.ConvertOptions(
        column_types=dict.fromkeys(header, pa.string()),
        null_values=[],
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
    )


def typed_from_text(text: Any, convert: Any, columns: Sequence[str]) -> Any:
    """The table the typed reader gives for ``columns`` of a range (``convert``: its ConvertOptions, whose
    ``column_types`` fix the types of some columns and whose ``null_values`` are the missing-value strings), from
    that range's text table; None where it cannot be derived from the text alone (the caller parses it typed)."""
    import pyarrow as pa

    if not text.num_rows or len(set(columns)) != len(columns):
        return None
    nulls = tuple(convert.null_values)
    arrays = []
    for name in columns:
        cells = text.column(name)
        kind = convert.column_types.get(name)
        if kind is None:
            array = _inferred(cells, nulls)
        elif kind == pa.string():
            array = _text(cells, nulls)
        elif kind == pa.float64():
            array = _numbers(cells, nulls, pa.float64())
        else:  # booleans
            array = None
        if array is None:
            return None
        arrays.append(array)
    return pa.Table.from_arrays(arrays, names=list(columns))


def _text(cells: Any, nulls: tuple[str, ...]) -> Any:
    """A text column: the missing-value strings null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    missing = _missing(cells, nulls)
    return pc.if_else(missing, pa.scalar(None, pa.string()), cells) if _any(missing) else cells


def _inferred(cells: Any, nulls: tuple[str, ...]) -> Any:
    """A column whose type the typed reader infers: null, int64 or double (None for any other)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not _unsure(nulls, pa.int64()):  # no missing-value string reads as an integer: a cast that succeeds has none
        as_integers = _cast(cells, pa.int64())
        if as_integers is not None:
            return as_integers
    if not _unsure(nulls, pa.float64()):
        as_numbers = _cast(cells, pa.float64())
        if as_numbers is not None and not _has_nan(as_numbers):  # a missing-value string reads as NaN at most
            return as_numbers
    missing = _missing(cells, nulls)
    if _all(missing):
        return pa.chunked_array([pa.nulls(len(chunk)) for chunk in cells.chunks], type=pa.null())
    known = pc.if_else(missing, pa.scalar(None, pa.string()), cells) if _any(missing) else cells
    for kind in (pa.int64(), pa.float64()):
        as_kind = _cast(known, kind)
        if as_kind is not None:
            return as_kind
    return None


def _numbers(cells: Any, nulls: tuple[str, ...], kind: Any) -> Any:
    """A column of a fixed number type, the missing-value strings null (None if a cell is no number)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not _unsure(nulls, kind):
        as_numbers = _cast(cells, kind)
        if as_numbers is not None and not _has_nan(as_numbers):
            return as_numbers
    missing = _missing(cells, nulls)
    return _cast(pc.if_else(missing, pa.scalar(None, pa.string()), cells) if _any(missing) else cells, kind)


def _cast(cells: Any, kind: Any) -> Any:
    import pyarrow as pa

    try:
        return cells.cast(kind)
    except pa.ArrowInvalid:
        return None


def _missing(cells: Any, nulls: tuple[str, ...]) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.is_in(cells, value_set=pa.array(nulls, type=pa.string()))


def _any(mask: Any) -> bool:
    import pyarrow.compute as pc

    return bool(pc.any(mask).as_py())


def _all(mask: Any) -> bool:
    import pyarrow.compute as pc

    return bool(pc.all(mask).as_py())


def _has_nan(values: Any) -> bool:
    import pyarrow.compute as pc

    return bool(pc.any(pc.is_nan(values)).as_py())


@cache
def _unsure(nulls: tuple[str, ...], kind: Any) -> bool:
    """Whether a missing-value string casts to ``kind`` as something other than NaN, so that a successful cast with
    no NaN can still hide one (pandas' strings do not: "nan" and "NaN" read as NaN, the rest not as numbers)."""
    import math

    import pyarrow as pa

    for value in nulls:
        parsed = _cast(pa.chunked_array([pa.array([value], type=pa.string())]), kind)
        if parsed is not None and not (isinstance(parsed[0].as_py(), float) and math.isnan(parsed[0].as_py())):
            return True
    return False
