"""Seeded hyperparameter search over a tuning job's ``ParameterRanges``, for the local Tuning step.

Two strategies, named for what they are:
- ``random``: every candidate drawn uniformly from the ranges (on their scale: linear, logarithmic or reverse
  logarithmic) by a generator seeded with the job's ``RandomSeed``. This is what the service's ``Random`` is.
- ``gp-ei``: a simple sequential model-based search standing in for the service's ``Bayesian`` (whose model is not
  public): an initial design (first the algorithm's own defaults, where the caller knows them and the centre of a
  range where not; then a Latin hypercube: every range cut into equal strata, one point in each, so a handful of
  points covers each range), then a Gaussian process (Matern 5/2 kernel on the
  unit cube, length scale chosen by marginal likelihood from a small grid, objective values rank-transformed)
  picks the candidates of the highest expected improvement among random and near-best points; a round of several
  parallel candidates is filled with the "constant liar" (each pick is assumed to score the best value so far).
Rounds are synchronous (a round's candidates depend only on earlier rounds), so a seed gives the same candidates
whatever the timing of the training jobs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

SCALINGS = ("Auto", "Linear", "Logarithmic", "ReverseLogarithmic")


class RangeError(ValueError):
    """A parameter range the search cannot use; the message names the hyperparameter and the problem."""


@dataclass(frozen=True)
class Dimension:
    """One hyperparameter: a numeric interval on a scale, or a list of categorical values."""

    name: str
    kind: str  # Continuous, Integer or Categorical
    low: float = 0.0
    high: float = 0.0
    scaling: str = "Linear"
    values: tuple[str, ...] = ()

    def value(self, unit: float) -> str:
        """The hyperparameter value (as the service passes it, a string) at ``unit`` in [0, 1]."""
        unit = min(max(float(unit), 0.0), 1.0)
        if self.kind == "Categorical":
            return self.values[min(int(unit * len(self.values)), len(self.values) - 1)]
        if self.scaling == "Logarithmic":
            number = math.exp(math.log(self.low) + unit * (math.log(self.high) - math.log(self.low)))
        elif self.scaling == "ReverseLogarithmic":  # dense near the top of a range inside [0, 1)
            top, bottom = math.log(1.0 - self.low), math.log(1.0 - self.high)
            number = 1.0 - math.exp(top + unit * (bottom - top))
        else:
            number = self.low + unit * (self.high - self.low)
        number = min(max(number, self.low), self.high)
        if self.kind == "Integer":
            return str(int(min(max(round(number), math.ceil(self.low)), math.floor(self.high))))
        return f"{number:.6g}"

    def unit(self, text: str) -> float | None:
        """Where a value lies in [0, 1] (clipped to the range), or None when it is not a value of this range."""
        if self.kind == "Categorical":
            return (self.values.index(text) + 0.5) / len(self.values) if text in self.values else None
        try:
            number = min(max(float(text), self.low), self.high)
        except (TypeError, ValueError):
            return None
        if self.high == self.low:
            return 0.5
        if self.scaling == "Logarithmic":
            return (math.log(number) - math.log(self.low)) / (math.log(self.high) - math.log(self.low))
        if self.scaling == "ReverseLogarithmic":
            top, bottom = math.log(1.0 - self.low), math.log(1.0 - self.high)
            return (math.log(1.0 - number) - top) / (bottom - top)
        return (number - self.low) / (self.high - self.low)


def _number(text: Any, name: str, what: str) -> float:
    try:
        number = float(text)
    except (TypeError, ValueError):
        raise RangeError(f"hyperparameter range {name}: {what} {text!r} is not a number") from None
    if not math.isfinite(number):
        raise RangeError(f"hyperparameter range {name}: {what} {text!r} is not finite")
    return number


def _numeric(kind: str, entry: Mapping[str, Any]) -> Dimension:
    name = str(entry.get("Name"))
    low, high = _number(entry.get("MinValue"), name, "MinValue"), _number(entry.get("MaxValue"), name, "MaxValue")
    if low > high:
        raise RangeError(f"hyperparameter range {name}: MinValue {low:g} is above MaxValue {high:g}")
    if kind == "Integer" and math.ceil(low) > math.floor(high):
        raise RangeError(f"hyperparameter range {name}: no integer between {low:g} and {high:g}")
    scaling = entry.get("ScalingType", "Auto")
    if scaling not in SCALINGS:
        raise RangeError(f"hyperparameter range {name}: ScalingType {scaling!r} is not one of {', '.join(SCALINGS)}")
    if scaling == "Auto":  # the service picks a scale itself; locally: logarithmic for wide positive ranges
        scaling = "Logarithmic" if low > 0 and high >= 100 * low else "Linear"
    if scaling == "Logarithmic" and low <= 0:
        raise RangeError(f"hyperparameter range {name}: a logarithmic scale needs MinValue > 0, got {low:g}")
    if scaling == "ReverseLogarithmic" and not (0 <= low and high < 1):
        raise RangeError(f"hyperparameter range {name}: a reverse logarithmic scale needs 0 <= values < 1")
    return Dimension(name, kind, low, high, scaling)


def dimensions(ranges: Mapping[str, Any]) -> list[Dimension]:
    """The dimensions of ``ParameterRanges`` (integer, continuous, then categorical, each in the given order)."""
    found: list[Dimension] = []
    for entry in ranges.get("IntegerParameterRanges") or []:
        found.append(_numeric("Integer", entry))
    for entry in ranges.get("ContinuousParameterRanges") or []:
        found.append(_numeric("Continuous", entry))
    for entry in ranges.get("CategoricalParameterRanges") or []:
        values = tuple(str(value) for value in entry.get("Values") or [])
        if not values:
            raise RangeError(f"hyperparameter range {entry.get('Name')}: no Values")
        found.append(Dimension(str(entry.get("Name")), "Categorical", values=values))
    names = [dimension.name for dimension in found]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise RangeError(f"hyperparameter range(s) given twice: {', '.join(duplicates)}")
    if not found:
        raise RangeError("ParameterRanges holds no range to search")
    return found


@dataclass(frozen=True)
class Observation:
    """A finished candidate: its point in the unit cube and its objective (None when it gave none)."""

    point: np.ndarray
    objective: float | None


class Search:
    """Proposes candidates round by round; ``minimize`` says which way the objective is better."""

    def __init__(
        self,
        strategy: str,
        space: Sequence[Dimension],
        seed: int,
        minimize: bool,
        max_jobs: int,
        defaults: Mapping[str, str] | None = None,
    ) -> None:
        if strategy not in ("random", "gp-ei"):
            raise ValueError(f"unknown search strategy {strategy!r}")
        self.strategy = strategy
        self.space = list(space)
        self.rng = np.random.default_rng(seed)
        self.minimize = minimize
        # the initial design: enough points for the model to say something, at most half the budget
        self.initial = min(len(self.space) + 1, max(2, max_jobs // 2))
        self.design = self._initial_design(defaults or {}) if strategy == "gp-ei" else []

    def point_values(self, point: np.ndarray) -> dict[str, str]:
        """The hyperparameters of a point."""
        return {dimension.name: dimension.value(unit) for dimension, unit in zip(self.space, point, strict=True)}

    def propose(self, count: int, observations: Sequence[Observation]) -> list[np.ndarray]:
        """The next ``count`` points, given every finished candidate so far."""
        if self.strategy == "random":
            return [self.rng.random(len(self.space)) for _ in range(count)]
        scored = [item for item in observations if item.objective is not None]
        if len(observations) < len(self.design) or len(scored) < 2:
            start = len(observations)
            picks = self.design[start : start + count]
            return picks + [self.rng.random(len(self.space)) for _ in range(count - len(picks))]
        points = np.array([item.point for item in observations])
        worst = max(scored, key=lambda item: self._loss(item.objective)).objective
        # a job without an objective counts as the worst one seen, so the search moves away from it
        losses = np.array([self._loss(worst if item.objective is None else item.objective) for item in observations])
        picks: list[np.ndarray] = []
        for _ in range(count):
            pick = self._best_expected_improvement(points, losses)
            picks.append(pick)
            points = np.vstack([points, pick])
            losses = np.append(losses, losses.min())  # the constant liar
        return picks

    def _initial_design(self, defaults: Mapping[str, str]) -> list[np.ndarray]:
        """The defaults (else the centre of a range: the middle of a logarithmic range is its geometric mean; a
        categorical range's first value), then a Latin hypercube of ``initial - 1`` points."""
        dims, count = len(self.space), self.initial - 1
        strata = np.array([self.rng.permutation(count) for _ in range(dims)]).T  # (count, dims)
        hypercube = (strata + self.rng.random((count, dims))) / count
        start = []
        for dimension in self.space:
            known = dimension.unit(defaults[dimension.name]) if dimension.name in defaults else None
            start.append(known if known is not None else 0.0 if dimension.kind == "Categorical" else 0.5)
        return [np.array(start), *hypercube]

    def _loss(self, objective: float) -> float:
        return objective if self.minimize else -objective

    def _best_expected_improvement(self, points: np.ndarray, losses: np.ndarray) -> np.ndarray:
        ranks = np.argsort(np.argsort(losses, kind="stable"), kind="stable").astype(float)
        target = (ranks - ranks.mean()) / (ranks.std() or 1.0)  # robust to diverged runs' huge losses
        length = _length_scale(points, target)
        best = points[int(np.argmin(losses))]
        dims = len(self.space)
        candidates = np.vstack(
            [
                self.rng.random((1000, dims)),
                np.clip(best + self.rng.normal(0.0, 0.05, (500, dims)), 0.0, 1.0),
                np.clip(best + self.rng.normal(0.0, 0.15, (500, dims)), 0.0, 1.0),
            ]
        )
        mean, std = _posterior(points, target, candidates, length)
        improvement = target.min() - mean
        z = improvement / std
        expected = improvement * _normal_cdf(z) + std * _normal_pdf(z)
        return candidates[int(np.argmax(expected))]


_NOISE = 1e-4
_LENGTH_SCALES = (0.1, 0.2, 0.35, 0.6, 1.0)


def _matern52(a: np.ndarray, b: np.ndarray, length: float) -> np.ndarray:
    distance = np.sqrt(np.maximum(((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=2), 0.0)) / length
    root5 = math.sqrt(5.0) * distance
    return (1.0 + root5 + 5.0 / 3.0 * distance**2) * np.exp(-root5)


def _length_scale(points: np.ndarray, target: np.ndarray) -> float:
    """The grid length scale of the highest log marginal likelihood (scaled by the square root of the dimension)."""
    scale = math.sqrt(points.shape[1])
    best, best_likelihood = _LENGTH_SCALES[0] * scale, -math.inf
    for length in (value * scale for value in _LENGTH_SCALES):
        kernel = _matern52(points, points, length) + _NOISE * np.eye(len(points))
        try:
            factor = np.linalg.cholesky(kernel)
        except np.linalg.LinAlgError:
            continue
        alpha = np.linalg.solve(factor.T, np.linalg.solve(factor, target))
        likelihood = -0.5 * target @ alpha - np.log(np.diag(factor)).sum()
        if likelihood > best_likelihood:
            best, best_likelihood = length, likelihood
    return best


def _posterior(points: np.ndarray, target: np.ndarray, candidates: np.ndarray, length: float):
    kernel = _matern52(points, points, length) + _NOISE * np.eye(len(points))
    factor = np.linalg.cholesky(kernel + 1e-8 * np.eye(len(points)))
    cross = _matern52(points, candidates, length)
    alpha = np.linalg.solve(factor.T, np.linalg.solve(factor, target))
    mean = cross.T @ alpha
    v = np.linalg.solve(factor, cross)
    variance = np.maximum(1.0 - (v**2).sum(axis=0), 1e-12)
    return mean, np.sqrt(variance)


def _normal_pdf(z: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * z**2) / math.sqrt(2.0 * math.pi)


def _normal_cdf(z: np.ndarray) -> np.ndarray:
    from math import erf

    return 0.5 * (1.0 + np.vectorize(erf)(z / math.sqrt(2.0)))
