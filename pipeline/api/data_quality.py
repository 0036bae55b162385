"""An execution's data-quality check, in one view: the baseline its DataQuality step calculated (a summary of each
feature), the baseline it was checked against, and the violations found; the same for a local execution and one on
SageMaker (from the QualityCheck step's metadata), and for ``llpipe monitor``'s report on served traffic."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["data_quality_view", "feature_summary"]

NUMERIC_TYPES = ("Integral", "Fractional")


def feature_summary(feature: Mapping[str, Any]) -> dict[str, Any]:
    """One feature of a ``statistics.json``: type, completeness and either mean/std/min/max or the top values."""
    section = feature.get("numerical_statistics") or feature.get("string_statistics") or {}
    common = section.get("common") or {}
    present, missing = int(common.get("num_present", 0)), int(common.get("num_missing", 0))
    summary: dict[str, Any] = {
        "name": feature.get("name"),
        "type": feature.get("inferred_type"),
        "completeness": present / (present + missing) if present + missing else None,
        "missing": missing,
    }
    if feature.get("inferred_type") in NUMERIC_TYPES and "numerical_statistics" in feature:
        summary.update({key: section.get(key) for key in ("mean", "std_dev", "min", "max")})
    else:
        buckets = ((section.get("distribution") or {}).get("categorical") or {}).get("buckets") or []
        summary["distinct_count"] = section.get("distinct_count")
        summary["top"] = [(bucket["value"], bucket["count"]) for bucket in buckets[:3]]
    return summary


def data_quality_view(properties: Mapping[str, Any], read_json: Callable[[str], Any]) -> dict[str, Any] | None:
    """The view of a QualityCheck step from its properties (local) or metadata (SageMaker); ``read_json`` reads an S3
    URI (None when the object is missing). None when the step calculated nothing."""
    statistics_uri = properties.get("CalculatedBaselineStatistics")
    if not statistics_uri:
        return None
    statistics = read_json(statistics_uri) or {}
    report_uri = properties.get("ViolationReport")
    report = read_json(report_uri) if report_uri else None
    return {
        "skipped": _flag(properties.get("SkipCheck")),
        "register_new_baseline": _flag(properties.get("RegisterNewBaseline")),
        "checked_against": properties.get("BaselineCheckedAgainst"),
        "statistics": statistics_uri,
        "constraints": properties.get("CalculatedBaselineConstraints"),
        "checked_statistics": properties.get("CheckedBaselineStatistics"),
        "drift_check_statistics": properties.get("BaselineUsedForDriftCheckStatistics"),
        "drift_check_constraints": properties.get("BaselineUsedForDriftCheckConstraints"),
        "violation_report": report_uri,
        "item_count": (statistics.get("dataset") or {}).get("item_count"),
        "features": [feature_summary(feature) for feature in statistics.get("features", [])],
        "violations": list(report.get("violations", [])) if isinstance(report, dict) else None,
    }


def _flag(value: Any) -> bool | None:
    return None if value is None else value is True or str(value).lower() == "true"
