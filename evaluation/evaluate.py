"""The Evaluate processing job: scores batch-transform predictions against the test labels.

Reads, for every RecordIO-protobuf test shard ``F`` under the test dir, the batch-transform output ``F.out`` (jsonlines,
one object per record, in order), checks the counts match file by file, and writes ``evaluation.json``: SageMaker's
model-quality statistics (``binary_classification_metrics``, ``multiclass_classification_metrics`` or
``regression_metrics``, every metric ``{"value", "standard_deviation"}``) plus a ``gate`` section
``{"metric", "value"}`` (higher is always better) that the pipeline's Condition step compares with its threshold.
Classifiers also get ``class_names`` and ``per_class_metrics``; with Preprocess's summary (``--summary-dir``) holding
label values, classes are named by them (in the confusion matrix too) instead of 0..K-1.
Given a model package group, it also scores the group's approved champion on the same test records with the same
code (``champion``: its package and metrics) and writes the ``decision`` the gate takes (``evaluation/champion.py``
fetches the champion through boto3).

Runs in a SageMaker processing container: numpy, pandas, scikit-learn and the standard library only; every path
comes in as an argument.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import precision_recall_curve, roc_curve

from containerlib.errors import InputError
from containerlib.exit_message import EXIT_MESSAGE_FILE, write_exit_message
from containerlib.hosts import RESOURCE_CONFIG
from containerlib.names import CHAMPION, DECISION, GATE_METRICS, METRICS_SECTIONS, PREDICTOR_TYPES, REPORT_NAME
from containerlib.recordio import read as read_recordio
from evaluation.champion import Champion, ChampionError, aws_clients, download_model, find_champion
from evaluation.linear_learner_model import ModelArtifactError, read_model

# Model Monitor reports a standard deviation only from 200 records up; below that it writes the string "NaN".
MIN_RECORDS_FOR_STANDARD_DEVIATION = 200
DEFAULT_BOOTSTRAP_ROUNDS = 30
DEFAULT_SEED = 0
MAX_CURVE_POINTS = 201
MAX_PREDICTION_SAMPLE = 1000
F_BETAS = {"f0_5": 0.5, "f1": 1.0, "f2": 2.0}
# Linear Learner's binary classifier emits a probability as "score", except with hinge loss: a margin (any real number).
MARGIN_LOSSES = ("hinge_loss",)


class EvaluationError(InputError):
    """Bad input: the message names the file, the record and what was expected."""


@dataclass(frozen=True)
class Scored:
    """All test records in shard order: labels, scores (probabilities, margins or values), predicted labels."""

    labels: np.ndarray
    scores: np.ndarray  # (n,) binary probability or margin, or regression value; (n, k) multiclass probabilities
    predicted_labels: np.ndarray | None  # None for regression
    file_count: int
    score_kind: str = "probability"  # "margin" for a hinge-loss binary classifier, "value" for regression


# ---------------------------------------------------------------------------------------------------------- reading


def find_test_shards(test_dir: Path) -> list[Path]:
    """Every test shard under ``test_dir`` (recursively, hidden files skipped), by relative name."""
    if not test_dir.is_dir():
        raise EvaluationError(f"test dir {test_dir} does not exist or is not a directory")
    shards = sorted(
        path
        for path in test_dir.rglob("*")
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(test_dir).parts)
    )
    if not shards:
        raise EvaluationError(f"test dir {test_dir} holds no test shards")
    return shards


def read_labels(shard: Path) -> np.ndarray:
    """The labels of one RecordIO-protobuf test shard, float64."""
    try:
        with shard.open("rb") as fileobj:
            _, labels = read_recordio(fileobj)
    except Exception as error:  # the codec's own message says which record and why
        raise EvaluationError(f"test shard {shard}: cannot read RecordIO-protobuf: {error}") from error
    if labels is None:
        raise EvaluationError(f"test shard {shard}: records carry no labels; evaluation needs labelled test data")
    labels = np.asarray(labels, dtype=np.float64).reshape(-1)
    bad = np.flatnonzero(~np.isfinite(labels))
    if bad.size:
        raise EvaluationError(
            f"test shard {shard}: record {bad[0]}: label is {labels[bad[0]]}, expected a finite number"
        )
    return labels


def read_prediction_lines(out_file: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, JSON object) for each non-blank line of a batch-transform ``.out`` file."""
    with out_file.open("r", encoding="utf-8") as lines:
        for line_number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise EvaluationError(f"{out_file}: line {line_number}: not valid JSON ({error.msg})") from error
            if not isinstance(record, dict) or "score" not in record:
                raise EvaluationError(f"{out_file}: line {line_number}: expected an object with a 'score' field")
            yield line_number, record


