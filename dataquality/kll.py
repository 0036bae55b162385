"""Deequ's KLL quantile sketch (``QuantileNonSample``), the ``kll`` distribution of ``statistics.json``.

Level h holds items of weight 2^h; its capacity is ``2 * (ceil(k * c^h / 2) + 1)`` (k = 2048, c = 0.64, the
analyzer's parameters). Items enter level 0; when the sketch holds more items than its levels' total capacity, the
lowest full level is compacted: its items (an even number of them) sorted, every other one (from an offset that
alternates 0, 1, 1, 0, 0, 1 ... with each compaction of that level) promoted, an odd last item kept. This is
Deequ's algorithm step for step, so a sketch of fewer than 2,051 values is the values themselves, in input order,
as the analyzer's files show. Ranks weigh each item by its level; buckets count items in ``[low, high)``, the last
one ``[low, high]``, as Deequ's ``KLLSketch`` analyzer does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

SKETCH_SIZE = 2048
SHRINKING_FACTOR = 0.64
BUCKETS = 10  # "By default, we materialize the distribution in 10 buckets. This is not currently configurable."


class KLLSketch:
    """A KLL sketch of float values, updated in input order."""

    def __init__(self, sketch_size: int = SKETCH_SIZE, shrinking_factor: float = SHRINKING_FACTOR) -> None:
        self.sketch_size = sketch_size
        self.shrinking_factor = shrinking_factor
        self.levels: list[np.ndarray] = [np.empty(0)]
        self._compactions = [0]
        self._offsets = [0]
        self._size = 0

    @classmethod
    def from_data(cls, data: Sequence[Sequence[float]], sketch_size: float, shrinking_factor: float) -> KLLSketch:
        """A sketch read back from ``statistics.json`` (``sketch.data``, ``parameters.k`` and ``parameters.c``)."""
        sketch = cls(int(sketch_size), float(shrinking_factor))
        sketch.levels = [np.asarray(level, dtype=np.float64) for level in data] or [np.empty(0)]
        sketch._compactions = [0] * len(sketch.levels)
        sketch._offsets = [0] * len(sketch.levels)
        sketch._size = sum(len(level) for level in sketch.levels)
        return sketch

    def capacity(self, height: int) -> int:
        return 2 * (math.ceil(self.sketch_size * self.shrinking_factor**height / 2) + 1)

    def _total_capacity(self) -> int:
        return sum(self.capacity(height) for height in range(len(self.levels)))

    def update(self, values: np.ndarray) -> None:
        """Add ``values`` in order, compacting exactly when Deequ's one-at-a-time updates would."""
        values = np.asarray(values, dtype=np.float64)
        position = 0
        while position < len(values):
            # Deequ appends one item, then condenses once if the sketch holds more than its capacity
            take = max(1, self._total_capacity() - self._size + 1)
            block = values[position : position + take]
            self.levels[0] = np.concatenate([self.levels[0], block])
            self._size += len(block)
            position += len(block)
            if self._size > self._total_capacity():
                self._condense()

    def _condense(self) -> None:
        for height in range(len(self.levels)):
            if len(self.levels[height]) >= self.capacity(height):
                if height + 1 >= len(self.levels):
                    self.levels.append(np.empty(0))
                    self._compactions.append(0)
                    self._offsets.append(0)
                promoted = self._compact(height)
                self.levels[height + 1] = np.concatenate([self.levels[height + 1], promoted])
                self._size = sum(len(level) for level in self.levels)
                return

    def _compact(self, height: int) -> np.ndarray:
        buffer = self.levels[height]
        even = len(buffer) - len(buffer) % 2
        if self._compactions[height] % 2 == 1:
            self._offsets[height] = 1 - self._offsets[height]
        promoted = np.sort(buffer[:even], kind="stable")[self._offsets[height] : even : 2]
        self.levels[height] = buffer[even:].copy()  # the odd last item stays
        self._compactions[height] += 1
        return promoted

    @property
    def data(self) -> list[list[float]]:
        """``sketch.data``: the items of each level."""
        return [level.tolist() for level in self.levels]

    def _weighted(self) -> tuple[np.ndarray, np.ndarray]:
        """The items sorted, with the cumulative weight up to and including each."""
        items = np.concatenate(self.levels)
        weights = np.concatenate([np.full(len(level), 2.0**height) for height, level in enumerate(self.levels)])
        order = np.argsort(items, kind="stable")
        return items[order], np.cumsum(weights[order])

    @property
    def weight(self) -> float:
        """The number of values the sketch stands for."""
        return float(sum(len(level) * 2.0**height for height, level in enumerate(self.levels)))

    def rank(self, points: np.ndarray) -> np.ndarray:
        """Weight of items <= each point (Deequ's ``getRank``)."""
        items, cumulative = self._weighted()
        index = np.searchsorted(items, np.asarray(points, dtype=np.float64), side="right")
        return np.where(index > 0, cumulative[np.maximum(index - 1, 0)], 0.0) if len(items) else np.zeros(len(points))

    def rank_exclusive(self, points: np.ndarray) -> np.ndarray:
        """Weight of items < each point (Deequ's ``getRankExclusive``)."""
        items, cumulative = self._weighted()
        index = np.searchsorted(items, np.asarray(points, dtype=np.float64), side="left")
        return np.where(index > 0, cumulative[np.maximum(index - 1, 0)], 0.0) if len(items) else np.zeros(len(points))

    def buckets(self, minimum: float, maximum: float, count: int = BUCKETS) -> list[dict[str, float]]:
        """``count`` equal-width buckets from ``minimum`` to ``maximum`` with the weight of the items in each."""
        lows = [minimum + (maximum - minimum) * i / count for i in range(count)]
        highs = [minimum + (maximum - minimum) * (i + 1) / count for i in range(count)]
        below_low = self.rank_exclusive(np.array(lows))
        below_high = self.rank_exclusive(np.array(highs))
        below_high[-1] = self.rank(np.array(highs[-1:]))[0]
        return [
            {"lower_bound": float(low), "upper_bound": float(high), "count": float(end - start)}
            for low, high, start, end in zip(lows, highs, below_low, below_high)
        ]

    def cdf_distance(self, other: KLLSketch) -> float:
        """The largest difference between the two sketches' CDFs over every item of either (Deequ's L-infinity)."""
        keys = np.union1d(np.concatenate(self.levels), np.concatenate(other.levels))
        if not len(keys) or not self.weight or not other.weight:
            return 0.0
        return float(np.max(np.abs(self.rank(keys) / self.weight - other.rank(keys) / other.weight)))
