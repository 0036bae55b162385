"""A column's profile, accumulated chunk by chunk: its type counts, then the statistics its type calls for.

A data set is read twice: the first pass counts each column's value types (so its inferred type is known), the
second accumulates what ``statistics.json`` reports for that type (count, sum, mean and population standard
deviation, min, max and a KLL sketch of a numeric column; the distinct values of a String column) and, for the
baseline's checks, how many values fall in the baseline's categorical domain.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from dataquality.kll import KLLSketch
from dataquality.values import (
    CODES,
    FRACTIONAL,
    INTEGRAL,
    MISSING,
    NUMERIC_TYPES,
    Classified,
    inferred_type,
)


@dataclass
class ColumnProfile:
    """What one column held, over every chunk of the data set."""

    name: str
    type_counts: np.ndarray = field(default_factory=lambda: np.zeros(CODES, dtype=np.int64))
    sketch: KLLSketch = field(default_factory=KLLSketch)
    count: int = 0  # numeric values seen by the second pass
    total: float = 0.0
    mean: float = 0.0
    squares: float = 0.0  # sum of squared deviations from the running mean (Welford)
    minimum: float = np.inf
    maximum: float = -np.inf
    categories: Counter = field(default_factory=Counter)
    domain: frozenset[str] | None = None  # the baseline's categorical domain, when it has one
    in_domain: int = 0

    @property
    def inferred_type(self) -> str:
        return inferred_type(self.type_counts)

    @property
    def present(self) -> int:
        return int(self.type_counts[1:].sum())

    @property
    def missing(self) -> int:
        return int(self.type_counts[MISSING])

    def count_types(self, values: Classified) -> None:
        """First pass: the chunk's type counts."""
        self.type_counts += values.counts()

    def count_missing(self, rows: int) -> None:
        """A chunk (a file) without this column: all of its rows are missing values here."""
        self.type_counts[MISSING] += rows

    def accumulate(self, values: Classified) -> None:
        """Second pass: the statistics of this column's type, and the baseline domain's share."""
        if self.inferred_type in NUMERIC_TYPES:
            numeric = (values.codes == INTEGRAL) | (values.codes == FRACTIONAL)
            self._add_numbers(values.numbers[numeric])
        else:
            self.categories.update(values.texts.dropna().tolist())
        if self.domain is not None:
            texts = values.texts.dropna()
            self.in_domain += int(texts.isin(self.domain).sum())

    def _add_numbers(self, numbers: np.ndarray) -> None:
        """Count, sum and Welford's running mean and squared deviations, value by value as Spark's aggregates
        update them (so the sum and standard deviation equal the analyzer's to the last digit)."""
        if not len(numbers):
            return
        self.sketch.update(numbers)
        count, total, mean, squares = self.count, self.total, self.mean, self.squares
        for value in numbers.tolist():
            count += 1
            total += value
            delta = value - mean
            mean += delta / count
            squares += delta * (value - mean)
        self.count, self.total, self.mean, self.squares = count, total, mean, squares
        self.minimum = min(self.minimum, float(numbers.min()))
        self.maximum = max(self.maximum, float(numbers.max()))

    @property
    def std_dev(self) -> float:
        return float(np.sqrt(self.squares / self.count)) if self.count else 0.0


def profiles_in_order(names: Iterable[str]) -> dict[str, ColumnProfile]:
    return {name: ColumnProfile(name) for name in names}
