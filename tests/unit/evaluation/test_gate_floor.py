"""The gate's automatic floor (MetricThreshold -1, the default): on real RecordIO shards and real Evaluate runs, a
model as good as scikit-learn's passes whatever its metric's scale (r2 0.45 as AUC 0.9), one no better than a
constant fails, and an explicit MetricThreshold still decides as set."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, make_classification
from sklearn.linear_model import LogisticRegression, Ridge

from containerlib.recordio import write_dense
from evaluation.evaluate import main
from evaluation.floor import GATE_DEVIATIONS, automatic_floor


def table(predictor_type: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    if predictor_type == "regressor":
        X, y = load_diabetes(return_X_y=True)
    else:
        classes = 2 if predictor_type == "binary_classifier" else 3
        X, y = make_classification(400, 6, n_informative=4, n_classes=classes, flip_y=0.05, random_state=2)
    order = np.random.default_rng(4).permutation(len(y))
    X, y = X[order].astype(np.float32), y[order].astype(np.float32)
    cut = int(len(y) * 0.7)
    return X[:cut], y[:cut], X[cut:], y[cut:]


def predictions(predictor_type: str, model: str, X_train, y_train, X_test) -> list[dict[str, Any]]:
    """A fitted model's predictions (``fitted``: about what the baseline gets) or a constant-like one's (``noise``)."""
    rng = np.random.default_rng(9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if predictor_type == "regressor":
            values = Ridge(alpha=0.01).fit(X_train, y_train).predict(X_test)
            if model == "noise":
                values = y_train.mean() + rng.normal(scale=1.0, size=len(X_test))
            return [{"score": float(v)} for v in values]
        fitted = LogisticRegression(max_iter=1000).fit(X_train, y_train.astype(int))
        probabilities = fitted.predict_proba(X_test)
        if model == "noise":
            probabilities = rng.dirichlet(np.ones(probabilities.shape[1]), size=len(X_test))
    if predictor_type == "binary_classifier":
        return [{"score": float(p[1]), "predicted_label": int(p[1] > 0.5)} for p in probabilities]
    return [{"score": [float(v) for v in p], "predicted_label": int(p.argmax())} for p in probabilities]


def run(tmp_path: Path, predictor_type: str, model: str, threshold: str = "-1") -> dict[str, Any]:
    X_train, y_train, X_test, y_test = table(predictor_type)
    for name, X, y in (("train", X_train, y_train), ("test", X_test, y_test)):
        (tmp_path / name).mkdir(parents=True)
        with (tmp_path / name / "part-0.pbr").open("wb") as shard:
            write_dense(shard, X, y)
    (tmp_path / "predictions").mkdir()
    records = predictions(predictor_type, model, X_train, y_train, X_test)
    (tmp_path / "predictions" / "part-0.pbr.out").write_text("".join(json.dumps(r) + "\n" for r in records))
    args = ["--predictions-dir", tmp_path / "predictions", "--test-dir", tmp_path / "test", "--train-dir"]
    args += [tmp_path / "train", "--output-dir", tmp_path / "out", "--predictor-type", predictor_type]
    assert main([*map(str, args), "--metric-threshold", threshold]) == 0
    return json.loads((tmp_path / "out" / "evaluation.json").read_text())


@pytest.mark.parametrize("predictor_type", ["binary_classifier", "multiclass_classifier", "regressor"])
def test_a_model_as_good_as_the_baseline_passes_and_one_no_better_than_a_constant_fails(
    tmp_path: Path, predictor_type: str
) -> None:
    good = run(tmp_path / "good", predictor_type, "fitted")
    decision = good["decision"]
    assert decision["metric_threshold"] == -1.0 and decision["automatic_floor"]["applied"] is True
    assert decision["threshold_floor"] == decision["automatic_floor"]["value"]
    assert decision["promote"] is True, decision["reason"]
    assert "the automatic floor" in decision["reason"]
    if predictor_type == "regressor":  # diabetes: r2 about 0.45, which MetricThreshold 0.6 failed
        assert 0.3 < good["gate"]["value"] < 0.6

    bad = run(tmp_path / "bad", predictor_type, "noise")
    floor = bad["decision"]["automatic_floor"]
    assert bad["decision"]["promote"] is False
    assert bad["gate"]["value"] < bad["decision"]["threshold_floor"] == floor["value"]
    # the floor is the higher of its two parts, each as the module states it
    metric = bad["gate"]["metric"]
    section = bad[next(key for key in bad if key.endswith("_metrics"))]
    deviation = section[metric]["standard_deviation"]
    counts = [sum(row.values()) for row in section.get("confusion_matrix", {}).values()]
    step = {"auc": 1 / min(counts or [1]), "accuracy": 1 / sum(counts or [1]), "r2": 0.0}[metric]
    margin = max(GATE_DEVIATIONS * deviation, step)
    assert floor["constant_floor"] == pytest.approx(floor["constant_value"] + margin)
    baseline = bad["baseline"]
    theirs = baseline[next(key for key in baseline if key.endswith("_metrics"))][metric]["standard_deviation"]
    expected = baseline["gate"]["value"] - max(GATE_DEVIATIONS * math.hypot(deviation, theirs), step)
    assert floor["baseline_floor"] == pytest.approx(expected)
    assert floor["value"] == max(floor["constant_floor"], floor["baseline_floor"])


def test_an_explicit_metric_threshold_decides_as_set(tmp_path: Path) -> None:
    report = run(tmp_path, "regressor", "fitted", threshold="0.6")
    decision = report["decision"]
    assert decision["threshold_floor"] == 0.6 and decision["automatic_floor"]["applied"] is False
    assert decision["promote"] is False and "is below MetricThreshold 0.6" in decision["reason"]


@pytest.mark.parametrize(
    ("predictor_type", "section", "constant"),
    [
        ("binary_classifier", {"auc": {"value": 0.8, "standard_deviation": 0.05}}, 0.5),
        (
            "multiclass_classifier",
            {
                "accuracy": {"value": 0.9, "standard_deviation": math.nan},
                "accuracy_best_constant_classifier": {"value": 0.7, "standard_deviation": 0.0},
            },
            0.7,
        ),
        ("regressor", {"r2": {"value": 0.3, "standard_deviation": 0.04}}, 0.0),
    ],
)
def test_the_best_constant_predictor_and_the_deviation_fallback(
    predictor_type: str, section: dict[str, Any], constant: float
) -> None:
    """AUC 0.5, the majority class's accuracy, r2 0; a NaN bootstrap deviation falls back on the analytic one (no
    confusion matrix here: no record's-worth minimum)."""
    from containerlib.names import METRICS_SECTIONS

    report = {
        METRICS_SECTIONS[predictor_type]: section,
        "standard_deviations": {"analytic": {"accuracy": {"standard_deviation": 0.03}}},
    }
    floor = automatic_floor(report, predictor_type)
    metric = next(iter(section))
    deviation = section[metric]["standard_deviation"]
    deviation = 0.03 if math.isnan(deviation) else deviation
    assert floor.constant_value == constant and floor.baseline_floor is None
    assert floor.value == pytest.approx(constant + GATE_DEVIATIONS * deviation)


