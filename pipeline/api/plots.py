"""PNG plots of an ``evaluation.json`` model-quality report, for people who would rather look than read.

Binary classifiers get the ROC curve, the precision-recall curve and the confusion matrix; multiclass classifiers the
confusion matrix; regressors predicted-versus-actual and residual plots, drawn from the report's
``prediction_sample`` or from (labels, predictions) arrays handed in. When the report holds the approved champion scored
on the same test split, its ROC and precision-recall curves, its predictions or its confusion matrix are drawn beside
the new model's; so are the scikit-learn baselines' curves and predictions (on the encoded features, and on the raw
columns), when the report holds them. Figures are drawn with matplotlib's Agg canvas
directly (no pyplot global state) and written under a temporary name, then renamed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.core.files import atomic_path
from pipeline.core.names import (
    BINARY_CLASSIFIER,
    CHAMPION,
    METRICS_SECTIONS,
    MULTICLASS_CLASSIFIER,
    RAW_BASELINE,
    REGRESSOR,
    SKLEARN_BASELINE,
)

__all__ = ["PlotError", "new_figure", "render_plots", "render_tuning_plot", "save_figure"]

SECTIONS = tuple(METRICS_SECTIONS.values())


class PlotError(ValueError):
    """The report cannot be plotted; the message names the file and what is missing."""


def plots_key(report_path: Path) -> str:
    """The key of a report's plots: its bytes and this module's code (a fix to a plot renders it again)."""
    from pipeline.core.verified import key_of

    return key_of(Path(report_path).read_bytes(), Path(__file__).read_bytes())


def render_plots(
    report_path: Path,
    output_dir: Path,
    predictions: tuple[Sequence[float], Sequence[float]] | None = None,
) -> list[Path]:
    """Renders every plot the report supports into ``output_dir``; returns the PNG paths in a stable order.

    ``predictions`` is an optional (labels, predictions) pair for regression plots; without it the report's
    ``prediction_sample`` is used, and a regression report with neither yields no plots.
    """
    report = _read_report(Path(report_path))
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    champion = report.get(CHAMPION) if isinstance(report.get(CHAMPION), dict) else {}
    if METRICS_SECTIONS[BINARY_CLASSIFIER] in report:
        metrics = report[METRICS_SECTIONS[BINARY_CLASSIFIER]]
        theirs = _champion_metrics(champion, METRICS_SECTIONS[BINARY_CLASSIFIER])
        baselines = _baselines(report, METRICS_SECTIONS[BINARY_CLASSIFIER])
        return [
            save_figure(_roc_figure(metrics, report_path, theirs, baselines), output_dir / "roc_curve.png"),
            save_figure(
                _precision_recall_figure(metrics, report_path, theirs, baselines),
                output_dir / "precision_recall_curve.png",
            ),
            save_figure(
                _confusion_figure(metrics, "binary classifier", report_path, report.get("class_names")),
                output_dir / "confusion_matrix.png",
            ),
        ]
    if METRICS_SECTIONS[MULTICLASS_CLASSIFIER] in report:
        metrics = report[METRICS_SECTIONS[MULTICLASS_CLASSIFIER]]
        figure = _confusion_figure(metrics, "multiclass classifier", report_path, report.get("class_names"))
        paths = [save_figure(figure, output_dir / "confusion_matrix.png")]
        theirs = _champion_metrics(champion, METRICS_SECTIONS[MULTICLASS_CLASSIFIER])
        if theirs:
            figure = _confusion_figure(theirs[0], f"champion version {theirs[1]}", report_path)
            paths.append(save_figure(figure, output_dir / "champion_confusion_matrix.png"))
        return paths
    labels, predicted, total = _regression_pairs(report, predictions, report_path)
    if labels is None or predicted is None:
        return []
    metrics = report[METRICS_SECTIONS[REGRESSOR]]
    samples = _baseline_samples(report)
    figure = _predicted_vs_actual_figure(labels, predicted, total, metrics, _champion_sample(champion, labels), samples)
    return [
        save_figure(figure, output_dir / "predicted_vs_actual.png"),
        save_figure(_residuals_figure(labels, predicted), output_dir / "residuals.png"),
    ]


Champion = tuple[dict[str, Any], str]  # the champion's metrics section and its version
Baseline = tuple[str, dict[str, Any], str]  # a baseline's label, its metrics section, its line style
BASELINES = ((SKLEARN_BASELINE, "scikit-learn baseline", ":"), (RAW_BASELINE, "scikit-learn, raw columns", "--"))
BASELINE_COLOURS = {":": "tab:green", "--": "tab:purple"}


def _baselines(report: dict[str, Any], section: str) -> list[Baseline]:
    """The report's scikit-learn baselines that hold curves: (label, metrics, line style)."""
    found = []
    for key, label, style in BASELINES:
        metrics = (report.get(key) or {}).get(section) if isinstance(report.get(key), dict) else None
        if isinstance(metrics, dict) and "receiver_operating_characteristic_curve" in metrics:
            found.append((label, metrics, style))
    return found