def _number(value: Any, out_file: Path, line_number: int, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise EvaluationError(f"{out_file}: line {line_number}: '{field}' is {value!r}, expected a finite number")
    return float(value)


def _class_index(value: Any, classes: int, out_file: Path, line_number: int) -> int:
    number = _number(value, out_file, line_number, "predicted_label")
    if number != int(number) or not 0 <= number < classes:
        raise EvaluationError(
            f"{out_file}: line {line_number}: 'predicted_label' is {value!r}, expected an integer in [0, {classes})"
        )
    return int(number)


def score_kind(predictor_type: str, loss: str) -> str:
    """What the predictions' ``score`` is: a probability, a margin (hinge loss) or a regression value."""
    if predictor_type == "regressor":
        return "value"
    return "margin" if predictor_type == "binary_classifier" and loss in MARGIN_LOSSES else "probability"


def read_predictions(
    out_file: Path, predictor_type: str, kind: str = "probability"
) -> tuple[np.ndarray, np.ndarray | None]:
    """Scores and predicted labels of one ``.out`` file, validated against the predictor type's output format;
    a binary ``score`` is a probability in [0, 1] unless ``kind`` is ``margin`` (any finite number)."""
    scores: list[Any] = []
    predicted: list[int] = []
    classes: int | None = None
    for line_number, record in read_prediction_lines(out_file):
        score = record["score"]
        if predictor_type == "regressor":
            scores.append(_number(score, out_file, line_number, "score"))
            continue
        if "predicted_label" not in record:
            raise EvaluationError(f"{out_file}: line {line_number}: expected a 'predicted_label' field")
        if predictor_type == "binary_classifier":
            value = _number(score, out_file, line_number, "score")
            if kind != "margin" and not 0.0 <= value <= 1.0:
                raise EvaluationError(
                    f"{out_file}: line {line_number}: 'score' is {score!r}, expected a probability "
                    f"(a margin only with --loss {' or '.join(MARGIN_LOSSES)})"
                )
            scores.append(value)
            predicted.append(_class_index(record["predicted_label"], 2, out_file, line_number))
        else:
            if not isinstance(score, list) or len(score) < 2:
                raise EvaluationError(
                    f"{out_file}: line {line_number}: 'score' is {score!r}, expected a list of class probabilities"
                )
            if classes is None:
                classes = len(score)
            elif len(score) != classes:
                raise EvaluationError(
                    f"{out_file}: line {line_number}: 'score' has {len(score)} classes, earlier lines have {classes}"
                )
            scores.append([_number(value, out_file, line_number, "score") for value in score])
            predicted.append(_class_index(record["predicted_label"], classes, out_file, line_number))
    if predictor_type == "regressor":
        return np.asarray(scores, dtype=np.float64), None
    return np.asarray(scores, dtype=np.float64), np.asarray(predicted, dtype=np.int64)


def load_scored(predictions_dir: Path, test_dir: Path, predictor_type: str, loss: str = "auto") -> Scored:
    """Pairs every test shard with its ``.out`` file and checks they describe the same records, file by file."""
    kind = score_kind(predictor_type, loss)
    if not predictions_dir.is_dir():
        raise EvaluationError(f"predictions dir {predictions_dir} does not exist or is not a directory")
    shards = find_test_shards(test_dir)
    expected_outputs = {shard.relative_to(test_dir).as_posix() + ".out" for shard in shards}
    unexpected = sorted(
        path.relative_to(predictions_dir).as_posix()
        for path in predictions_dir.rglob("*.out")
        if path.is_file() and path.relative_to(predictions_dir).as_posix() not in expected_outputs
    )
    if unexpected:
        raise EvaluationError(
            f"predictions dir {predictions_dir}: {unexpected[0]} has no matching test shard under {test_dir}"
        )
    labels, scores, predicted = [], [], []
    for shard in shards:
        relative = shard.relative_to(test_dir).as_posix()
        out_file = predictions_dir / (relative + ".out")
        if not out_file.is_file():
            raise EvaluationError(f"missing predictions for test shard {relative}: expected {out_file}")
        shard_labels = read_labels(shard)
        shard_scores, shard_predicted = read_predictions(out_file, predictor_type, kind)
        if len(shard_scores) != len(shard_labels):
            raise EvaluationError(
                f"{out_file} holds {len(shard_scores)} predictions but test shard {relative} holds "
                f"{len(shard_labels)} records: the counts must match"
            )
        if predictor_type != "regressor" and shard_scores.size:
            classes = 2 if predictor_type == "binary_classifier" else shard_scores.shape[1]
            check_class_labels(shard_labels, classes, shard)
        labels.append(shard_labels)
        scores.append(shard_scores)
        if shard_predicted is not None:
            predicted.append(shard_predicted)
    all_labels = np.concatenate(labels)
    if all_labels.size == 0:
        raise EvaluationError(f"test dir {test_dir}: the test shards hold no records")
    non_empty_scores = [block for block in scores if block.size]
    if predictor_type == "multiclass_classifier":
        widths = {block.shape[1] for block in non_empty_scores}
        if len(widths) > 1:
            raise EvaluationError(f"{predictions_dir}: .out files disagree on the number of classes: {sorted(widths)}")
    all_scores = np.concatenate(non_empty_scores)
    all_predicted = np.concatenate(predicted) if predictor_type != "regressor" else None
    return Scored(all_labels, all_scores, all_predicted, len(shards), kind)


def check_class_labels(labels: np.ndarray, classes: int, shard: Path) -> None:
    """Classifier labels must be class indices the predictions can name."""
    bad = np.flatnonzero((labels != np.round(labels)) | (labels < 0) | (labels >= classes))
    if bad.size:
        raise EvaluationError(
            f"test shard {shard}: record {bad[0]}: label {labels[bad[0]]} is not a class index in [0, {classes})"
        )


# ---------------------------------------------------------------------------------------------------------- metrics


def _ratio(numerator: float, denominator: float) -> float:
    """numerator / denominator, 0 when the denominator is 0 (scikit-learn's zero_division=0)."""
    return float(numerator) / float(denominator) if denominator else 0.0


def _f_beta(precision: float, recall: float, beta: float) -> float:
    return _ratio((1 + beta**2) * precision * recall, beta**2 * precision + recall)


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
    """Every scalar binary metric from a 2x2 confusion matrix; the best constant classifier predicts positive."""
    (tn, fp), (fn, tp) = matrix
    n = tn + fp + fn + tp
    positives, negatives = tp + fn, tn + fp
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, positives)
    constant_precision, constant_recall = _ratio(positives, n), 1.0 if positives else 0.0
    values = {
        "recall": recall,
        "precision": precision,
        "accuracy": _ratio(tp + tn, n),
        "recall_best_constant_classifier": constant_recall,
        "precision_best_constant_classifier": constant_precision,
        "accuracy_best_constant_classifier": _ratio(positives, n),
        "true_positive_rate": recall,
        "true_negative_rate": _ratio(tn, negatives),
        "false_positive_rate": _ratio(fp, negatives),
        "false_negative_rate": _ratio(fn, positives),
        "auc": auc,
    }
    for name, beta in F_BETAS.items():
        values[name] = _f_beta(precision, recall, beta)
    for name, beta in F_BETAS.items():
        values[f"{name}_best_constant_classifier"] = _f_beta(constant_precision, constant_recall, beta)
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
        f"accuracy{prefix}": _ratio(correct.sum(), n),
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
    return {**_weighted_scalars(matrix), **_weighted_scalars(constant, "_best_constant_classifier")}


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
    which is the same resample without copying the data. NaN when there are fewer than 200 records, as Model
    Monitor does, or when rounds < 2.
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


