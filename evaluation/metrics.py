"""Model-quality metrics as SageMaker Model Monitor computes them, from confusion counts or residuals, each also
under bootstrap resamples given as record weights (so a resample costs no copy of the data)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from containerlib.names import BASELINE_SUFFIX

# Model Monitor reports a standard deviation only from 200 records up; this report gives one at every size (from 2
# records: a smaller test split, where the noise matters most, is exactly where a reader needs it) and says how it was
# made (``report.uncertainty_section``), with analytic standard errors beside the bootstrap's.
MIN_RECORDS_FOR_STANDARD_DEVIATION = 2
F_BETAS = {"f0_5": 0.5, "f1": 1.0, "f2": 2.0}


def ratio(numerator: float, denominator: float) -> float:
    """numerator / denominator, 0 when the denominator is 0 (scikit-learn's zero_division=0)."""
    return float(numerator) / float(denominator) if denominator else 0.0


def f_beta(precision: float, recall: float, beta: float) -> float:
    return ratio((1 + beta**2) * precision * recall, beta**2 * precision + recall)


def confusion(labels: np.ndarray, predicted: np.ndarray, classes: int, weights: np.ndarray | None = None) -> np.ndarray:
    """Confusion counts (weighted by ``weights`` when given): rows are the true class, columns the predicted class."""
    flat = labels.astype(np.int64) * classes + predicted.astype(np.int64)
    return np.bincount(flat, weights=weights, minlength=classes * classes).reshape(classes, classes)


@dataclass(frozen=True)
class RankedScores:
    """Scores sorted once and tied scores grouped, so the AUC under any record weights costs one pass, no sort."""

    group_of_record: np.ndarray  # per record: its score group, groups numbered by descending score
    groups: int

    @classmethod
    def of(cls, scores: np.ndarray) -> RankedScores:
        unique, group_of_record = np.unique(-scores, return_inverse=True)
        return cls(group_of_record.reshape(-1), len(unique))

    def auc(self, labels: np.ndarray, weights: np.ndarray | None = None) -> float:
        """P(positive scored above negative) + P(tie) / 2; NaN when a class is absent."""
        weights = np.ones(len(labels)) if weights is None else weights
        positive = np.bincount(self.group_of_record, weights=weights * labels, minlength=self.groups)
        negative = np.bincount(self.group_of_record, weights=weights * (1 - labels), minlength=self.groups)
        total_positive, total_negative = positive.sum(), negative.sum()
        if total_positive == 0 or total_negative == 0:
            return math.nan
        positives_above = np.cumsum(positive) - positive
        return float(negative @ (positives_above + 0.5 * positive) / (total_positive * total_negative))


def binary_scalars(matrix: np.ndarray, auc: float) -> dict[str, float]:
    """Every scalar binary metric from a 2x2 confusion matrix, and for each its best constant classifier: the
    constant prediction best for that metric (accuracy: the majority class; recall, precision and the F-scores:
    always positive, as always negative scores 0 on each)."""
    (tn, fp), (fn, tp) = matrix
    n = tn + fp + fn + tp
    positives, negatives = tp + fn, tn + fp
    precision, recall = ratio(tp, tp + fp), ratio(tp, positives)
    constant_precision, constant_recall = ratio(positives, n), 1.0 if positives else 0.0
    values = {
        "recall": recall,
        "precision": precision,
        "accuracy": ratio(tp + tn, n),
        f"recall{BASELINE_SUFFIX}": constant_recall,
        f"precision{BASELINE_SUFFIX}": constant_precision,
        f"accuracy{BASELINE_SUFFIX}": ratio(max(positives, negatives), n),
        "true_positive_rate": recall,
        "true_negative_rate": ratio(tn, negatives),
        "false_positive_rate": ratio(fp, negatives),
        "false_negative_rate": ratio(fn, positives),
        "auc": auc,
    }
    for name, beta in F_BETAS.items():
        values[name] = f_beta(precision, recall, beta)
    for name, beta in F_BETAS.items():
        values[f"{name}{BASELINE_SUFFIX}"] = f_beta(constant_precision, constant_recall, beta)
    return values


def _weighted_scalars(matrix: np.ndarray, prefix: str = "") -> dict[str, float]:
    """Accuracy and support-weighted recall, precision and F-scores from a confusion matrix."""
    n = matrix.sum()
    support = matrix.sum(axis=1)
    predicted_counts = matrix.sum(axis=0)
    correct = np.diag(matrix)
    recall = np.divide(correct, support, out=np.zeros(len(correct)), where=support > 0)
    precision = np.divide(correct, predicted_counts, out=np.zeros(len(correct)), where=predicted_counts > 0)
    weights = support / n
    values = {
        f"accuracy{prefix}": ratio(correct.sum(), n),
        f"weighted_recall{prefix}": float(weights @ recall),
        f"weighted_precision{prefix}": float(weights @ precision),
    }
    for name, beta in F_BETAS.items():
        denominator = beta**2 * precision + recall
        f_scores = np.divide(
            (1 + beta**2) * precision * recall, denominator, out=np.zeros(len(correct)), where=denominator > 0
        )
        values[f"weighted_{name}{prefix}"] = float(weights @ f_scores)
    return values


def multiclass_scalars(matrix: np.ndarray) -> dict[str, float]:
    """Every scalar multiclass metric; the best constant classifier always predicts the most frequent class."""
    support = matrix.sum(axis=1)
    constant = np.zeros_like(matrix)
    constant[:, int(np.argmax(support))] = support
    return {**_weighted_scalars(matrix), **_weighted_scalars(constant, BASELINE_SUFFIX)}


def regression_scalars(
    labels: np.ndarray, predictions: np.ndarray, weights: np.ndarray | None = None
) -> dict[str, float]:
    """mae, mse, rmse and r2 (r2 as scikit-learn: 1 for a perfect fit of constant labels, else 0 then)."""
    weights = np.ones(len(labels)) if weights is None else weights
    total_weight = weights.sum()
    residuals = labels - predictions
    residual_sum = float(weights @ residuals**2)
    mean_label = float(weights @ labels) / total_weight
    total_sum = float(weights @ (labels - mean_label) ** 2)
    if total_sum > 0:
        r2 = 1.0 - residual_sum / total_sum
    else:
        r2 = 1.0 if residual_sum == 0 else 0.0
    mse = residual_sum / total_weight
    return {"mae": float(weights @ np.abs(residuals)) / total_weight, "mse": mse, "rmse": math.sqrt(mse), "r2": r2}


def bootstrap_standard_deviations(
    scalars: Callable[[np.ndarray | None], dict[str, float]], n: int, rounds: int, seed: int
) -> dict[str, float]:
    """Standard deviation of every metric over ``rounds`` bootstrap resamples of the n records.

    A resample with replacement is handed to ``scalars`` as record weights (how often each record was drawn),
    which is the same resample without copying the data. NaN when there are fewer than 2 records or rounds < 2
    (Model Monitor gives none below 200 records; this report gives one at every size).
    """
    if n < MIN_RECORDS_FOR_STANDARD_DEVIATION or rounds < 2:
        return {name: math.nan for name in scalars(None)}
    generator = np.random.default_rng(seed)
    samples = [
        scalars(np.bincount(generator.integers(0, n, size=n), minlength=n).astype(np.float64)) for _ in range(rounds)
    ]
    deviations = {}
    for name in samples[0]:
        values = np.array([sample[name] for sample in samples], dtype=np.float64)
        values = values[np.isfinite(values)]
        deviations[name] = float(np.std(values, ddof=1)) if values.size >= 2 else math.nan
    return deviations


def hanley_mcneil_deviation(auc: float, positives: float, negatives: float) -> float:
    """The AUC's standard error by Hanley and McNeil (1982), from the AUC and the two class counts (NaN without
    both classes): exact enough at any test size, and what the bootstrap's deviation should come near."""
    if not (positives > 0 and negatives > 0 and math.isfinite(auc)):
        return math.nan
    q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
    variance = (auc * (1 - auc) + (positives - 1) * (q1 - auc**2) + (negatives - 1) * (q2 - auc**2)) / (
        positives * negatives
    )
    return math.sqrt(max(variance, 0.0))


def binomial_deviation(share: float, n: float) -> float:
    """The standard error of a share of n records (accuracy): sqrt(p (1 - p) / n); NaN without records."""
    return math.sqrt(max(share * (1 - share), 0.0) / n) if n > 0 else math.nan


def rmse_deviation(residuals: np.ndarray) -> float:
    """The RMSE's standard error by the delta method: the mean squared residual's (the squared residuals' standard
    deviation over sqrt(n)) divided by twice the RMSE; NaN below 2 records, 0 for a perfect fit."""
    squared = np.asarray(residuals, dtype=np.float64) ** 2
    if squared.size < 2:
        return math.nan
    rmse = math.sqrt(float(squared.mean()))
    if rmse == 0:
        return 0.0
    return float(squared.std(ddof=1)) / math.sqrt(squared.size) / (2 * rmse)
