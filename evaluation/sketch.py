"""Fixed-size summaries of a test split too large to keep record by record (past ``collect.MAX_EXACT_RECORDS``).

What stays exact: every count (the confusion matrix and every metric computed from it), and the regression sums
(mae, mse, rmse, r2, from float64 running sums shifted by the first label so r2 loses no precision).

What is approximate:
- **AUC and the curves** come from a histogram of the scores per class, ``HISTOGRAM_BINS`` equal bins of the
  probability (a margin is binned by its logistic, a monotone map, so the order is kept). Pairs in different bins are
  ordered exactly; the pairs inside one bin are counted as ties (half), so the AUC is off by at most half the share
  of (positive, negative) pairs that share a bin: ``auc_error_bound`` = sum over bins of positives x negatives /
  (2 P N), computed from the histogram and written in the report's ``sketch`` section. Curve points are the bin edges.
- **Standard deviations** are an online Poisson bootstrap: in every round each record weighs Poisson(1) (drawn
  chunk by chunk from one generator seeded with ``--seed``), which approximates resampling n of n records with
  replacement without knowing n in advance or copying any record; each round keeps its own confusion counts,
  histogram or sums. (Below the cap the exact multinomial bootstrap of ``metrics.bootstrap_standard_deviations``
  is kept, so small reports are what they were; the two estimate the same deviation.)
- **The regression prediction sample** is a uniform sample of ``MAX_PREDICTION_SAMPLE`` records: each record draws
  a random key, the smallest keys are kept (a bottom-k sample), then put back in record order.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from containerlib.names import BINARY_CLASSIFIER, MULTICLASS_CLASSIFIER
from evaluation.metrics import (
    MIN_RECORDS_FOR_STANDARD_DEVIATION,
    binary_scalars,
    multiclass_scalars,
)

HISTOGRAM_BINS = 1 << 14  # per class and per bootstrap round: 30 rounds x 2 classes x 16384 x 8 B = 7.9 MB
MAX_PREDICTION_SAMPLE = 1000


def score_bins(scores: np.ndarray, kind: str, bins: int = HISTOGRAM_BINS) -> np.ndarray:
    """Each score's bin, 0 for the highest scores (descending, as AUC ranks): probabilities by value, margins by
    their logistic (monotone, so the order of the scores is kept)."""
    if kind == "margin":
        with np.errstate(over="ignore"):
            scores = 1.0 / (1.0 + np.exp(-scores))
    index = np.floor(np.asarray(scores, dtype=np.float64) * bins).astype(np.int64)
    return bins - 1 - np.clip(index, 0, bins - 1)


def histogram_auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """P(positive scored above negative) + P(tie) / 2 with the bins (descending) as the ranks; NaN without a class."""
    total_positive, total_negative = positive.sum(), negative.sum()
    if total_positive == 0 or total_negative == 0:
        return math.nan
    positives_above = np.cumsum(positive) - positive
    return float(negative @ (positives_above + 0.5 * positive) / (total_positive * total_negative))


def histogram_auc_error_bound(positive: np.ndarray, negative: np.ndarray) -> float:
    """How far the histogram's AUC can be from the exact one: half the share of (positive, negative) pairs whose two
    scores share a bin (their order within the bin is unknown, each counted as a tie)."""
    total = float(positive.sum()) * float(negative.sum())
    return float(positive @ negative) / (2.0 * total) if total else math.nan


def deviations(samples: list[dict[str, float]], n: int) -> dict[str, float]:
    """The standard deviation of every metric over the bootstrap rounds (NaN below 200 records or 2 rounds, as
    Model Monitor; rounds where a metric is undefined are left out)."""
    if not samples:
        return {}
    result = {}
    for name in samples[0]:
        values = np.array([sample[name] for sample in samples], dtype=np.float64)
        values = values[np.isfinite(values)]
        enough = n >= MIN_RECORDS_FOR_STANDARD_DEVIATION and values.size >= 2
        result[name] = float(np.std(values, ddof=1)) if enough else math.nan
    return result


class PoissonRounds:
    """Each record's weight in every bootstrap round, Poisson(1), drawn chunk by chunk from one seeded generator."""

    def __init__(self, rounds: int, seed: int) -> None:
        self.rounds = rounds if rounds >= 2 else 0
        self.generator = np.random.default_rng(seed)

    def weights(self, n: int) -> Iterator[np.ndarray]:
        """Every round's float64 weights of the next n records, one round at a time (memory: one round's)."""
        for _ in range(self.rounds):
            yield self.generator.poisson(1.0, size=n).astype(np.float64)