def _thin(*curves: np.ndarray, limit: int = MAX_CURVE_POINTS) -> list[list[float]]:
    """At most ``limit`` points of a curve, evenly spaced along it, first and last point kept."""
    length = len(curves[0])
    keep = np.unique(np.linspace(0, length - 1, min(length, limit)).round().astype(np.int64))
    return [[float(value) for value in curve[keep]] for curve in curves]


def _with_deviation(values: dict[str, float], deviations: dict[str, float]) -> dict[str, dict[str, float]]:
    return {name: {"value": values[name], "standard_deviation": deviations[name]} for name in values}


def _confusion_dict(matrix: np.ndarray, names: list[str] | None = None) -> dict[str, dict[str, int]]:
    """Model Monitor's layout: {true class: {predicted class: count}}, classes named by their label values."""
    name = _namer(names)
    return {
        name(actual): {name(guess): int(matrix[actual, guess]) for guess in range(matrix.shape[1])}
        for actual in range(matrix.shape[0])
    }


def _namer(names: list[str] | None) -> Callable[[int], str]:
    return lambda index: names[index] if names and index < len(names) else str(index)


def per_class_metrics(matrix: np.ndarray, names: list[str] | None = None) -> dict[str, dict[str, float]]:
    """Precision, recall, F1 and support of every class (rows: true class, columns: predicted)."""
    name = _namer(names)
    result = {}
    for index in range(matrix.shape[0]):
        true_positive = float(matrix[index, index])
        precision = _ratio(true_positive, float(matrix[:, index].sum()))
        recall = _ratio(true_positive, float(matrix[index, :].sum()))
        result[name(index)] = {
            "precision": precision,
            "recall": recall,
            "f1": _f_beta(precision, recall, 1.0),
            "support": int(matrix[index, :].sum()),
        }
    return result


