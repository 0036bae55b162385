"""What one host saw: rows and label counts or moments per split, distinct values and buckets per categorical
column; the summary (``summary.py``) is built from them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

DISTINCT_LIMIT = 100_000  # distinct values counted exactly per categorical column and host; beyond, "at least"


@dataclass
class SplitStats:
    """What one host wrote for one split: rows and label counts or label moments."""

    rows: int = 0
    label_counts: dict[int, int] = field(default_factory=dict)
    label_sum: float = 0.0
    label_sum_sq: float = 0.0
    label_min: float = math.inf
    label_max: float = -math.inf
    files: list[str] = field(default_factory=list)

    def add(self, labels: np.ndarray, classification: bool) -> None:
        self.rows += len(labels)
        if not len(labels):
            return
        if classification:
            classes = labels.astype(np.int64)
            if classes.min() >= 0 and classes.max() < len(classes):  # class indices: counted, not sorted
                counts = np.bincount(classes)
                values = np.flatnonzero(counts)
                counts = counts[values]
            else:
                values, counts = np.unique(classes, return_counts=True)
            for label, count in np.column_stack([values, counts]).tolist():
                self.label_counts[label] = self.label_counts.get(label, 0) + count
        as_double = labels.astype(np.float64)
        self.label_sum += float(as_double.sum())
        self.label_sum_sq += float((as_double * as_double).sum())
        self.label_min = min(self.label_min, float(as_double.min()))
        self.label_max = max(self.label_max, float(as_double.max()))


class CategoryStats:
    """Distinct values of one categorical column (exact up to DISTINCT_LIMIT) and the hash buckets they use."""

    def __init__(self, buckets: int):
        self.buckets = buckets
        self.values: set[int] = set()
        self.capped = False
        self.used = np.zeros(buckets, dtype=bool)

    def add(self, hashes: np.ndarray) -> None:
        self.used[(hashes % np.uint64(self.buckets)).astype(np.int64)] = True
        if not self.capped:
            self.values.update(hashes.tolist())
            if len(self.values) > DISTINCT_LIMIT:
                self.capped = True
                self.values = set(list(self.values)[:DISTINCT_LIMIT])

    def summary(self) -> dict[str, Any]:
        distinct, used = len(self.values), int(self.used.sum())
        return {
            "distinct_values": distinct,
            "distinct_values_capped": self.capped,
            "buckets_used": used,
            # values that share a bucket with another value of the column: their indicators are indistinguishable
            "values_in_shared_buckets": _values_in_shared_buckets(self.values, self.buckets),
            "used_buckets_bitmap": np.packbits(self.used).tobytes().hex(),
        }


def _values_in_shared_buckets(values: set[int], buckets: int) -> int:
    if not values:
        return 0
    _, counts = np.unique(np.array(sorted(values), dtype=np.uint64) % np.uint64(buckets), return_counts=True)
    return int(counts[counts > 1].sum())