def _baseline_samples(report: dict[str, Any]) -> list[tuple[str, np.ndarray, np.ndarray, str]]:
    """The baselines' (label, actual, predicted, colour) samples, for the predicted-versus-actual plot."""
    found = []
    for key, label, style in BASELINES:
        sample = (report.get(key) or {}).get("prediction_sample") if isinstance(report.get(key), dict) else None
        if isinstance(sample, dict) and sample.get("labels"):
            actual = np.asarray(sample["labels"], dtype=float)
            predicted = np.asarray(sample.get("predictions", []), dtype=float)
            if actual.shape == predicted.shape:
                found.append((label, actual, predicted, BASELINE_COLOURS[style]))
    return found


def _champion_metrics(champion: dict[str, Any], section: str) -> Champion | None:
    metrics = champion.get(section)
    return (metrics, str(champion.get("version", "?"))) if isinstance(metrics, dict) else None


def _champion_sample(champion: dict[str, Any], labels: np.ndarray) -> tuple[np.ndarray, str] | None:
    """The champion's predictions of the same sampled records (same seed, same rows), when the report has them."""
    sample = champion.get("prediction_sample")
    if not isinstance(sample, dict):
        return None
    predicted = np.asarray(sample.get("predictions", []), dtype=float)
    if predicted.shape != labels.shape or not np.array_equal(np.asarray(sample.get("labels", []), float), labels):
        return None
    return predicted, str(champion.get("version", "?"))


def _read_report(path: Path) -> dict[str, Any]:
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise PlotError(f"cannot read report {path}: {error.strerror}") from error
    except json.JSONDecodeError as error:
        raise PlotError(f"report {path} is not valid JSON: {error}") from error
    if not isinstance(report, dict) or not any(section in report for section in SECTIONS):
        raise PlotError(f"report {path} holds none of {', '.join(SECTIONS)}")
    return report


def new_figure(width: float = 5.0, height: float = 4.5) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def save_figure(figure: Any, target: Path) -> Path:
    with atomic_path(target) as temporary:
        figure.savefig(temporary, format="png", metadata={"Software": None})
    return target