def test_perfect_and_constant_scores_at_the_metrics_bounds() -> None:
    """The bootstrap sees no noise at AUC 1 or for constant scores: one record's worth is the least margin, so a model
    one record below a perfect baseline passes and a model of constant scores (AUC 0.5, deviation 0) fails."""
    matrix = {"0": {"0": 50, "1": 0}, "1": {"0": 0, "1": 20}}
    perfect = {"auc": {"value": 1.0, "standard_deviation": 0.0}, "confusion_matrix": matrix}
    report = {
        "binary_classification_metrics": {
            "auc": {"value": 1 - 1 / (20 * 50), "standard_deviation": 0.0},
            "confusion_matrix": matrix,
        },
        "baseline": {"binary_classification_metrics": perfect, "gate": {"metric": "auc", "value": 1.0}},
    }
    floor = automatic_floor(report, "binary_classifier")
    assert floor.baseline_floor == pytest.approx(1 - 1 / 20)
    assert report["binary_classification_metrics"]["auc"]["value"] >= floor.value
    constant = {
        "binary_classification_metrics": {"auc": {"value": 0.5, "standard_deviation": 0.0}, "confusion_matrix": matrix}
    }
    assert 0.5 < automatic_floor(constant, "binary_classifier").value == pytest.approx(0.5 + 1 / 20)
