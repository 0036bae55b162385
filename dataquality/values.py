"""Each value's type, as the analyzer (Deequ's ``DataType`` analyzer) classifies it, and a column's inferred type.

A value is missing (null, NaN, or empty text), Integral (``-12``), Fractional (``1.5``, ``28.0``, ``1e-7``),
Boolean (``true``/``false``) or String (anything else). Values are classified as text: a CSV field as written, a
JSON or Parquet value as its text (``28`` Integral, ``28.0`` Fractional), so a request sending ``28.0`` for a
column trained on ``28`` is seen as the analyzer would see it. A column's type is String when any value is a String
(or Booleans mix with numbers), else Boolean, else Fractional when any value is Fractional, else Integral when any
value is present, else Unknown; Model Monitor's files name Boolean columns String.

Every number compared (statistics, sketches, drift) is the value at float32 precision, what Linear Learner reads
(:func:`compared_numbers`, the one conversion, for the baseline and the traffic alike): the baseline's sample is
written as float32 text (``3.9``) while a client sends the float64 text of the same float32 (``3.900000095367432``),
and a column of few distinct values compared at two precisions drifted by the whole mass of each value.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

MISSING, INTEGRAL, FRACTIONAL, BOOLEAN, STRING = range(5)
CODES = 5
INTEGRAL_TYPE, FRACTIONAL_TYPE, STRING_TYPE, UNKNOWN_TYPE = "Integral", "Fractional", "String", "Unknown"
NUMERIC_TYPES = (INTEGRAL_TYPE, FRACTIONAL_TYPE)

_INTEGRAL = re.compile(r"[+-]? ?\d+")
_FRACTIONAL = re.compile(r"[+-]? ?(?:\d+\.\d*|\.\d+|\d+(?=[eE]))(?:[eE][+-]?\d+)?")
_BOOLEAN = re.compile(r"true|false", re.IGNORECASE)


@dataclass(frozen=True)
class Classified:
    """One chunk of one column: each value's type code, its number (NaN unless Integral or Fractional) and its text
    (None where missing)."""

    codes: np.ndarray  # uint8, one of MISSING..STRING per value
    numbers: np.ndarray  # float64
    texts: pd.Series  # object: the value's text, stripped; None where missing

    def counts(self) -> np.ndarray:
        """How many values of each type code."""
        return np.bincount(self.codes, minlength=CODES).astype(np.int64)


FLOAT32_MAX = float(np.finfo(np.float32).max)


def compared_numbers(numbers: np.ndarray) -> np.ndarray:
    """``numbers`` (float64) as the analyzer compares them: rounded to float32, the precision the model reads, so
    ``3.9`` and ``3.900000095367432`` are one value; a magnitude beyond float32's range is left as it is (never
    turned into an infinity)."""
    numbers = np.asarray(numbers, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = numbers.astype(np.float32).astype(np.float64)
    return np.where(np.abs(numbers) <= FLOAT32_MAX, rounded, numbers)


def as_text(value: Any) -> str | None:
    """A raw value's text: str stripped, a JSON/Parquet number or boolean as it would be written; None if missing."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        return text or None
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else repr(float(value))
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    text = str(value).strip()
    return text or None


def classify(column: pd.Series) -> Classified:
    """The type of every value of ``column`` (strings from CSV, Python values from JSON, typed Parquet columns)."""
    if pd.api.types.is_bool_dtype(column.dtype):
        texts = column.map(as_text).astype(object)
        codes = np.where(column.isna().to_numpy(), MISSING, BOOLEAN).astype(np.uint8)
        return Classified(codes, np.full(len(column), np.nan), texts)
    if pd.api.types.is_numeric_dtype(column.dtype):
        numbers = column.to_numpy(dtype=np.float64, na_value=np.nan)
        present = np.isfinite(numbers)
        kind = INTEGRAL if pd.api.types.is_integer_dtype(column.dtype) else FRACTIONAL
        codes = np.where(present, kind, MISSING).astype(np.uint8)
        texts = pd.Series([as_text(value) if ok else None for value, ok in zip(column.tolist(), present)], dtype=object)
        return Classified(codes, np.where(present, compared_numbers(numbers), np.nan), texts)
    # text columns (CSV fields, JSON values) value by value in one loop: pandas' string methods map a Python function
    # over the values too, with a Series built around each step, which cost more than the work on a small chunk
    texts_list = [as_text(value) for value in column.tolist()]
    codes = np.full(len(texts_list), MISSING, dtype=np.uint8)
    numbers = np.full(len(texts_list), np.nan)
    spots, numeric_texts = [], []
    for spot, text in enumerate(texts_list):
        if text is None:
            continue
        if _INTEGRAL.fullmatch(text) is not None:
            codes[spot] = INTEGRAL
        elif _FRACTIONAL.fullmatch(text) is not None:
            codes[spot] = FRACTIONAL
        else:
            codes[spot] = BOOLEAN if _BOOLEAN.fullmatch(text) is not None else STRING
            continue
        spots.append(spot)
        numeric_texts.append(text.replace(" ", ""))
    if spots:  # parsed by pandas as before: its parser's rounding is the analyzer's
        parsed = pd.to_numeric(pd.Series(numeric_texts, dtype=object), errors="coerce")
        numbers[spots] = compared_numbers(parsed.to_numpy(dtype=np.float64, na_value=np.nan))
    return Classified(codes, numbers, pd.Series(texts_list, dtype=object))


def inferred_type(counts: np.ndarray) -> str:
    """A column's type from its counts of each type code (Deequ's rule; Boolean columns are written String)."""
    if counts[STRING] or counts[BOOLEAN]:
        return STRING_TYPE
    if counts[FRACTIONAL]:
        return FRACTIONAL_TYPE
    if counts[INTEGRAL]:
        return INTEGRAL_TYPE
    return UNKNOWN_TYPE


def matching(counts: np.ndarray, expected: str) -> int:
    """How many present values have the ``expected`` type (an Integral value is a valid Fractional one, and every
    value is a valid String)."""
    present = int(counts[1:].sum())
    if expected == INTEGRAL_TYPE:
        return int(counts[INTEGRAL])
    if expected == FRACTIONAL_TYPE:
        return int(counts[INTEGRAL] + counts[FRACTIONAL])
    return present