def _value(metrics: dict[str, Any], name: str) -> float | None:
    metric = metrics.get(name)
    value = metric.get("value") if isinstance(metric, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


def _curve(metrics: dict[str, Any], name: str, x: str, y: str, report_path: Path) -> tuple[list[float], list[float]]:
    curve = metrics.get(name)
    if not isinstance(curve, dict) or not isinstance(curve.get(x), list) or not isinstance(curve.get(y), list):
        raise PlotError(f"report {report_path}: {name} with lists {x} and {y} is missing")
    return curve[x], curve[y]


def _roc_figure(
    metrics: dict[str, Any], report_path: Path, champion: Champion | None = None, baselines: Sequence[Baseline] = ()
) -> Any:
    false_positive_rates, true_positive_rates = _curve(
        metrics, "receiver_operating_characteristic_curve", "false_positive_rates", "true_positive_rates", report_path
    )
    figure = new_figure()
    axes = figure.add_subplot()
    auc = _value(metrics, "auc")
    axes.plot(false_positive_rates, true_positive_rates, color="tab:blue", lw=2, label=f"model (AUC {auc:.3f})")
    if champion:
        their_metrics, version = champion
        theirs = _curve(
            their_metrics,
            "receiver_operating_characteristic_curve",
            "false_positive_rates",
            "true_positive_rates",
            report_path,
        )
        their_auc = _value(their_metrics, "auc")
        label = f"champion v{version}" + (f" (AUC {their_auc:.3f})" if their_auc is not None else "")
        axes.plot(*theirs, color="tab:orange", lw=1.5, ls="-.", label=label)
    for name, their_metrics, style in baselines:
        rates = _curve(
            their_metrics,
            "receiver_operating_characteristic_curve",
            "false_positive_rates",
            "true_positive_rates",
            report_path,
        )
        their_auc = _value(their_metrics, "auc")
        label = name + (f" (AUC {their_auc:.3f})" if their_auc is not None else "")
        axes.plot(*rates, color=BASELINE_COLOURS[style], lw=1.2, ls=style, label=label)
    axes.plot([0, 1], [0, 1], color="grey", ls="--", lw=1, label="chance")
    false_positive_rate, true_positive_rate = _value(metrics, "false_positive_rate"), _value(metrics, "recall")
    if false_positive_rate is not None and true_positive_rate is not None:
        axes.plot(false_positive_rate, true_positive_rate, "o", color="tab:red", label="decision threshold")
    axes.set(xlim=(0, 1), ylim=(0, 1.01), xlabel="false positive rate", ylabel="true positive rate", title="ROC curve")
    axes.legend(loc="lower right")
    axes.grid(alpha=0.3)
    return figure


def _precision_recall_figure(
    metrics: dict[str, Any], report_path: Path, champion: Champion | None = None, baselines: Sequence[Baseline] = ()
) -> Any:
    precisions, recalls = _curve(metrics, "precision_recall_curve", "precisions", "recalls", report_path)
    figure = new_figure()
    axes = figure.add_subplot()
    # the report's points are the curve's own, one per distinct score: drawn as a line through them (a step from a
    # made-up recall-0 point would show precisions no threshold has)
    axes.plot(recalls, precisions, color="tab:blue", lw=2, label="model")
    if champion:
        their_metrics, version = champion
        theirs = _curve(their_metrics, "precision_recall_curve", "precisions", "recalls", report_path)
        label = f"champion v{version}"
        axes.plot(theirs[1], theirs[0], color="tab:orange", lw=1.5, ls="-.", label=label)
    for name, their_metrics, style in baselines:
        precisions_b, recalls_b = _curve(their_metrics, "precision_recall_curve", "precisions", "recalls", report_path)
        axes.plot(recalls_b, precisions_b, color=BASELINE_COLOURS[style], lw=1.2, ls=style, label=name)
    prevalence = _value(metrics, "precision_best_constant_classifier")
    if prevalence is not None:
        axes.axhline(prevalence, color="grey", ls="--", lw=1, label=f"always positive ({prevalence:.3f})")
    precision, recall = _value(metrics, "precision"), _value(metrics, "recall")
    if precision is not None and recall is not None:
        axes.plot(recall, precision, "o", color="tab:red", label="decision threshold")
    axes.set(xlim=(0, 1), ylim=(0, 1.01), xlabel="recall", ylabel="precision", title="Precision-recall curve")
    axes.legend(loc="lower left")
    axes.grid(alpha=0.3)
    return figure


def _confusion_figure(
    metrics: dict[str, Any], kind: str, report_path: Path, class_names: list[str] | None = None
) -> Any:
    table = metrics.get("confusion_matrix")
    if not isinstance(table, dict) or not table:
        raise PlotError(f"report {report_path}: confusion_matrix is missing")
    classes = sorted({*table, *(guess for row in table.values() for guess in row)}, key=_class_order)
    if set(class_names or []) == set(classes):
        classes = list(class_names or [])  # the report's class order: label values in the order mapped to 0..K-1
    counts = np.array([[table.get(actual, {}).get(guess, 0) for guess in classes] for actual in classes], dtype=float)
    row_totals = counts.sum(axis=1, keepdims=True)
    shares = np.divide(counts, row_totals, out=np.zeros_like(counts), where=row_totals > 0)
    size = max(4.0, 0.6 * len(classes) + 2.5)
    figure = new_figure(size + 1.0, size)
    axes = figure.add_subplot()
    image = axes.imshow(shares, cmap="Blues", vmin=0, vmax=1)
    figure.colorbar(image, ax=axes, label="share of the true class")
    if len(classes) <= 20:
        for row, column in np.ndindex(counts.shape):
            colour = "white" if shares[row, column] > 0.5 else "black"
            axes.text(column, row, f"{int(counts[row, column])}", ha="center", va="center", color=colour)
    accuracy = _value(metrics, "accuracy")
    axes.set(
        xticks=range(len(classes)),
        yticks=range(len(classes)),
        xticklabels=classes,
        yticklabels=classes,
        xlabel="predicted class",
        ylabel="true class",
        title=f"Confusion matrix ({kind})" + (f", accuracy {accuracy:.3f}" if accuracy is not None else ""),
    )
    return figure


def _class_order(name: str) -> tuple[int, float | str]:
    try:
        return (0, float(name))
    except ValueError:
        return (1, name)


def _regression_pairs(
    report: dict[str, Any], predictions: tuple[Sequence[float], Sequence[float]] | None, report_path: Path
) -> tuple[np.ndarray | None, np.ndarray | None, int]:
    """(labels, predictions, records they were drawn from), or Nones when there is nothing to plot."""
    if predictions is not None:
        labels, predicted = (np.asarray(values, dtype=float).reshape(-1) for values in predictions)
        source, total = "the predictions given", labels.size
    elif isinstance(report.get("prediction_sample"), dict):
        sample = report["prediction_sample"]
        labels = np.asarray(sample.get("labels", []), dtype=float)
        predicted = np.asarray(sample.get("predictions", []), dtype=float)
        source, total = f"report {report_path}: prediction_sample", int(sample.get("item_count", labels.size))
    else:
        return None, None, 0
    if labels.shape != predicted.shape or labels.size == 0:
        raise PlotError(f"{source}: labels ({labels.size}) and predictions ({predicted.size}) must be non-empty pairs")
    return labels, predicted, total


def _predicted_vs_actual_figure(
    labels: np.ndarray,
    predicted: np.ndarray,
    total: int,
    metrics: dict[str, Any],
    champion: tuple[np.ndarray, str] | None = None,
    baselines: Sequence[tuple[str, np.ndarray, np.ndarray, str]] = (),
) -> Any:
    figure = new_figure()
    axes = figure.add_subplot()
    shown = f"{labels.size:,} records" + (f" (sample of {total:,})" if total > labels.size else "")
    axes.scatter(labels, predicted, s=8, alpha=0.5, color="tab:blue", edgecolors="none", label=shown)
    if champion is not None:
        their_predictions, version = champion
        axes.scatter(
            labels, their_predictions, s=8, alpha=0.4, color="tab:orange", marker="x", label=f"champion v{version}"
        )
        predicted = np.concatenate([predicted, their_predictions])  # the axis range covers both
        labels = np.concatenate([labels, labels])
    for name, actual, their_predictions, colour in baselines:  # each its own sample of the test records
        axes.scatter(actual, their_predictions, s=8, alpha=0.35, color=colour, marker="+", label=name)
        predicted = np.concatenate([predicted, their_predictions])
        labels = np.concatenate([labels, actual])
    low, high = float(min(labels.min(), predicted.min())), float(max(labels.max(), predicted.max()))
    axes.plot([low, high], [low, high], color="grey", ls="--", lw=1, label="perfect prediction")
    r2, rmse = _value(metrics, "r2"), _value(metrics, "rmse")
    summary = ", ".join(f"{name} {value:.3f}" for name, value in (("R²", r2), ("RMSE", rmse)) if value is not None)
    axes.set(xlabel="actual", ylabel="predicted", title=f"Predicted vs actual ({summary})" if summary else None)
    axes.legend(loc="upper left")
    axes.grid(alpha=0.3)
    return figure


def _residuals_figure(labels: np.ndarray, predicted: np.ndarray) -> Any:
    residuals = labels - predicted
    figure = new_figure(9.0, 4.0)
    scatter, histogram = figure.subplots(1, 2)
    scatter.scatter(predicted, residuals, s=8, alpha=0.5, color="tab:blue", edgecolors="none")
    scatter.axhline(0, color="grey", ls="--", lw=1)
    scatter.set(xlabel="predicted", ylabel="residual (actual - predicted)", title="Residuals")
    scatter.grid(alpha=0.3)
    low, high = float(residuals.min()), float(residuals.max())
    if high - low <= 1e-9 * max(1.0, abs(low), abs(high)):  # (near) constant residuals: one bar, not an error
        low, high = low - 0.5, high + 0.5
    edges = np.linspace(low, high, min(50, max(10, residuals.size // 20)) + 1)
    histogram.hist(residuals, bins=edges, color="tab:blue", alpha=0.8)
    histogram.axvline(0, color="grey", ls="--", lw=1)
    histogram.set(xlabel="residual", ylabel="records", title="Residual distribution")
    return figure


def render_tuning_plot(trials: Sequence[dict[str, Any]], metric: str, kind: str, target: Path) -> Path:
    """The objective of each training job of a tuning job in the order they ran, with the best so far as a line;
    ``trials`` are rows with ``number`` and ``objective`` (None for a job that reported none)."""
    scored = [(row["number"], float(row["objective"])) for row in trials if row.get("objective") is not None]
    if not scored:
        raise PlotError(f"no training job of the tuning job reported {metric}")
    numbers, values = (np.array(column) for column in zip(*scored, strict=True))
    better = np.minimum if kind == "Minimize" else np.maximum
    best_so_far = better.accumulate(values)
    figure = new_figure(6.0, 4.0)
    axes = figure.add_subplot()
    axes.plot(numbers, values, "o", color="tab:blue", label="training job")
    axes.step(numbers, best_so_far, where="post", color="tab:red", lw=2, label="best so far")
    best = int(np.argmin(values) if kind == "Minimize" else np.argmax(values))
    axes.plot(numbers[best], values[best], "*", color="tab:red", ms=14, label=f"best: job {numbers[best]}")
    failed = [row["number"] for row in trials if row.get("objective") is None]
    if failed:
        axes.plot(
            failed,
            [values.max() if kind == "Minimize" else values.min()] * len(failed),
            "x",
            color="grey",
            label="no objective",
        )
    if values.min() > 0 and values.max() / values.min() > 10:  # an outlier would flatten the rest
        axes.set_yscale("log")
    axes.xaxis.get_major_locator().set_params(integer=True)
    axes.set(
        xlabel="training job (in the order started)", ylabel=metric, title=f"{metric} over {len(trials)} training jobs"
    )
    axes.legend(loc="best")
    axes.grid(alpha=0.3)
    target.parent.mkdir(parents=True, exist_ok=True)
    return save_figure(figure, target)
