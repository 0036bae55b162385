"""The ``evaluation.json`` report: SageMaker's model-quality layout (every metric ``{"value",
"standard_deviation"}``, the confusion matrix, curves) plus the ``gate`` section, classes named by Preprocess's label
values; written whole or not at all."""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import roc_curve

from containerlib.names import GATE_METRICS, METRICS_SECTIONS, REPORT_NAME
from containerlib.predictions import Scored
from evaluation import EvaluationError
from evaluation.collect import Collected
from evaluation.metrics import (
    RankedScores,
    binary_scalars,
    binomial_deviation,
    bootstrap_standard_deviations,
    confusion,
    f_beta,
    hanley_mcneil_deviation,
    multiclass_scalars,
    ratio,
    regression_scalars,
    rmse_deviation,
)

MAX_CURVE_POINTS = 1001
MAX_PREDICTION_SAMPLE = 1000
CONFIDENCE_Z = 1.96  # value +- 1.96 standard deviations: an approximate 95% interval (normal approximation)
UNCERTAINTY = "standard_deviations"  # the report's section saying how every standard_deviation was made


def _thin(*curves: np.ndarray, limit: int = MAX_CURVE_POINTS, keep: np.ndarray | None = None) -> list[list[float]]:
    """At most ``limit`` points of a curve (plus the points ``keep`` indexes), evenly spaced along it, first and last
    point kept: every kept point is one of the curve's own."""
    length = len(curves[0])
    chosen = np.linspace(0, length - 1, min(length, limit)).round().astype(np.int64)
    if keep is not None and len(keep):
        chosen = np.concatenate([chosen, np.asarray(keep, dtype=np.int64)])
    chosen = np.unique(chosen)
    return [[float(value) for value in curve[chosen]] for curve in curves]