def label_names(summary_dir: Path | None) -> list[str] | None:
    """The label values Preprocess mapped to 0..K-1 (from its summary), or None when labels were already numeric.

    Every host's summary part must agree on the feature layout and the label values: hosts that built different
    layouts (possible only when no schema was passed) trained one model on mixed columns, so that is an error."""
    if summary_dir is None or not summary_dir.is_dir():
        return None
    parts = []
    for path in sorted(summary_dir.glob("summary-*.json")) or sorted(summary_dir.glob("summary.json")):
        try:
            parts.append((path, json.loads(path.read_text())))
        except (OSError, ValueError) as error:
            raise EvaluationError(f"{path}: not a readable Preprocess summary ({error})") from error
    if not parts:
        return None
    (first_path, first), *others = parts
    for path, part in others:
        for key in ("feature_names", "label_values"):
            if part.get(key) != first.get(key):
                raise EvaluationError(
                    f"Preprocess hosts built different layouts: {key} of {first_path.name} is {first.get(key)} but "
                    f"{path.name} has {part.get(key)}; pass one schema to every host (infer it: drop --no-infer)"
                )
    values = first.get("label_values")
    return [str(value) for value in values] if values else None


def binary_report(scored: Scored, rounds: int, seed: int, names: list[str] | None = None) -> dict[str, Any]:
    labels, scores, predicted = scored.labels.astype(np.int64), scored.scores, scored.predicted_labels
    assert predicted is not None
    present = set(np.unique(labels).tolist())
    if present != {0, 1}:
        raise EvaluationError(
            f"the test labels hold only class {present.pop()}: AUC (the gate metric) needs both classes 0 and 1"
        )
    ranked = RankedScores.of(scores)
    values = binary_scalars(confusion(labels, predicted, 2), ranked.auc(labels))
    deviations = bootstrap_standard_deviations(
        lambda weights: binary_scalars(confusion(labels, predicted, 2, weights), ranked.auc(labels, weights)),
        len(labels),
        rounds,
        seed,
    )
    metrics = _with_deviation(values, deviations)
    false_positive_rates, true_positive_rates, _ = roc_curve(labels, scores)
    precisions, recalls, _ = precision_recall_curve(labels, scores)
    ordered: dict[str, Any] = {"confusion_matrix": _confusion_dict(confusion(labels, predicted, 2), names)}
    for name in list(metrics)[:10]:  # Model Monitor's order: the rates, then the curves, then auc and F-scores
        ordered[name] = metrics[name]
    fpr, tpr = _thin(false_positive_rates, true_positive_rates)
    ordered["receiver_operating_characteristic_curve"] = {"false_positive_rates": fpr, "true_positive_rates": tpr}
    pr_precisions, pr_recalls = _thin(precisions[::-1], recalls[::-1])  # ascending recall
    ordered["precision_recall_curve"] = {"precisions": pr_precisions, "recalls": pr_recalls}
    for name in list(metrics)[10:]:
        ordered[name] = metrics[name]
    return ordered


