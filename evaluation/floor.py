"""The gate's automatic floor, what MetricThreshold -1 (the default) asks for: a floor that means the same for
AUC, accuracy and r2, where one fixed number cannot (0.6 is a weak AUC and a strong r2).

The model's gate metric must be
- better than the best constant predictor's on the same test split by more than ``GATE_DEVIATIONS`` of its standard
  deviations (AUC: 0.5; accuracy: the majority class's share; r2: 0, the test labels' mean); and
- no worse than the scikit-learn baseline's (fitted on the same train features, scored on the same test records) by
  more than ``GATE_DEVIATIONS`` standard deviations of the difference (the two deviations added in quadrature, a
  conservative estimate, as the two models' errors on the same records are correlated).

The floor is the higher of the two. A standard deviation is the report's bootstrap one; where that is not a number
(fewer than 2 bootstrap rounds) the analytic one (AUC: Hanley-McNeil; accuracy: binomial), else 0. Each margin is at
least one test record's worth (``resolution``: AUC 1 / the smaller class's count, accuracy 1 / the records, r2 0):
at the metric's bounds the bootstrap sees no noise (every resample of a perfect AUC is perfect), so a model one
record below a perfect baseline still passes, and a model of constant scores (AUC 0.5, deviation 0) still fails.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from containerlib.names import BASELINE_SUFFIX, GATE_METRICS, METRICS_SECTIONS, SKLEARN_BASELINE

GATE_DEVIATIONS = 2.0  # how many standard deviations: about 97.7% one-sided under a normal approximation
UNCERTAINTY = "standard_deviations"  # the report's section (report.UNCERTAINTY), its analytic deviations
DEFAULTS = "defaults"  # the report's untuned defaults' model beside a tuned one (evaluation/defaults.py)


@dataclass(frozen=True)
class AutomaticFloor:
    """The floor, its two parts and the words saying what each is."""

    value: float
    constant_value: float
    constant_floor: float
    baseline_floor: float | None
    words: str


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else math.nan


def metric_deviation(report: dict[str, Any], section: str, metric: str) -> float:
    """The gate metric's standard deviation in ``report``: the bootstrap's, else the analytic one, else 0."""
    deviation = _number((report.get(section) or {}).get(metric, {}).get("standard_deviation"))
    if math.isnan(deviation):
        analytic = ((report.get(UNCERTAINTY) or {}).get("analytic") or {}).get(metric) or {}
        deviation = _number(analytic.get("standard_deviation"))
    return 0.0 if math.isnan(deviation) else deviation


def resolution(report: dict[str, Any], predictor_type: str) -> float:
    """One test record's worth of the gate metric: AUC 1 / the smaller class's count (one record's rank moved past
    every record of the other class), accuracy 1 / the records, r2 0."""
    metric = GATE_METRICS[predictor_type]
    if metric == "r2":
        return 0.0
    matrix = report[METRICS_SECTIONS[predictor_type]].get("confusion_matrix") or {}
    counts = [sum(int(count) for count in row.values()) for row in matrix.values()]
    if metric == "auc":
        smaller = min(counts) if len(counts) == 2 else 0
        return 1.0 / smaller if smaller > 0 else 0.0
    total = sum(counts)
    return 1.0 / total if total > 0 else 0.0


def constant_value(report: dict[str, Any], predictor_type: str) -> float:
    """The best constant predictor's gate metric on the test split: AUC 0.5, the majority share, r2 0."""
    metric = GATE_METRICS[predictor_type]
    if metric == "auc":
        return 0.5
    if metric == "r2":
        return 0.0
    constant = _number(report[METRICS_SECTIONS[predictor_type]].get(f"{metric}{BASELINE_SUFFIX}", {}).get("value"))
    return 0.0 if math.isnan(constant) else constant


def automatic_floor(report: dict[str, Any], predictor_type: str) -> AutomaticFloor:
    """The automatic floor for this report (see the module docstring)."""
    section, metric = METRICS_SECTIONS[predictor_type], GATE_METRICS[predictor_type]
    deviation = metric_deviation(report, section, metric)
    constant = constant_value(report, predictor_type)
    step = resolution(report, predictor_type)
    constant_floor = constant + max(GATE_DEVIATIONS * deviation, step)
    k = f"{GATE_DEVIATIONS:g}"
    at_least = f", at least one record's worth {step:.3g}" if step else ""
    words = (
        f"the best constant predictor's {metric} {constant:.4g} plus {k} standard deviations ({deviation:.3g}) of "
        f"the model's{at_least} = {constant_floor:.4g}"
    )
    baseline_floor = None
    baseline = report.get(SKLEARN_BASELINE)
    if isinstance(baseline, dict):
        baseline_value = _number(baseline.get("gate", {}).get("value"))
        if not math.isnan(baseline_value):
            their_deviation = metric_deviation(baseline, section, metric)
            difference = math.sqrt(deviation**2 + their_deviation**2)
            baseline_floor = baseline_value - max(GATE_DEVIATIONS * difference, step)
            words += (
                f"; the scikit-learn baseline's {metric} {baseline_value:.4g} minus {k} standard deviations "
                f"({difference:.3g}) of the difference{at_least} = {baseline_floor:.4g}"
            )
    value = max(constant_floor, baseline_floor if baseline_floor is not None else -math.inf)
    return AutomaticFloor(value, constant, constant_floor, baseline_floor, f"the higher of {words}")


def defaults_floor(report: dict[str, Any], defaults: dict[str, Any], predictor_type: str) -> tuple[float, str]:
    """(floor, words): what the tuned model must reach to be kept, the defaults' gate value itself (``defaults``: the
    untuned model's report on the same test records); the words state the difference's noise (2 standard deviations,
    at least one test record's worth), so a reader sees whether the two differ beyond it."""
    metric, section = GATE_METRICS[predictor_type], METRICS_SECTIONS[predictor_type]
    value = float(defaults["gate"]["value"])
    noise = math.hypot(metric_deviation(report, section, metric), metric_deviation(defaults, section, metric))
    margin = max(GATE_DEVIATIONS * noise, resolution(report, predictor_type))
    words = (
        f"the untuned defaults' model's {metric} {value:.4g} on this test split (the difference's noise: "
        f"{GATE_DEVIATIONS:g} standard deviations, at least one record's worth, = {margin:.3g})"
    )
    return value, words
