"""``statistics.json``: the data set's item count and each feature's statistics, in Model Monitor's format.

Numeric features (Integral, Fractional) get ``numerical_statistics``: ``common`` (``num_present``, ``num_missing``),
``mean``, ``sum``, ``std_dev`` (the population standard deviation), ``min``, ``max`` and a ``kll`` distribution
(10 equal-width buckets from min to max and the sketch itself); String (and Unknown) features get
``string_statistics``: ``common``, ``distinct_count`` and a ``categorical`` distribution of value counts, most
frequent first (at most ``MAX_CATEGORICAL_BUCKETS``). Numbers are typed as the analyzer writes them: counts of
present and missing values and the item count are integers; bucket counts, ``distinct_count`` and ``k`` doubles.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dataquality.kll import BUCKETS
from dataquality.profile import ColumnProfile
from dataquality.values import NUMERIC_TYPES

VERSION = 0.0
MAX_CATEGORICAL_BUCKETS = 1000


def statistics_document(profiles: Iterable[ColumnProfile], item_count: int) -> dict[str, Any]:
    return {
        "version": VERSION,
        "dataset": {"item_count": int(item_count)},
        "features": [feature_statistics(profile) for profile in profiles],
    }


def feature_statistics(profile: ColumnProfile) -> dict[str, Any]:
    common = {"num_present": profile.present, "num_missing": profile.missing}
    kind = profile.inferred_type
    if kind in NUMERIC_TYPES and profile.count:
        sketch = profile.sketch
        return {
            "name": profile.name,
            "inferred_type": kind,
            "numerical_statistics": {
                "common": common,
                "mean": profile.total / profile.count,
                "sum": profile.total,
                "std_dev": profile.std_dev,
                "min": profile.minimum,
                "max": profile.maximum,
                "distribution": {
                    "kll": {
                        "buckets": sketch.buckets(profile.minimum, profile.maximum, BUCKETS),
                        "sketch": {
                            "parameters": {"c": sketch.shrinking_factor, "k": float(sketch.sketch_size)},
                            "data": sketch.data,
                        },
                    }
                },
            },
        }
    ranked = sorted(profile.categories.items(), key=lambda item: (-item[1], item[0]))
    return {
        "name": profile.name,
        "inferred_type": kind,
        "string_statistics": {
            "common": common,
            "distinct_count": float(len(ranked)),
            "distribution": {
                "categorical": {
                    "buckets": [{"value": value, "count": count} for value, count in ranked[:MAX_CATEGORICAL_BUCKETS]]
                }
            },
        },
    }


def features_by_name(document: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """A ``statistics.json`` or ``constraints.json``'s features by name (empty for None)."""
    return {feature["name"]: feature for feature in (document or {}).get("features", []) if "name" in feature}


def categorical_counts(feature: dict[str, Any]) -> dict[str, float]:
    """A String feature's value counts from its categorical buckets."""
    buckets = (((feature.get("string_statistics") or {}).get("distribution") or {}).get("categorical") or {}).get(
        "buckets"
    )
    return {str(bucket["value"]): float(bucket["count"]) for bucket in buckets or []}