def precision_recall_points(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(precisions, recalls, thresholds) at every distinct score, ascending recall: a record is predicted positive
    when its score is at least the threshold. No point is made up (no recall-0 precision-1 end as scikit-learn's
    ``precision_recall_curve`` appends): the first point is the precision of the highest-scored records."""
    order = np.argsort(-scores, kind="stable")
    ranked_scores, ranked_labels = scores[order], labels[order].astype(np.float64)
    last_of_group = np.flatnonzero(np.r_[ranked_scores[1:] != ranked_scores[:-1], True])
    true_positives = np.cumsum(ranked_labels)[last_of_group]
    predicted_positive = (last_of_group + 1).astype(np.float64)
    precisions = true_positives / predicted_positive
    recalls = true_positives / max(float(ranked_labels.sum()), 1.0)
    return precisions, recalls, ranked_scores[last_of_group]


def operating_point(precisions: np.ndarray, recalls: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """The indexes of the curve's points at the predicted labels' own (precision, recall), so thinning keeps the
    point the report's threshold dot is drawn at."""
    (_, false_positives), (false_negatives, true_positives) = matrix
    precision = ratio(true_positives, true_positives + false_positives)
    recall = ratio(true_positives, true_positives + false_negatives)
    close = np.isclose(precisions, precision, rtol=0, atol=1e-12) & np.isclose(recalls, recall, rtol=0, atol=1e-12)
    return np.flatnonzero(close)


def _with_deviation(values: dict[str, float], deviations: dict[str, float]) -> dict[str, dict[str, float]]:
    return {name: {"value": values[name], "standard_deviation": deviations[name]} for name in values}


def _confusion_dict(matrix: np.ndarray, names: list[str] | None = None) -> dict[str, dict[str, int]]:
    """Model Monitor's layout: {true class: {predicted class: count}}, classes named by their label values."""
    name = namer(names)
    return {
        name(actual): {name(guess): int(matrix[actual, guess]) for guess in range(matrix.shape[1])}
        for actual in range(matrix.shape[0])
    }


def namer(names: list[str] | None) -> Callable[[int], str]:
    return lambda index: names[index] if names and index < len(names) else str(index)


def per_class_metrics(matrix: np.ndarray, names: list[str] | None = None) -> dict[str, dict[str, float]]:
    """Precision, recall, F1 and support of every class (rows: true class, columns: predicted)."""
    name = namer(names)
    result = {}
    for index in range(matrix.shape[0]):
        true_positive = float(matrix[index, index])
        precision = ratio(true_positive, float(matrix[:, index].sum()))
        recall = ratio(true_positive, float(matrix[index, :].sum()))
        result[name(index)] = {
            "precision": precision,
            "recall": recall,
            "f1": f_beta(precision, recall, 1.0),
            "support": int(matrix[index, :].sum()),
        }
    return result


def summary_parts(summary_dir: Path | None) -> list[tuple[Path, dict[str, Any]]]:
    """Preprocess's summary as its hosts wrote it (``summary-<host>.json`` each, or one ``summary.json``), parsed;
    empty without a summary folder."""
    if summary_dir is None or not summary_dir.is_dir():
        return []
    parts = []
    for path in sorted(summary_dir.glob("summary-*.json")) or sorted(summary_dir.glob("summary.json")):
        try:
            parts.append((path, json.loads(path.read_text())))
        except (OSError, ValueError) as error:
            raise EvaluationError(f"{path}: not a readable Preprocess summary ({error})") from error
    return parts


def label_names(summary_dir: Path | None) -> list[str] | None:
    """The label values Preprocess mapped to 0..K-1 (from its summary), or None when labels were already numeric.

    Every host's summary part must agree on the feature layout and the label values: hosts that built different
    layouts (possible only when no schema was passed) trained one model on mixed columns, so that is an error."""
    parts = summary_parts(summary_dir)
    if not parts:
        return None
    (first_path, first), *others = parts
    for path, part in others:
        for key in ("feature_names", "label_values"):
            if part.get(key) != first.get(key):
                raise EvaluationError(
                    f"Preprocess hosts built different layouts: {key} of {first_path.name} is {first.get(key)} but "
                    f"{path.name} has {part.get(key)}; pass one schema to every host: leave schema "
                    "inference on, or set pipeline parameter SchemaUrl"
                )
    values = first.get("label_values")
    return [str(value) for value in values] if values else None


def binary_report(scored: Scored, rounds: int, seed: int, names: list[str] | None = None) -> dict[str, Any]:
    labels, scores, predicted = scored.labels.astype(np.int64), scored.scores, scored.predicted_labels
    assert predicted is not None
    matrix = confusion(labels, predicted, 2)
    check_both_classes(matrix)
    metrics = _binary_metrics(labels, scores, predicted, rounds, seed)
    false_positive_rates, true_positive_rates, _ = roc_curve(labels, scores)
    precisions, recalls, thresholds = precision_recall_points(labels, scores)
    curves = (false_positive_rates, true_positive_rates, precisions, recalls, thresholds)
    return binary_section(matrix, metrics, curves, names)


def _binary_metrics(
    labels: np.ndarray, scores: np.ndarray, predicted: np.ndarray, rounds: int, seed: int
) -> dict[str, dict[str, float]]:
    """Every scalar binary metric with its bootstrap deviation (the ranks are released before the curves are built)."""
    ranked = RankedScores.of(scores)
    values = binary_scalars(confusion(labels, predicted, 2), ranked.auc(labels))
    deviations = bootstrap_standard_deviations(
        lambda weights: binary_scalars(confusion(labels, predicted, 2, weights), ranked.auc(labels, weights)),
        len(labels),
        rounds,
        seed,
    )
    return _with_deviation(values, deviations)


def check_both_classes(matrix: np.ndarray) -> None:
    """AUC, the gate metric, needs both classes among the test labels."""
    present = np.flatnonzero(matrix.sum(axis=1))
    if len(present) != 2:
        raise EvaluationError(
            f"the test labels hold only class {present[0]}: AUC (the gate metric) needs both classes 0 and 1"
        )


def binary_section(
    matrix: np.ndarray,
    metrics: dict[str, dict[str, float]],
    curves: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    names: list[str] | None = None,
) -> dict[str, Any]:
    """``binary_classification_metrics`` in Model Monitor's order; ``curves``: scikit-learn's roc_curve (fpr, tpr)
    layout, then :func:`precision_recall_points`' (precisions, recalls, thresholds), ascending recall."""
    false_positive_rates, true_positive_rates, precisions, recalls, thresholds = curves
    ordered: dict[str, Any] = {"confusion_matrix": _confusion_dict(matrix, names)}
    for name in list(metrics)[:10]:  # Model Monitor's order: the rates, then the curves, then auc and F-scores
        ordered[name] = metrics[name]
    fpr, tpr = _thin(false_positive_rates, true_positive_rates)
    ordered["receiver_operating_characteristic_curve"] = {"false_positive_rates": fpr, "true_positive_rates": tpr}
    keep = operating_point(precisions, recalls, matrix)
    pr_precisions, pr_recalls, pr_thresholds = _thin(precisions, recalls, thresholds, keep=keep)
    ordered["precision_recall_curve"] = {
        "precisions": pr_precisions,
        "recalls": pr_recalls,
        "thresholds": pr_thresholds,
    }
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
    scored: Scored | Collected, predictor_type: str, rounds: int, seed: int, names: list[str] | None = None
) -> dict[str, Any]:
    """The whole evaluation.json document; ``names`` (the label values, in class order) name the classes. From
    every record (a :class:`Scored`, or :class:`Collected` below its cap) the metrics are exact; past the cap they
    come from the sketch (``sketch.py``), and the report's ``sketch`` section says how."""
    if isinstance(scored, Collected):
        if scored.sketch is not None:
            return sketch_report(scored, predictor_type, names)
        assert scored.scored is not None
        scored = scored.scored
    builders = {"binary_classifier": binary_report, "multiclass_classifier": multiclass_report}
    metrics = builders.get(predictor_type, regression_report)(scored, rounds, seed, names)
    matrix = None
    if predictor_type != "regressor":
        assert scored.predicted_labels is not None
        classes = 2 if predictor_type == "binary_classifier" else scored.scores.shape[1]
        matrix = confusion(scored.labels.astype(np.int64), scored.predicted_labels, classes)
    sample = prediction_sample(scored, seed) if predictor_type == "regressor" else None
    report = assemble(
        predictor_type, metrics, len(scored.labels), scored.file_count, scored.score_kind, matrix, sample, names
    )
    residuals = scored.labels - scored.scores if predictor_type == "regressor" else None
    analytic = analytic_deviations(predictor_type, metrics, matrix, residuals)
    report[UNCERTAINTY] = uncertainty_section(len(scored.labels), rounds, "multinomial", analytic)
    return report


