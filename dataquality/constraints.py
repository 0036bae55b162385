"""``constraints.json``: the constraints the analyzer suggests from a data set's statistics.

Per feature its ``inferred_type``, ``completeness`` (the share of present values, 0..1), for numeric features
``num_constraints.is_non_negative`` (min >= 0) and for String features with repeated values (at most a tenth of the
distinct values seen only once, Deequ's categorical range rule) ``string_constraints.domains``, the values seen. The
``monitoring_config`` holds the analyzer's defaults: every value must have the baseline's type and lie in its domain
(thresholds 1.0), distributions are compared (Robust L-infinity distance, threshold 0.1; categorical ones by
L-infinity, threshold 0.1).
"""

from __future__ import annotations

import copy
from typing import Any

from dataquality.statistics import MAX_CATEGORICAL_BUCKETS, VERSION, categorical_counts
from dataquality.values import NUMERIC_TYPES, STRING_TYPE

DOMAIN_SINGLETON_RATIO = 0.1
MONITORING_CONFIG: dict[str, Any] = {
    "evaluate_constraints": "Enabled",
    "emit_metrics": "Enabled",
    "datatype_check_threshold": 1.0,
    "domain_content_threshold": 1.0,
    "distribution_constraints": {
        "perform_comparison": "Enabled",
        "comparison_threshold": 0.1,
        "comparison_method": "Robust",
        "categorical_comparison_threshold": 0.1,
        "categorical_drift_method": "LInfinity",
    },
}


def suggest_constraints(statistics: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": VERSION,
        "features": [feature_constraints(feature) for feature in statistics["features"]],
        "monitoring_config": copy.deepcopy(MONITORING_CONFIG),
    }


def feature_constraints(feature: dict[str, Any]) -> dict[str, Any]:
    kind = feature["inferred_type"]
    section = feature.get("numerical_statistics") or feature.get("string_statistics") or {}
    common = section.get("common") or {}
    present, missing = common.get("num_present", 0), common.get("num_missing", 0)
    suggested: dict[str, Any] = {
        "name": feature["name"],
        "inferred_type": kind,
        "completeness": present / (present + missing) if present + missing else 0.0,
    }
    if kind in NUMERIC_TYPES and "min" in section:
        suggested["num_constraints"] = {"is_non_negative": section["min"] >= 0}
    elif kind == STRING_TYPE:
        counts = categorical_counts(feature)
        complete = len(counts) == section.get("distinct_count") and len(counts) <= MAX_CATEGORICAL_BUCKETS
        singletons = sum(1 for count in counts.values() if count == 1)
        if counts and complete and singletons <= DOMAIN_SINGLETON_RATIO * len(counts):
            suggested["string_constraints"] = {"domains": sorted(counts)}
    return suggested