class ClassifierSketch:
    """Confusion counts (and, for a binary classifier, score histograms per class), exact and per bootstrap round."""

    def __init__(self, predictor_type: str, classes: int, kind: str, rounds: int, seed: int) -> None:
        self.predictor_type, self.classes, self.kind = predictor_type, classes, kind
        self.poisson = PoissonRounds(rounds, seed)
        self.count = 0
        self.matrix = np.zeros(classes * classes, dtype=np.int64)
        self.round_matrices = np.zeros((self.poisson.rounds, classes * classes))
        self.binary = predictor_type == BINARY_CLASSIFIER
        bins = 2 * HISTOGRAM_BINS if self.binary else 0
        self.histogram = np.zeros(bins, dtype=np.int64)  # label 0's bins, then label 1's
        self.round_histograms = np.zeros((self.poisson.rounds, bins))

    def add(self, labels: np.ndarray, scores: np.ndarray, predicted: np.ndarray) -> None:
        """One chunk of records: integer labels, scores (binary: (n,); multiclass: unused), predicted labels."""
        labels = labels.astype(np.int64)
        cells = labels * self.classes + predicted.astype(np.int64)
        size = self.classes * self.classes
        self.matrix += np.bincount(cells, minlength=size)
        slots = labels * HISTOGRAM_BINS + score_bins(scores, self.kind) if self.binary else None
        if slots is not None:
            self.histogram += np.bincount(slots, minlength=2 * HISTOGRAM_BINS)
        for index, weights in enumerate(self.poisson.weights(len(labels))):
            self.round_matrices[index] += np.bincount(cells, weights=weights, minlength=size)
            if slots is not None:
                self.round_histograms[index] += np.bincount(slots, weights=weights, minlength=2 * HISTOGRAM_BINS)
        self.count += len(labels)

    def confusion(self) -> np.ndarray:
        return self.matrix.reshape(self.classes, self.classes)

    def _scalars(self, matrix: np.ndarray, histogram: np.ndarray | None) -> dict[str, float]:
        matrix = matrix.reshape(self.classes, self.classes)
        if histogram is None:
            return multiclass_scalars(matrix)
        return binary_scalars(matrix, histogram_auc(histogram[HISTOGRAM_BINS:], histogram[:HISTOGRAM_BINS]))

    def values_and_deviations(self) -> tuple[dict[str, float], dict[str, float]]:
        histogram = self.histogram.astype(np.float64) if self.binary else None
        values = self._scalars(self.matrix, histogram)
        samples = [
            self._scalars(self.round_matrices[index], self.round_histograms[index] if self.binary else None)
            for index in range(self.poisson.rounds)
        ]
        found = deviations(samples, self.count)
        return values, {name: found.get(name, math.nan) for name in values}

    def curves(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(false positive rates, true positive rates, precisions, recalls, thresholds) at every used bin's lower
        edge, from the highest scores down: the ROC curve as scikit-learn's roc_curve lays it out (starting at 0, 0),
        the precision-recall points as ``report.precision_recall_points`` does (ascending recall, no made-up end),
        each threshold the bin's lower edge on the probability scale (a margin: its logistic)."""
        positive = self.histogram[HISTOGRAM_BINS:].astype(np.float64)
        negative = self.histogram[:HISTOGRAM_BINS].astype(np.float64)
        used = (positive + negative) > 0
        true_positives, false_positives = np.cumsum(positive)[used], np.cumsum(negative)[used]
        fpr = np.concatenate([[0.0], false_positives / max(negative.sum(), 1.0)])
        tpr = np.concatenate([[0.0], true_positives / max(positive.sum(), 1.0)])
        precision = true_positives / np.maximum(true_positives + false_positives, 1.0)
        recall = true_positives / max(positive.sum(), 1.0)
        edges = (HISTOGRAM_BINS - 1 - np.flatnonzero(used)) / HISTOGRAM_BINS
        return fpr, tpr, precision, recall, edges

    def description(self) -> dict[str, Any]:
        """The report's ``sketch`` section: which method, and the AUC's error bound."""
        section: dict[str, Any] = {"bootstrap": "poisson", "bootstrap_rounds": self.poisson.rounds}
        if self.binary:
            positive, negative = self.histogram[HISTOGRAM_BINS:], self.histogram[:HISTOGRAM_BINS]
            section.update(
                {
                    "auc": "histogram",
                    "histogram_bins": HISTOGRAM_BINS,
                    "auc_error_bound": histogram_auc_error_bound(positive.astype(float), negative.astype(float)),
                }
            )
        return section


class RegressionSketch:
    """Running sums of the labels (shifted by the first) and residuals, exact and per bootstrap round, and a uniform
    sample of (label, prediction) pairs."""

    SUMS = 5  # weight, shifted label, shifted label squared, squared residual, absolute residual

    def __init__(self, rounds: int, seed: int) -> None:
        self.poisson = PoissonRounds(rounds, seed)
        self.sample_generator = np.random.default_rng([seed, 1])
        self.count = 0
        self.shift: float | None = None
        self.sums = np.zeros(self.SUMS)
        self.round_sums = np.zeros((self.poisson.rounds, self.SUMS))
        self.sample_keys = np.empty(0)
        self.sample_rows = np.empty(0, dtype=np.int64)
        self.sample_labels = np.empty(0)
        self.sample_predictions = np.empty(0)

    def add(self, labels: np.ndarray, predictions: np.ndarray) -> None:
        labels = labels.astype(np.float64)
        if self.shift is None:
            self.shift = float(labels[0]) if labels.size else None
        shifted = labels - (self.shift or 0.0)
        residuals = labels - predictions
        columns = np.stack([np.ones(len(labels)), shifted, shifted**2, residuals**2, np.abs(residuals)], axis=1)
        self.sums += columns.sum(axis=0)
        for index, weights in enumerate(self.poisson.weights(len(labels))):
            self.round_sums[index] += weights @ columns
        self._sample(labels, predictions)
        self.count += len(labels)

    def _sample(self, labels: np.ndarray, predictions: np.ndarray) -> None:
        keys = np.concatenate([self.sample_keys, self.sample_generator.random(len(labels))])
        rows = np.concatenate([self.sample_rows, self.count + np.arange(len(labels))])
        kept_labels = np.concatenate([self.sample_labels, labels])
        kept_predictions = np.concatenate([self.sample_predictions, predictions])
        keep = np.argsort(keys, kind="stable")[:MAX_PREDICTION_SAMPLE]
        self.sample_keys, self.sample_rows = keys[keep], rows[keep]
        self.sample_labels, self.sample_predictions = kept_labels[keep], kept_predictions[keep]

    @staticmethod
    def _scalars(sums: np.ndarray) -> dict[str, float]:
        """mae, mse, rmse and r2 from the sums, as ``metrics.regression_scalars`` computes them from the records."""
        weight, label_sum, label_squares, residual_sum, absolute_sum = (float(value) for value in sums)
        if weight <= 0:
            return {"mae": math.nan, "mse": math.nan, "rmse": math.nan, "r2": math.nan}
        total_sum = max(label_squares - label_sum * label_sum / weight, 0.0)
        if total_sum > 0:
            r2 = 1.0 - residual_sum / total_sum
        else:
            r2 = 1.0 if residual_sum == 0 else 0.0
        mse = residual_sum / weight
        return {"mae": absolute_sum / weight, "mse": mse, "rmse": math.sqrt(mse), "r2": r2}

    def values_and_deviations(self) -> tuple[dict[str, float], dict[str, float]]:
        values = self._scalars(self.sums)
        found = deviations([self._scalars(sums) for sums in self.round_sums], self.count)
        return values, {name: found.get(name, math.nan) for name in values}

    def prediction_sample(self) -> dict[str, Any]:
        order = np.argsort(self.sample_rows)
        return {
            "item_count": self.count,
            "labels": [float(value) for value in self.sample_labels[order]],
            "predictions": [float(value) for value in self.sample_predictions[order]],
        }

    def description(self) -> dict[str, Any]:
        return {"bootstrap": "poisson", "bootstrap_rounds": self.poisson.rounds, "prediction_sample": "bottom-k"}


def new_sketch(predictor_type: str, classes: int, kind: str, rounds: int, seed: int) -> Any:
    """The sketch for the predictor type: a :class:`ClassifierSketch` or a :class:`RegressionSketch`."""
    if predictor_type in (BINARY_CLASSIFIER, MULTICLASS_CLASSIFIER):
        return ClassifierSketch(predictor_type, classes, kind, rounds, seed)
    return RegressionSketch(rounds, seed)
