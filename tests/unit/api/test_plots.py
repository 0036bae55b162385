"""PNG plots rendered from real evaluation reports (built by the Evaluate job's own report code)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.image import imread
from support.reports import report_file

from containerlib.predictions import Scored
from evaluation.report import build_report
from pipeline.api.plots import PlotError, render_plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def pixels(path: Path) -> np.ndarray:
    assert path.read_bytes()[:8] == PNG_MAGIC
    return imread(path)[:, :, :3]


def share_of_blue(image: np.ndarray) -> float:
    """Share of pixels in the data colour (tab:blue, also when drawn translucent); axes, text and grid are grey."""
    red, blue = image[:, :, 0], image[:, :, 2]
    return float(np.mean(blue - red > 0.15))


def test_binary_report_gives_roc_precision_recall_and_confusion_plots(tmp_path: Path) -> None:
    paths = render_plots(report_file(tmp_path, "binary_classifier"), tmp_path / "plots")
    assert [path.name for path in paths] == ["roc_curve.png", "precision_recall_curve.png", "confusion_matrix.png"]
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == sorted(p.name for p in paths)  # no temp files
    roc, precision_recall, confusion = (pixels(path) for path in paths)
    assert roc.shape == precision_recall.shape == (450, 500, 3)
    for curve in (roc, precision_recall):
        assert share_of_blue(curve) > 0.002  # the curve itself is drawn
    assert confusion.std() > 0.1


def test_plots_are_deterministic(tmp_path: Path) -> None:
    report = report_file(tmp_path, "binary_classifier")
    first = [path.read_bytes() for path in render_plots(report, tmp_path / "a")]
    second = [path.read_bytes() for path in render_plots(report, tmp_path / "b")]
    assert first == second


def test_curves_follow_the_report(tmp_path: Path) -> None:
    """A better model's ROC curve is drawn higher up the left half of the plot than the chance diagonal."""
    report: dict[str, Any] = json.loads(report_file(tmp_path, "binary_classifier").read_text())
    curve = report["binary_classification_metrics"]["receiver_operating_characteristic_curve"]

    def mean_blue_row(rates: tuple[list[float], list[float]], name: str) -> float:
        curve["false_positive_rates"], curve["true_positive_rates"] = rates
        (tmp_path / f"{name}.json").write_text(json.dumps(report))
        image = pixels(render_plots(tmp_path / f"{name}.json", tmp_path / name)[0])[:, :250]  # legend is right
        rows, _ = np.nonzero(image[:, :, 2] - image[:, :, 0] > 0.15)
        return float(rows.mean())

    good = mean_blue_row(([0.0, 0.1, 1.0], [0.0, 0.8, 1.0]), "good")
    chance = mean_blue_row(([0.0, 1.0], [0.0, 1.0]), "chance")
    assert good < chance - 50


def test_multiclass_report_gives_a_confusion_matrix(tmp_path: Path) -> None:
    paths = render_plots(report_file(tmp_path, "multiclass_classifier"), tmp_path / "plots")
    assert [path.name for path in paths] == ["confusion_matrix.png"]
    assert pixels(paths[0]).std() > 0.1


def test_regression_plots_from_the_report_sample_or_given_arrays(tmp_path: Path) -> None:
    report = report_file(tmp_path, "regressor")
    paths = render_plots(report, tmp_path / "plots")
    assert [path.name for path in paths] == ["predicted_vs_actual.png", "residuals.png"]
    assert share_of_blue(pixels(paths[0])) > 0.001

    stripped = json.loads(report.read_text())
    del stripped["prediction_sample"]
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(stripped))
    assert render_plots(bare, tmp_path / "none") == []
    labels = np.linspace(0, 1, 50)
    given = render_plots(bare, tmp_path / "given", predictions=(labels, labels + 0.1))
    assert [path.name for path in given] == ["predicted_vs_actual.png", "residuals.png"]
    with pytest.raises(PlotError, match=r"labels \(50\) and predictions \(49\)"):
        render_plots(bare, tmp_path / "bad", predictions=(labels, labels[:-1]))


