"""The analyzer's classification of text values (CSV fields, JSON values), done value by value in one loop, gives what
the column-wise pandas string methods it replaced gave: the same type codes, numbers and texts (issue 37)."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd

from dataquality.values import (
    _BOOLEAN,
    _FRACTIONAL,
    _INTEGRAL,
    BOOLEAN,
    FRACTIONAL,
    INTEGRAL,
    MISSING,
    STRING,
    as_text,
    classify,
    compared_numbers,
)

AWKWARD = [
    "12",
    " -12 ",
    "+ 7",
    "- 3",
    "1.5",
    "28.0",
    ".5",
    "5.",
    "1e-7",
    "3E+4",
    "1e",
    "e5",
    "TRUE",
    "false",
    "True ",
    "yes",
    "",
    "   ",
    None,
    float("nan"),
    "nan",
    "NaN",
    "inf",
    "-Infinity",
    "99999999999999999999",
    "1" * 400,
    "3.900000095367432",
    "١٢",
    "1,5",
    "0x1F",
    "--1",
    "1 2",
    "\u00a012",
    "é",
    7,
    2.5,
    True,
    [1, 2],
    {"a": 1},
]


def column_wise(column: pd.Series) -> tuple[np.ndarray, np.ndarray, list[object]]:
    """The classification of a text column as the analyzer made it before: pandas' string methods column by column."""
    texts = column.map(as_text).astype(object)
    texts = texts.where(texts.notna(), None)
    codes = np.full(len(texts), MISSING, dtype=np.uint8)
    numbers = np.full(len(texts), np.nan)
    present = texts.notna().to_numpy()
    if present.any():
        values = texts[present].astype(str)
        integral = values.str.fullmatch(_INTEGRAL).to_numpy(dtype=bool)
        fractional = ~integral & values.str.fullmatch(_FRACTIONAL).to_numpy(dtype=bool)
        boolean = ~integral & ~fractional & values.str.fullmatch(_BOOLEAN).to_numpy(dtype=bool)
        kinds = np.full(len(values), STRING, dtype=np.uint8)
        kinds[integral], kinds[fractional], kinds[boolean] = INTEGRAL, FRACTIONAL, BOOLEAN
        codes[present] = kinds
        numeric = integral | fractional
        if numeric.any():
            parsed = pd.to_numeric(values[numeric].str.replace(" ", "", regex=False), errors="coerce")
            spots = np.flatnonzero(present)[numeric]
            numbers[spots] = compared_numbers(parsed.to_numpy(dtype=np.float64, na_value=np.nan))
    return codes, numbers, list(texts)


def assert_same(column: pd.Series) -> None:
    classified = classify(column)
    codes, numbers, texts = column_wise(column)
    np.testing.assert_array_equal(classified.codes, codes)
    assert classified.codes.dtype == np.uint8
    np.testing.assert_array_equal(classified.numbers, numbers)  # NaN where NaN, equal bits elsewhere
    assert list(classified.texts) == texts
    assert classified.texts.dtype == object
    assert list(classified.texts.index) == list(range(len(column)))


def test_awkward_values_classify_as_before() -> None:
    assert_same(pd.Series(AWKWARD, dtype=object))
    codes = classify(pd.Series(["12", "1.5", "TRUE", "yes", "", None], dtype=object)).codes
    assert list(codes) == [INTEGRAL, FRACTIONAL, BOOLEAN, STRING, MISSING, MISSING]


def test_random_text_columns_classify_as_before() -> None:
    draw = random.Random(37)
    pieces = ["", " ", "+", "-", ".", "e", "E", "0", "1", "7", "9", "true", "x", "nan", "e-3", "00"]
    for _ in range(200):
        values: list[object] = [
            None if draw.random() < 0.05 else "".join(draw.choice(pieces) for _ in range(draw.randint(0, 6)))
            for _ in range(draw.randint(0, 40))
        ]
        assert_same(pd.Series(values, dtype=object))


def test_floats_written_as_text_round_to_float32_as_before() -> None:
    draw = np.random.default_rng(37)
    values = [repr(float(value)) for value in draw.normal(0, 1e6, 500)] + [f"{value:.9g}" for value in draw.random(500)]
    assert_same(pd.Series(values, dtype=object))


def test_an_empty_column() -> None:
    assert_same(pd.Series([], dtype=object))
