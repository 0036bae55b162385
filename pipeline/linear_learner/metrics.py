"""Evaluation metrics with the service's names, and binary threshold calibration for several models at once."""

from __future__ import annotations

import numpy as np


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve (Mann-Whitney statistic with average ranks for ties); NaN for a single class."""
    positives = labels == 1
    n_pos = int(positives.sum())
    n_neg = labels.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    sorted_scores = scores[order]
    ranks = np.empty(scores.size, dtype=np.float64)
    # average rank of every group of equal scores
    boundaries = np.flatnonzero(np.diff(sorted_scores)) + 1
    starts = np.concatenate(([0], boundaries))
    ends = np.concatenate((boundaries, [scores.size]))
    average = (starts + ends + 1) / 2.0
    ranks[order] = np.repeat(average, ends - starts)
    return float((ranks[positives].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def binary_metrics(labels: np.ndarray, predicted: np.ndarray, scores: np.ndarray, beta: float) -> dict[str, float]:
    """Accuracy, F-beta, precision, recall and ROC AUC of 0/1 predictions."""
    labels = labels.astype(np.int64)
    predicted = predicted.astype(np.int64)
    tp = float(np.sum((predicted == 1) & (labels == 1)))
    fp = float(np.sum((predicted == 1) & (labels == 0)))
    fn = float(np.sum((predicted == 0) & (labels == 1)))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    b2 = beta * beta
    f_beta = (1 + b2) * precision * recall / (b2 * precision + recall) if precision + recall else 0.0
    return {
        "binary_classification_accuracy": float(np.mean(predicted == labels)),
        "binary_f_beta": f_beta,
        "precision": precision,
        "recall": recall,
        "roc_auc_score": roc_auc(labels, scores),
    }


def multiclass_metrics(labels: np.ndarray, probabilities: np.ndarray, top_k: int, beta: float) -> dict[str, float]:
    """Accuracy, top-k accuracy, macro precision/recall/F-beta and DCG of class probabilities."""
    labels = labels.astype(np.int64)
    classes = probabilities.shape[1]
    predicted = np.argmax(probabilities, axis=1)
    true_score = probabilities[np.arange(labels.size), labels]
    # rank of the true class (0 = best); ties count in the label's favour
    rank = np.sum(probabilities > true_score[:, None], axis=1)
    precisions, recalls, fs = [], [], []
    b2 = beta * beta
    for k in range(classes):
        tp = float(np.sum((predicted == k) & (labels == k)))
        fp = float(np.sum((predicted == k) & (labels != k)))
        fn = float(np.sum((predicted != k) & (labels == k)))
        p = tp / (tp + fp) if tp + fp else 0.0
        r = tp / (tp + fn) if tp + fn else 0.0
        precisions.append(p)
        recalls.append(r)
        fs.append((1 + b2) * p * r / (b2 * p + r) if p + r else 0.0)
    return {
        "multiclass_accuracy": float(np.mean(predicted == labels)),
        "multiclass_top_k_accuracy": float(np.mean(rank < top_k)),
        "macro_precision": float(np.mean(precisions)),
        "macro_recall": float(np.mean(recalls)),
        "macro_f_beta": float(np.mean(fs)),
        "dcg": float(np.mean(1.0 / np.log2(rank + 2.0))),
    }


def regression_metrics(labels: np.ndarray, predictions: np.ndarray) -> dict[str, float]:
    """MSE, RMSE, mean absolute error and R^2."""
    residual = predictions.astype(np.float64) - labels
    mse = float(np.mean(residual**2))
    variance = float(np.var(labels))
    return {
        "mse": mse,
        "rmse": float(np.sqrt(mse)),
        "absolute_loss": float(np.mean(np.abs(residual))),
        "r2": 1.0 - mse / variance if variance > 0 else float("nan"),
    }


def calibrate_thresholds(
    labels: np.ndarray,
    scores: np.ndarray,
    criteria: str,
    *,
    beta: float,
    target_precision: float,
    target_recall: float,
    default_threshold: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Best decision threshold and the criterion's value for each column of ``scores`` (n, M).

    A record is predicted positive when its score is greater than the threshold. For ``loss_function`` the
    threshold stays ``default_threshold`` and the value is the accuracy there (models are then chosen by loss).
    """
    n, models = scores.shape
    labels = labels.astype(np.float64)
    if criteria == "loss_function" or n == 0:
        accuracy = np.mean((scores > default_threshold) == (labels[:, None] == 1), axis=0)
        return np.full(models, default_threshold), accuracy
    order = np.argsort(-scores, axis=0, kind="stable")
    sorted_scores = np.take_along_axis(scores, order, axis=0)
    sorted_labels = labels[order]
    positives = labels.sum()
    # cut i (1..n): the top i records are predicted positive; cut 0 predicts all negative
    tp = np.vstack([np.zeros((1, models)), np.cumsum(sorted_labels, axis=0)])
    predicted_positive = np.arange(n + 1, dtype=np.float64)[:, None]
    fp = predicted_positive - tp
    # a cut is only realisable where the next score differs (ties go together)
    valid = np.ones((n + 1, models), dtype=bool)
    valid[1:n] = sorted_scores[:-1] != sorted_scores[1:]
    precision = np.divide(tp, predicted_positive, out=np.ones_like(tp), where=predicted_positive > 0)
    recall = tp / positives if positives else np.zeros_like(tp)
    if criteria == "accuracy":
        value = (tp + (n - positives - fp)) / n
    elif criteria == "f_beta":
        b2 = beta * beta
        denominator = b2 * precision + recall
        value = np.divide((1 + b2) * precision * recall, denominator, out=np.zeros_like(tp), where=denominator > 0)
    elif criteria == "precision_at_target_recall":
        value = np.where(recall >= target_recall, precision, -1.0 + recall)
    elif criteria == "recall_at_target_precision":
        value = np.where(precision >= target_precision, recall, -1.0 + precision)
    else:
        raise ValueError(f"unknown selection criteria {criteria!r}")
    value = np.where(valid, value, -np.inf)
    best_cut = np.argmax(value, axis=0)
    columns = np.arange(models)
    thresholds = np.empty(models)
    for m in columns:
        cut = best_cut[m]
        if cut == 0:
            thresholds[m] = sorted_scores[0, m] + abs(sorted_scores[0, m]) * 1e-6 + 1e-12
        elif cut == n:
            thresholds[m] = sorted_scores[n - 1, m] - abs(sorted_scores[n - 1, m]) * 1e-6 - 1e-12
        else:
            thresholds[m] = (sorted_scores[cut - 1, m] + sorted_scores[cut, m]) / 2.0
    return thresholds, value[best_cut, columns]