def analytic_deviations(
    predictor_type: str, metrics: dict[str, Any], matrix: np.ndarray | None, residuals: np.ndarray | None
) -> dict[str, dict[str, Any]]:
    """Standard errors by formula, beside the bootstrap's: the AUC's (Hanley-McNeil), accuracy's (binomial), the
    RMSE's (delta method, from the residuals when they are at hand)."""
    found: dict[str, dict[str, Any]] = {}
    if matrix is not None:
        n = float(matrix.sum())
        accuracy = metrics["accuracy"]["value"]
        found["accuracy"] = {"standard_deviation": binomial_deviation(accuracy, n), "method": "binomial"}
    if predictor_type == "binary_classifier" and matrix is not None:
        positives, negatives = float(matrix[1].sum()), float(matrix[0].sum())
        deviation = hanley_mcneil_deviation(metrics["auc"]["value"], positives, negatives)
        found["auc"] = {"standard_deviation": deviation, "method": "Hanley-McNeil (1982)"}
    if predictor_type == "regressor" and residuals is not None:
        found["rmse"] = {"standard_deviation": rmse_deviation(residuals), "method": "delta method"}
    return found


def uncertainty_section(n: int, rounds: int, bootstrap: str, analytic: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """How every ``standard_deviation`` was made, at every test size, and the confidence it states."""
    used = rounds if rounds >= 2 and n >= 2 else 0
    return {
        "method": "bootstrap" if used else "none (fewer than 2 bootstrap rounds or records)",
        "bootstrap": bootstrap,  # multinomial: n of n records with replacement; poisson: each record weighs Poisson(1)
        "bootstrap_rounds": used,
        "records": n,
        "confidence": f"value +- {CONFIDENCE_Z} standard deviations: about a 95% interval (normal approximation)",
        "analytic": analytic,
    }


def sketch_report(collected: Collected, predictor_type: str, names: list[str] | None = None) -> dict[str, Any]:
    """The report from the sketch of a test split past the cap: the same layout, plus the ``sketch`` section."""
    sketch = collected.sketch
    values, deviations = sketch.values_and_deviations()
    metrics: dict[str, Any] = _with_deviation(values, deviations)
    matrix = sample = None
    if predictor_type == "binary_classifier":
        matrix = sketch.confusion()
        check_both_classes(matrix)
        metrics = binary_section(matrix, metrics, sketch.curves(), names)
    elif predictor_type == "multiclass_classifier":
        matrix = sketch.confusion()
        metrics = {"confusion_matrix": _confusion_dict(matrix, names), **metrics}
    else:
        sample = sketch.prediction_sample()
    report = assemble(
        predictor_type, metrics, collected.item_count, collected.file_count, collected.score_kind, matrix, sample, names
    )
    report["sketch"] = {"exact_records_cap": collected.exact_records_cap, **sketch.description()}
    analytic = analytic_deviations(predictor_type, metrics, matrix, None)
    report[UNCERTAINTY] = uncertainty_section(collected.item_count, sketch.poisson.rounds, "poisson", analytic)
    return report


def assemble(
    predictor_type: str,
    metrics: dict[str, Any],
    item_count: int,
    file_count: int,
    kind: str,
    matrix: np.ndarray | None,
    sample: dict[str, Any] | None,
    names: list[str] | None,
) -> dict[str, Any]:
    """The document around the metrics section: dataset, score kind, gate, and the class or sample details."""
    gate_metric = GATE_METRICS[predictor_type]
    report: dict[str, Any] = {
        "version": 0.0,
        "dataset": {"item_count": item_count, "file_count": file_count},
        # what "score" was: AUC and the curves rank by it; the other binary metrics use predicted_label
        "score": {"kind": kind},
        METRICS_SECTIONS[predictor_type]: metrics,
        "gate": {"metric": gate_metric, "value": metrics[gate_metric]["value"]},
    }
    if sample is not None:
        report["prediction_sample"] = sample
    if matrix is not None:
        report["class_names"] = [namer(names)(index) for index in range(matrix.shape[0])]
        report["per_class_metrics"] = per_class_metrics(matrix, names)
    return report


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