def multiclass_report(scored: Scored, rounds: int, seed: int, names: list[str] | None = None) -> dict[str, Any]:
    labels, predicted = scored.labels.astype(np.int64), scored.predicted_labels
    assert predicted is not None
    classes = scored.scores.shape[1]
    values = multiclass_scalars(confusion(labels, predicted, classes))
    deviations = bootstrap_standard_deviations(
        lambda weights: multiclass_scalars(confusion(labels, predicted, classes, weights)), len(labels), rounds, seed
    )
    return {
        "confusion_matrix": _confusion_dict(confusion(labels, predicted, classes), names),
        **_with_deviation(values, deviations),
    }


def regression_report(scored: Scored, rounds: int, seed: int, names: list[str] | None = None) -> dict[str, Any]:
    labels, predictions = scored.labels, scored.scores
    values = regression_scalars(labels, predictions)
    deviations = bootstrap_standard_deviations(
        lambda weights: regression_scalars(labels, predictions, weights), len(labels), rounds, seed
    )
    return _with_deviation(values, deviations)


def prediction_sample(scored: Scored, seed: int) -> dict[str, Any]:
    """A fixed-seed sample of (label, prediction) pairs so a regression report can be plotted on its own."""
    n = len(scored.labels)
    rows = np.arange(n)
    if n > MAX_PREDICTION_SAMPLE:
        rows = np.sort(np.random.default_rng(seed).choice(n, size=MAX_PREDICTION_SAMPLE, replace=False))
    return {
        "item_count": n,
        "labels": [float(value) for value in scored.labels[rows]],
        "predictions": [float(value) for value in scored.scores[rows]],
    }


def build_report(
    scored: Scored, predictor_type: str, rounds: int, seed: int, names: list[str] | None = None
) -> dict[str, Any]:
    """The whole evaluation.json document; ``names`` (the label values, in class order) name the classes."""
    builders = {"binary_classifier": binary_report, "multiclass_classifier": multiclass_report}
    metrics = builders.get(predictor_type, regression_report)(scored, rounds, seed, names)
    gate_metric = GATE_METRICS[predictor_type]
    report: dict[str, Any] = {
        "version": 0.0,
        "dataset": {"item_count": len(scored.labels), "file_count": scored.file_count},
        # what "score" was: AUC and the curves rank by it; the other binary metrics use predicted_label
        "score": {"kind": scored.score_kind},
        METRICS_SECTIONS[predictor_type]: metrics,
        "gate": {"metric": gate_metric, "value": metrics[gate_metric]["value"]},
    }
    if predictor_type == "regressor":
        report["prediction_sample"] = prediction_sample(scored, seed)
    else:
        assert scored.predicted_labels is not None
        classes = 2 if predictor_type == "binary_classifier" else scored.scores.shape[1]
        matrix = confusion(scored.labels.astype(np.int64), scored.predicted_labels, classes)
        report["class_names"] = [_namer(names)(index) for index in range(classes)]
        report["per_class_metrics"] = per_class_metrics(matrix, names)
    return report


