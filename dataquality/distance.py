"""Drift distances between a baseline's distribution and the current one, as Deequ's ``Distance`` computes them.

Numeric: the L-infinity distance between the two KLL sketches' CDFs (the two-sample Kolmogorov-Smirnov statistic).
Categorical (``LInfinity``): the largest difference between the two value frequencies, over the values of either.
``Robust`` (the analyzer's default ``comparison_method``) subtracts what two samples of these sizes differ by with
chance alone: ``max(0, d - 1.8 * sqrt((n + m) / (n m)))`` (c(alpha) = 1.8, alpha = 0.003); ``Simple`` is ``d``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from dataquality import AnalyzerError
from dataquality.kll import KLLSketch

C_ALPHA = 1.8
METHODS = ("Robust", "Simple")


def corrected(distance: float, n: float, m: float, method: str) -> float:
    """``distance`` with the sample-size correction of ``method``."""
    if method not in METHODS:
        raise AnalyzerError(f"comparison_method {method!r} is not one of {', '.join(METHODS)}")
    if method == "Simple" or n <= 0 or m <= 0:
        return distance
    return max(0.0, distance - C_ALPHA * math.sqrt((n + m) / (n * m)))


def numerical_distance(baseline: KLLSketch, current: KLLSketch, method: str) -> float:
    return corrected(baseline.cdf_distance(current), baseline.weight, current.weight, method)


def categorical_distance(baseline: Mapping[str, float], current: Mapping[str, float], method: str) -> float:
    n, m = float(sum(baseline.values())), float(sum(current.values()))
    if n <= 0 or m <= 0:
        return 0.0
    keys = set(baseline) | set(current)
    distance = max(abs(baseline.get(key, 0.0) / n - current.get(key, 0.0) / m) for key in keys)
    return corrected(distance, n, m, method)
