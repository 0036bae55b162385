"""A trained model's final metrics on a channel, under the names the service logs (``#<channel>_score``).

Streamed block by block in bounded memory whatever the channel's size: every metric is a running count or sum,
except the binary ROC AUC, which keeps each record's float32 score (4 bytes a record) up to
:data:`EXACT_AUC_RECORDS` records and is exact there; past that it counts the scores in :data:`AUC_BINS` equal bins
of the probability (a margin by its logistic) and is off by at most half the share of (positive, negative) pairs that
share a bin, a bound logged with it (``metrics.histogram_auc_error_bound``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from containerlib.linear_learner.model import LinearModel
from pipeline.linear_learner.hyperparameters import Hyperparameters
from pipeline.linear_learner.losses import OBJECTIVE_NAMES, LossParameters, binary_loss, regression_loss, softmax_loss
from pipeline.linear_learner.metrics import RankedScores

if TYPE_CHECKING:
    from pipeline.linear_learner.trainer import Channel

EXACT_AUC_RECORDS = 1 << 24  # float32 scores kept for the exact AUC: 64 MB at most
AUC_BINS = 1 << 16  # past that, per-class counts of the scores in this many bins (1 MB)


def evaluate(
    hp: Hyperparameters, model: LinearModel, data: Channel, *, exact_auc_records: int = EXACT_AUC_RECORDS
) -> list[tuple[str, str, float]]:
    """Final metrics of ``model`` on ``data`` as (name logged by the service, short key, value), read block by block:
    memory holds one block and the running counts, never the channel's scores (see the module's note on the AUC)."""
    raw = LossParameters(
        hp.loss, margin=hp.margin, insensitivity=hp.loss_insensitivity, quantile=hp.quantile, huber_delta=hp.huber_delta
    )
    if hp.predictor_type == "binary_classifier":
        totals = _Binary(model.loss_type, exact_auc_records)
    elif hp.predictor_type == "multiclass_classifier":
        totals = _Multiclass(hp.num_classes, hp.accuracy_top_k)
    else:
        totals = _Regression()
    loss = 0.0
    for block in data.blocks():
        scores = model.linear_scores(block.features).astype(np.float64)
        labels = np.asarray(block.labels, dtype=np.float64)
        score, predicted = model.predict(block.features)
        if hp.predictor_type == "binary_classifier":
            block_loss, _ = binary_loss(raw, scores, labels[:, None], None)
        elif hp.predictor_type == "multiclass_classifier":
            block_loss, _ = softmax_loss(scores, labels.astype(np.int64), hp.num_classes, None)
        else:
            block_loss, _ = regression_loss(raw, scores, labels[:, None])
        loss += float(block_loss[0])
        totals.add(labels, score, predicted)
    objective_name = OBJECTIVE_NAMES[hp.loss] + "_objective"
    names = {
        "binary_f_beta": f"binary_f_{hp.f_beta:.3f}",
        "multiclass_top_k_accuracy": f"multiclass_top_{hp.accuracy_top_k}_accuracy",
        "macro_f_beta": f"macro_f_{hp.f_beta:.3f}",
    }
    results = [(objective_name, "objective_loss", loss / max(data.rows, 1))]
    results += [(names.get(key, key), key, value) for key, value in totals.values(hp.f_beta).items()]
    return results


def _f_beta(precision: np.ndarray | float, recall: np.ndarray | float, beta: float):
    b2 = beta * beta
    precision, recall = np.asarray(precision, dtype=np.float64), np.asarray(recall, dtype=np.float64)
    denominator = b2 * precision + recall
    return np.divide((1 + b2) * precision * recall, denominator, out=np.zeros_like(denominator), where=denominator > 0)


class _Binary:
    """Confusion counts and the ranked scores of 0/1 predictions."""

    def __init__(self, loss_type: str, exact_records: int) -> None:
        self.counts = np.zeros(4, dtype=np.int64)  # tp, fp, fn, tn
        kind = "probability" if loss_type == "logistic" else "margin"
        self.ranked = RankedScores(kind, exact_records, AUC_BINS)

    def add(self, labels: np.ndarray, score: np.ndarray, predicted: np.ndarray) -> None:
        positive, yes = labels == 1, predicted == 1
        self.counts += [
            np.count_nonzero(yes & positive),
            np.count_nonzero(yes & ~positive),
            np.count_nonzero(~yes & positive),
            np.count_nonzero(~yes & ~positive),
        ]
        self.ranked.add(score, positive)

    def values(self, beta: float) -> dict[str, float]:
        tp, fp, fn, tn = (float(count) for count in self.counts)
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        total = tp + fp + fn + tn
        values = {
            "binary_classification_accuracy": (tp + tn) / total if total else float("nan"),
            "binary_f_beta": float(_f_beta(precision, recall, beta)),
            "precision": precision,
            "recall": recall,
            "roc_auc_score": self.ranked.auc(),
        }
        if self.ranked.error_bound:  # counted in bins past EXACT_AUC_RECORDS: how far from exact it may be
            values["roc_auc_score_error_bound"] = self.ranked.error_bound
        return values


class _Multiclass:
    """Per-class counts, top-k hits and the DCG sum of class probabilities."""

    def __init__(self, classes: int, top_k: int) -> None:
        self.top_k = top_k
        self.records = 0
        self.correct = 0
        self.in_top_k = 0
        self.dcg = 0.0
        self.true_positive = np.zeros(classes, dtype=np.int64)
        self.predicted = np.zeros(classes, dtype=np.int64)
        self.actual = np.zeros(classes, dtype=np.int64)

    def add(self, labels: np.ndarray, probabilities: np.ndarray, predicted: np.ndarray) -> None:
        labels = labels.astype(np.int64)
        classes = len(self.actual)
        true_score = probabilities[np.arange(labels.size), labels]
        rank = np.sum(probabilities > true_score[:, None], axis=1)  # 0 = best; ties count in the label's favour
        hit = predicted == labels
        self.records += labels.size
        self.correct += int(np.count_nonzero(hit))
        self.in_top_k += int(np.count_nonzero(rank < self.top_k))
        self.dcg += float(np.sum(1.0 / np.log2(rank + 2.0)))
        self.true_positive += np.bincount(labels[hit], minlength=classes)[:classes]
        self.predicted += np.bincount(predicted, minlength=classes)[:classes]
        self.actual += np.bincount(labels, minlength=classes)[:classes]

    def values(self, beta: float) -> dict[str, float]:
        tp = self.true_positive.astype(np.float64)
        precision = np.divide(tp, self.predicted, out=np.zeros_like(tp), where=self.predicted > 0)
        recall = np.divide(tp, self.actual, out=np.zeros_like(tp), where=self.actual > 0)
        n = max(self.records, 1)
        return {
            "multiclass_accuracy": self.correct / n,
            "multiclass_top_k_accuracy": self.in_top_k / n,
            "macro_precision": float(np.mean(precision)),
            "macro_recall": float(np.mean(recall)),
            "macro_f_beta": float(np.mean(_f_beta(precision, recall, beta))),
            "dcg": self.dcg / n,
        }


class _Regression:
    """Running sums of the residuals and of the labels (shifted by the first, so the variance keeps its digits)."""

    def __init__(self) -> None:
        self.records = 0
        self.shift: float | None = None
        self.sums = np.zeros(4)  # squared residuals, absolute residuals, shifted labels, their squares

    def add(self, labels: np.ndarray, predictions: np.ndarray, predicted: None) -> None:
        if not labels.size:
            return
        if self.shift is None:
            self.shift = float(labels[0])
        residual = predictions.astype(np.float64) - labels
        shifted = labels - self.shift
        self.sums += [residual @ residual, np.abs(residual).sum(), shifted.sum(), shifted @ shifted]
        self.records += labels.size

    def values(self, beta: float) -> dict[str, float]:
        n = max(self.records, 1)
        squares, absolute, label_sum, label_squares = self.sums
        mse = squares / n
        variance = max(label_squares / n - (label_sum / n) ** 2, 0.0)
        return {
            "mse": float(mse),
            "rmse": float(np.sqrt(mse)),
            "absolute_loss": float(absolute / n),
            "r2": 1.0 - mse / variance if variance > 0 else float("nan"),
        }