# ---------------------------------------------------------------------------------------------------------- champion


@dataclass(frozen=True)
class GateSettings:
    """What the pipeline's gate decides with: the threshold, the tolerance and where the champion is registered."""

    metric_threshold: float
    champion_tolerance: float = 0.0
    model_package_group: str | None = None  # None: no champion comparison
    region: str | None = None  # the AWS region of the registry; None: boto3's configuration decides

    def __post_init__(self) -> None:
        if not math.isfinite(self.metric_threshold):
            raise EvaluationError(f"MetricThreshold is {self.metric_threshold}, expected a finite number")
        if not math.isfinite(self.champion_tolerance) or self.champion_tolerance < 0:
            raise EvaluationError(
                f"ChampionTolerance is {self.champion_tolerance}, expected a finite number >= 0 "
                "(how much worse than the champion the challenger may be)"
            )


def read_test_features(test_dir: Path) -> Any:
    """The features of every test shard in the order ``load_scored`` reads labels: dense array or CSR matrix."""
    blocks = []
    for shard in find_test_shards(test_dir):
        try:
            with shard.open("rb") as fileobj:
                features, _ = read_recordio(fileobj)
        except Exception as error:
            raise EvaluationError(f"test shard {shard}: cannot read RecordIO-protobuf: {error}") from error
        if features.shape[0]:
            blocks.append(features)
    if not blocks:
        raise EvaluationError(f"test dir {test_dir}: the test shards hold no records")
    if all(isinstance(block, np.ndarray) for block in blocks):
        return np.concatenate(blocks)
    from scipy import sparse

    return sparse.vstack([sparse.csr_matrix(block) for block in blocks], format="csr")


def score_champion(model_path: Path, champion: Champion, scored: Scored, test_dir: Path, predictor_type: str) -> Scored:
    """The champion's predictions on the same test records, in the form the challenger's metrics are computed from."""
    features = read_test_features(test_dir)
    where = f"champion {champion.model_package_arn} ({champion.model_data_url})"
    try:
        model = read_model(model_path, feature_dim=int(features.shape[1]))
    except ModelArtifactError as error:
        raise EvaluationError(f"{where}: cannot read its model artifact: {error}") from None
    if model.predictor_type != predictor_type:
        raise EvaluationError(
            f"{where} is a {model.predictor_type}, this execution evaluates a {predictor_type}: the two cannot be "
            "compared (reject the champion or register into another model package group)"
        )
    scores, predicted = model.predict(features)
    scores = np.asarray(scores, dtype=np.float64)
    if predictor_type == "multiclass_classifier" and scores.shape[1] != scored.scores.shape[1]:
        raise EvaluationError(
            f"{where} predicts {scores.shape[1]} classes, the challenger {scored.scores.shape[1]}: cannot compare"
        )
    if len(scores) != len(scored.labels):  # the features and labels come from the same shards: a reader bug
        raise EvaluationError(f"{where}: scored {len(scores)} records, the test shards hold {len(scored.labels)}")
    bad = np.flatnonzero(~np.isfinite(scores.reshape(len(scores), -1)).all(axis=1))
    if bad.size:
        raise EvaluationError(f"{where}: record {bad[0]} of the test split scores {scores[bad[0]]}, not finite")
    return Scored(scored.labels, scores, None if predicted is None else predicted.astype(np.int64), scored.file_count)


def champion_section(champion: Champion, report: dict[str, Any], predictor_type: str) -> dict[str, Any]:
    """The report's ``champion``: the package and its metrics on this test split, in the challenger's layout."""
    section = METRICS_SECTIONS[predictor_type]
    metric = GATE_METRICS[predictor_type]
    gate = {"metric": metric, "value": report["gate"]["value"]}
    result = {**champion.to_dict(), section: report[section], "gate": gate}
    if "prediction_sample" in report:
        result["prediction_sample"] = report["prediction_sample"]
    return result


