"""``constraint_violations.json``: the current data set checked against a baseline's constraints and statistics.

The six documented checks, per baseline feature in the constraints' order, then the extra columns:
- ``missing_column_check``: a baseline feature the data set does not have;
- ``data_type_check``: fewer than ``datatype_check_threshold`` of the present values have the baseline's type;
- ``completeness_check``: the share of present values is below the baseline's ``completeness``;
- ``categorical_values_check``: fewer than ``domain_content_threshold`` of a String feature's values are in the
  baseline's ``domains``;
- ``baseline_drift_check``: the distance between the baseline's distribution (``baseline_statistics``) and the
  current one exceeds ``comparison_threshold`` (numeric) or ``categorical_comparison_threshold`` (String);
- ``extra_column_check``: a column the baseline does not have.
``evaluate_constraints: Disabled`` (for the data set, or a feature's ``monitoringConfigOverrides`` /
``monitoring_config_overrides``) turns a feature's checks off; ``perform_comparison: Disabled`` the drift check.
The data type check's description is the analyzer's own wording; the others' wording is this module's (no public
sample shows them; the drift check's follows the analyzer's "Baseline drift distance: d exceeds threshold: t").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dataquality import AnalyzerError
from dataquality.distance import categorical_distance, numerical_distance
from dataquality.jackson import java_double
from dataquality.kll import SHRINKING_FACTOR, SKETCH_SIZE, KLLSketch
from dataquality.profile import ColumnProfile
from dataquality.statistics import categorical_counts, features_by_name
from dataquality.values import NUMERIC_TYPES, STRING_TYPE, matching

CHECK_TYPES = (
    "data_type_check",
    "completeness_check",
    "baseline_drift_check",
    "missing_column_check",
    "extra_column_check",
    "categorical_values_check",
)
CATEGORICAL_DRIFT_METHODS = ("LInfinity",)
SHOWN_UNKNOWN_VALUES = 5


def violation(feature: str, check: str, description: str) -> dict[str, str]:
    return {"feature_name": feature, "constraint_check_type": check, "description": description}


def _percent(share: float) -> str:
    return java_double(share * 100.0) + "%"


def _enabled(value: Any) -> bool:
    return str(value if value is not None else "Enabled") != "Disabled"


def check(
    profiles: Mapping[str, ColumnProfile],
    constraints: dict[str, Any],
    baseline_statistics: dict[str, Any] | None,
    categorical_drift_method: str | None = None,
) -> list[dict[str, str]]:
    """Every violation of ``constraints`` (and of ``baseline_statistics``' distributions) by the current data."""
    config = constraints.get("monitoring_config") or {}
    if not _enabled(config.get("evaluate_constraints")):
        return []
    distribution = config.get("distribution_constraints") or {}
    method = distribution.get("comparison_method", "Robust")
    categorical_method = categorical_drift_method or distribution.get("categorical_drift_method", "LInfinity")
    if categorical_method not in CATEGORICAL_DRIFT_METHODS:
        raise AnalyzerError(
            f"categorical_drift_method {categorical_method!r}: only {', '.join(CATEGORICAL_DRIFT_METHODS)} is "
            "computed locally (the analyzer also offers ChiSquared)"
        )
    compare = _enabled(distribution.get("perform_comparison"))
    baseline_features = features_by_name(baseline_statistics)
    found: list[dict[str, str]] = []
    expected = [feature for feature in constraints.get("features", []) if "name" in feature]
    for feature in expected:
        name = feature["name"]
        overrides = feature.get("monitoringConfigOverrides") or (feature.get("string_constraints") or {}).get(
            "monitoring_config_overrides"
        )
        if not _enabled((overrides or {}).get("evaluate_constraints")):
            continue
        profile = profiles.get(name)
        if profile is None:
            found.append(
                violation(
                    name,
                    "missing_column_check",
                    f"Column {name!r} of the baseline is missing: the current dataset has {len(profiles)} "
                    f"column(s), the baseline constraints {len(expected)}.",
                )
            )
            continue
        found += _type_check(profile, feature, float(config.get("datatype_check_threshold", 1.0)))
        found += _completeness_check(profile, feature)
        found += _domain_check(profile, feature, float(config.get("domain_content_threshold", 1.0)))
        if compare and name in baseline_features:
            found += _drift_check(profile, baseline_features[name], distribution, method)
    known = {feature["name"] for feature in expected}
    for name in profiles:
        if name not in known:
            found.append(
                violation(
                    name,
                    "extra_column_check",
                    f"Column {name!r} is not in the baseline: the current dataset has {len(profiles)} column(s), "
                    f"the baseline constraints {len(expected)}.",
                )
            )
    return found


def _type_check(profile: ColumnProfile, feature: dict[str, Any], threshold: float) -> list[dict[str, str]]:
    expected = feature.get("inferred_type")
    if expected not in (*NUMERIC_TYPES, STRING_TYPE) or not profile.present:
        return []
    share = matching(profile.type_counts, expected) / profile.present
    if share >= threshold:
        return []
    return [
        violation(
            profile.name,
            "data_type_check",
            f"Data type match requirement is not met. Expected data type: {expected}, Expected match: "
            f"{_percent(threshold)}. Observed: Only {_percent(share)} of data is {expected}.",
        )
    ]


def _completeness_check(profile: ColumnProfile, feature: dict[str, Any]) -> list[dict[str, str]]:
    expected = feature.get("completeness")
    rows = profile.present + profile.missing
    if expected is None or not rows:
        return []
    share = profile.present / rows
    if share >= float(expected):
        return []
    return [
        violation(
            profile.name,
            "completeness_check",
            f"Data completeness requirement is not met. Expected completeness: {_percent(float(expected))}. "
            f"Observed: Only {_percent(share)} of data is present ({profile.missing} of {rows} missing).",
        )
    ]


def _domain_check(profile: ColumnProfile, feature: dict[str, Any], threshold: float) -> list[dict[str, str]]:
    domain = (feature.get("string_constraints") or {}).get("domains")
    if not domain or not profile.present or profile.domain is None:
        return []
    share = profile.in_domain / profile.present
    if share >= threshold:
        return []
    unknown = [(value, count) for value, count in profile.categories.most_common() if value not in profile.domain]
    shown = ", ".join(f"{value!r} ({count})" for value, count in unknown[:SHOWN_UNKNOWN_VALUES])
    more = f" and {len(unknown) - SHOWN_UNKNOWN_VALUES} more" if len(unknown) > SHOWN_UNKNOWN_VALUES else ""
    return [
        violation(
            profile.name,
            "categorical_values_check",
            f"Categorical value requirement is not met. Expected: {_percent(threshold)} of values in the baseline "
            f"domain of {len(domain)} value(s). Observed: Only {_percent(share)} of data is in it; values not in "
            f"it: {shown or 'none counted'}{more}.",
        )
    ]


def _drift_check(
    profile: ColumnProfile,
    baseline: dict[str, Any],
    distribution: dict[str, Any],
    method: str,
) -> list[dict[str, str]]:
    current_type, baseline_type = profile.inferred_type, baseline.get("inferred_type")
    if baseline_type in NUMERIC_TYPES and current_type in NUMERIC_TYPES and profile.count:
        kll = ((baseline.get("numerical_statistics") or {}).get("distribution") or {}).get("kll") or {}
        sketch = kll.get("sketch") or {}
        parameters = sketch.get("parameters") or {}
        reference = KLLSketch.from_data(
            sketch.get("data") or [], parameters.get("k", SKETCH_SIZE), parameters.get("c", SHRINKING_FACTOR)
        )
        distance = numerical_distance(reference, profile.sketch, method)
        threshold = float(distribution.get("comparison_threshold", 0.1))
    elif baseline_type == STRING_TYPE and current_type == STRING_TYPE:
        distance = categorical_distance(categorical_counts(baseline), profile.categories, method)
        threshold = float(distribution.get("categorical_comparison_threshold", 0.1))
    else:
        return []  # a type change is the data type check's
    if distance <= threshold:
        return []
    return [
        violation(
            profile.name,
            "baseline_drift_check",
            f"Baseline drift distance: {java_double(distance)} exceeds threshold: {java_double(threshold)}",
        )
    ]