def test_unreadable_reports_fail_clearly(tmp_path: Path) -> None:
    with pytest.raises(PlotError, match="cannot read report .*missing.json"):
        render_plots(tmp_path / "missing.json", tmp_path / "out")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(PlotError, match="broken.json is not valid JSON"):
        render_plots(tmp_path / "broken.json", tmp_path / "out")
    (tmp_path / "other.json").write_text('{"gate": {"metric": "auc", "value": 0.9}}')
    with pytest.raises(PlotError, match="holds none of binary_classification_metrics"):
        render_plots(tmp_path / "other.json", tmp_path / "out")


def test_label_values_name_the_confusion_matrix_axes_in_class_order(tmp_path: Path) -> None:
    generator = np.random.default_rng(4)
    labels = (generator.random(300) < 0.4).astype(float)
    scores = 1 / (1 + np.exp(-(3 * labels - 1.5 + generator.normal(size=300))))
    names = ["malignant", "benign"]  # class 0, class 1: not alphabetical, so the report's order must be kept
    report = build_report(Scored(labels, scores, (scores > 0.5).astype(np.int64), 1), "binary_classifier", 5, 0, names)
    assert set(report["binary_classification_metrics"]["confusion_matrix"]) == set(names)
    from pipeline.api.plots import _confusion_figure

    figure = _confusion_figure(report["binary_classification_metrics"], "binary", tmp_path, report["class_names"])
    axes = figure.axes[0]
    assert [label.get_text() for label in axes.get_xticklabels()] == names
    assert [label.get_text() for label in axes.get_yticklabels()] == names


def share_of_green_and_purple(image: np.ndarray) -> tuple[float, float]:
    """Shares of pixels in tab:green and tab:purple (also drawn thin and blended with the white)."""
    red, green, blue = image[:, :, 0], image[:, :, 1], image[:, :, 2]
    greens = green - np.maximum(red, blue) > 0.15
    purples = (blue - green > 0.2) & (red - green > 0.1)
    return float(greens.mean()), float(purples.mean())


@pytest.mark.parametrize("predictor_type", ["binary_classifier", "regressor"])
def test_the_baselines_are_drawn_beside_the_model(tmp_path: Path, predictor_type: str) -> None:
    """The scikit-learn baselines' ROC and precision-recall curves (binary) or predictions (regression), on the
    encoded features (green) and on the raw columns (purple), are drawn when the report holds them."""
    report: dict[str, Any] = json.loads(report_file(tmp_path, predictor_type).read_text())
    section = next(key for key in report if key.endswith("_metrics"))
    without = render_plots(report_file(tmp_path, predictor_type), tmp_path / "without")
    for key, bend in (("baseline", 0.3), ("baseline_raw_columns", 0.6)):
        report[key] = {section: json.loads(json.dumps(report[section])), "gate": report["gate"]}
        if "receiver_operating_characteristic_curve" in report[section]:  # curves of their own, off the model's
            roc = {"false_positive_rates": [0.0, bend, 1.0], "true_positive_rates": [0.0, 0.9, 1.0]}
            report[key][section]["receiver_operating_characteristic_curve"] = roc
            report[key][section]["precision_recall_curve"] = {"precisions": [bend, bend, 0.3], "recalls": [0, 0.5, 1]}
        if "prediction_sample" in report:
            sample = report["prediction_sample"]
            shifted = [value + (bend - 0.45) * (abs(value) + 1) for value in sample["predictions"]]
            report[key]["prediction_sample"] = {**sample, "predictions": shifted}
    (tmp_path / "with.json").write_text(json.dumps(report))
    drawn = render_plots(tmp_path / "with.json", tmp_path / "with")
    curves = drawn[:2] if predictor_type == "binary_classifier" else drawn[:1]
    for path, plain in zip(curves, without, strict=False):
        drawn_shares, plain_shares = share_of_green_and_purple(pixels(path)), share_of_green_and_purple(pixels(plain))
        for drawn_share, plain_share in zip(drawn_shares, plain_shares, strict=True):
            assert drawn_share > 0.0005 and plain_share < 0.0001, (path.name, drawn_shares, plain_shares)