def decide(
    metric: str, value: float, settings: GateSettings, champion: dict[str, Any] | None, group: str | None
) -> dict[str, Any]:
    """Promote when ``value`` reaches MetricThreshold and is no worse than the champion's by more than the tolerance.

    ``champion_floor`` is the champion's value minus the tolerance; without a champion it is the challenger's own
    value, so the Condition's second comparison holds and the threshold alone decides, as the reason says.
    """
    threshold, tolerance = settings.metric_threshold, settings.champion_tolerance
    clears_threshold = value >= threshold
    verdict = f"{metric} {value:.6g} {'reaches' if clears_threshold else 'is below'} MetricThreshold {threshold:g}"
    if champion is None:
        floor = value
        beats_champion = True
        where = f"model package group {group}" if group else "no model package group given"
        verdict += f"; no approved champion ({where}): the threshold alone decides"
    else:
        champion_value = champion["gate"]["value"]
        floor = champion_value - tolerance
        beats_champion = value >= floor
        name = f"champion version {champion['version']} ({metric} {champion_value:.6g} on this test split)"
        verdict += f"; {'no worse' if beats_champion else 'worse'} than {name} by more than ChampionTolerance"
        verdict += f" {tolerance:g}"
    return {
        "promote": bool(clears_threshold and beats_champion),
        "metric": metric,
        "challenger_value": value,
        "metric_threshold": threshold,
        "champion_model_package_arn": champion["model_package_arn"] if champion else "none",
        "champion_value": champion["gate"]["value"] if champion else "none",
        "champion_tolerance": tolerance,
        "champion_floor": floor,
        "reason": verdict,
    }


def compare_with_champion(
    report: dict[str, Any],
    scored: Scored,
    test_dir: Path,
    predictor_type: str,
    settings: GateSettings,
    rounds: int,
    seed: int,
    clients: Callable[[str | None], tuple[Any, Any]] | None = None,
) -> dict[str, Any]:
    """Adds ``champion`` (None when the group has no approved, completed version) and ``decision`` to the report.

    ``clients`` gives the (SageMaker, S3) boto3 clients for a region; default :func:`champion.aws_clients`.
    """
    champion = None
    group = settings.model_package_group
    if group:
        try:
            sagemaker, s3 = (clients or aws_clients)(settings.region)
            found = find_champion(sagemaker, group)
            if found is not None:
                with tempfile.TemporaryDirectory(prefix="champion-") as folder:
                    model_path = download_model(s3, found, Path(folder))
                    champion_scored = score_champion(model_path, found, scored, test_dir, predictor_type)
                champion_report = build_report(champion_scored, predictor_type, rounds, seed)
                champion = champion_section(found, champion_report, predictor_type)
        except ChampionError as error:
            raise EvaluationError(str(error)) from None
    gate = report["gate"]
    report[CHAMPION] = champion
    report[DECISION] = decide(gate["metric"], gate["value"], settings, champion, group)
    return report


# ---------------------------------------------------------------------------------------------------------- output