def histogram_auc_error_bound(positive: np.ndarray, negative: np.ndarray) -> float:
    """How far a histogram's AUC can be from the exact one: half the share of (positive, negative) pairs whose two
    scores share a bin (their order within the bin is unknown, each counted as a tie)."""
    total = float(positive.sum()) * float(negative.sum())
    return float(positive @ negative) / (2.0 * total) if total else float("nan")


class RankedScores:
    """The binary ROC AUC of scores added chunk by chunk, in bounded memory.

    Up to ``exact_records`` records each float32 score is kept (4 bytes a record) and the AUC is exact: P(positive
    scored above negative) + P(tie) / 2, counted with sorted arrays, what :func:`roc_auc` computes from ranks. Past
    that, the scores are counted per class in ``bins`` equal bins of the probability (``kind`` "margin": of its
    logistic, a monotone map), pairs within one bin count as ties, and :attr:`error_bound` says how far that can be
    from the exact value (0 while exact)."""

    def __init__(self, kind: str, exact_records: int, bins: int) -> None:
        self.kind = kind
        self.exact_records = exact_records
        self.bins = bins
        self.kept: tuple[list[np.ndarray], list[np.ndarray]] | None = ([], [])  # negatives', positives' scores
        self.records = 0
        self.histogram: np.ndarray | None = None  # (2, bins): negatives', positives' counts, bin 0 the lowest

    def add(self, scores: np.ndarray, positive: np.ndarray) -> None:
        """Count ``scores`` (n,) with their classes (``positive``, n booleans)."""
        scores = np.asarray(scores, dtype=np.float32)
        self.records += scores.size
        if self.kept is not None and self.records > self.exact_records:
            kept, self.kept = self.kept, None
            self.histogram = np.zeros((2, self.bins), dtype=np.int64)
            for label, parts in enumerate(kept):
                for part in parts:
                    self._count(part, label)
        if self.kept is not None:
            self.kept[0].append(scores[~positive])
            self.kept[1].append(scores[positive])
        else:
            self._count(scores[~positive], 0)
            self._count(scores[positive], 1)

    def _count(self, scores: np.ndarray, label: int) -> None:
        values = scores.astype(np.float64)
        if self.kind == "margin":
            with np.errstate(over="ignore"):
                values = 1.0 / (1.0 + np.exp(-values))
        index = np.clip(np.floor(values * self.bins).astype(np.int64), 0, self.bins - 1)
        self.histogram[label] += np.bincount(index, minlength=self.bins)

    @property
    def error_bound(self) -> float:
        return 0.0 if self.histogram is None else histogram_auc_error_bound(self.histogram[1], self.histogram[0])

    def auc(self) -> float:
        """The AUC (NaN with one class only)."""
        if self.histogram is not None:
            negative, positive = self.histogram
            if not negative.sum() or not positive.sum():
                return float("nan")
            below = np.cumsum(negative) - negative  # negatives in lower bins
            return float(positive @ (below + 0.5 * negative) / (float(positive.sum()) * float(negative.sum())))
        for parts in self.kept:  # one class at a time, each joined into one sorted array (kept for another call)
            joined = np.concatenate(parts) if len(parts) != 1 else parts[0]
            parts.clear()
            joined.sort()
            parts.append(joined)
        negatives, positives = (parts[0] for parts in self.kept)
        if not negatives.size or not positives.size:
            return float("nan")
        above = 0.0  # over (positive, negative) pairs: 1 when the positive scores higher, 1/2 when equal
        step = 1 << 16
        for start in range(0, positives.size, step):
            chunk = positives[start : start + step]
            lower = np.searchsorted(negatives, chunk, "left")
            upper = np.searchsorted(negatives, chunk, "right")
            above += float(lower.sum()) + 0.5 * float((upper - lower).sum())
        return above / (float(positives.size) * float(negatives.size))