def _json_safe(value: Any) -> Any:
    """NaN becomes the string "NaN", as Model Monitor writes it; strict JSON otherwise."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN"
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_safe(item) for item in value]
    return value


def write_report(report: dict[str, Any], output_dir: Path) -> Path:
    """Writes ``evaluation.json`` under a temporary name, then renames it: readers never see a partial report."""
    output_dir.mkdir(parents=True, exist_ok=True)
    target = output_dir / REPORT_NAME
    handle, temporary = tempfile.mkstemp(dir=output_dir, prefix=f".{REPORT_NAME}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(_json_safe(report), stream, indent=2, allow_nan=False)
            stream.write("\n")
        os.chmod(temporary, 0o644)  # mkstemp creates 0600; the report is meant to be read by others
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def evaluate(
    predictions_dir: Path,
    test_dir: Path,
    output_dir: Path,
    predictor_type: str,
    bootstrap_rounds: int = DEFAULT_BOOTSTRAP_ROUNDS,
    seed: int = DEFAULT_SEED,
    loss: str = "auto",
    summary_dir: Path | None = None,
    gate: GateSettings | None = None,
) -> dict[str, Any]:
    """Reads predictions and labels, writes the report, returns it (NaN still as float).

    With ``gate``, the report also holds the champion's metrics on the same records and the gate's decision.
    """
    if predictor_type not in PREDICTOR_TYPES:
        raise EvaluationError(f"predictor type {predictor_type!r} is not one of {', '.join(PREDICTOR_TYPES)}")
    scored = load_scored(predictions_dir, test_dir, predictor_type, loss)
    names = label_names(summary_dir)  # also checks that every Preprocess host built the same layout
    names = names if predictor_type != "regressor" else None
    report = build_report(scored, predictor_type, bootstrap_rounds, seed, names)
    if gate is not None:
        compare_with_champion(report, scored, test_dir, predictor_type, gate, bootstrap_rounds, seed)
    write_report(report, output_dir)
    return report


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--predictions-dir", type=Path, default=Path("/opt/ml/processing/input/predictions"))
    parser.add_argument("--test-dir", type=Path, default=Path("/opt/ml/processing/input/test"))
    parser.add_argument("--output-dir", type=Path, default=Path("/opt/ml/processing/output/evaluation"))
    parser.add_argument("--predictor-type", required=True, choices=PREDICTOR_TYPES)
    parser.add_argument(
        "--summary-dir", type=Path, help="Preprocess's summary folder: its label values name the classes in the report"
    )
    parser.add_argument("--bootstrap-rounds", type=int, default=DEFAULT_BOOTSTRAP_ROUNDS)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--loss", default="auto", help="the training loss: hinge_loss makes a binary score a margin")
    parser.add_argument("--metric-threshold", type=float, help="the gate's MetricThreshold: write the decision")
    parser.add_argument("--champion-tolerance", type=float, default=0.0, help="how much worse than the champion")
    parser.add_argument("--model-package-group", help="compare with this group's newest approved version")
    parser.add_argument("--region", help="the registry's AWS region (default: boto3's configuration)")
    parser.add_argument(
        "--resource-config",
        type=Path,
        default=Path(RESOURCE_CONFIG),
        help="SageMaker's host list: names this host in the exit message (default: %(default)s)",
    )
    parser.add_argument(
        "--exit-message-file",
        type=Path,
        default=Path(EXIT_MESSAGE_FILE),
        help="on failure the reason is also written here, if its folder exists: SageMaker shows the file as the "
        "job's ExitMessage (default: %(default)s)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        settings = None
        if args.metric_threshold is not None:
            settings = GateSettings(
                args.metric_threshold, args.champion_tolerance, args.model_package_group, args.region
            )
        report = evaluate(
            args.predictions_dir,
            args.test_dir,
            args.output_dir,
            args.predictor_type,
            args.bootstrap_rounds,
            args.seed,
            args.loss,
            args.summary_dir,
            settings,
        )
    except InputError as error:
        message = f"evaluate: error: {error}"
        print(message, file=sys.stderr)
        write_exit_message(args.exit_message_file, message, args.resource_config)
        return 1
    except Exception as error:  # a defect, not bad input: the traceback goes to the log, its last line to ExitMessage
        message = f"evaluate: unexpected {type(error).__name__}: {' '.join(str(error).split())} (traceback in the log)"
        write_exit_message(args.exit_message_file, message, args.resource_config)
        raise
    gate = report["gate"]
    print(
        f"evaluate: {report['dataset']['item_count']} records from {report['dataset']['file_count']} test shards; "
        f"gate {gate['metric']} = {gate['value']:.6g}; wrote {args.output_dir / REPORT_NAME}"
    )
    if DECISION in report:
        decision = report[DECISION]
        print(f"evaluate: {'promote' if decision['promote'] else 'do not promote'}: {decision['reason']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
