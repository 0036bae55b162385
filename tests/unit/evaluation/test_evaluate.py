"""The Evaluate job on real RecordIO test shards and real jsonlines predictions, checked against scikit-learn."""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn import metrics as skm
from support.evaluation_inputs import binary_case, predictions_for, write_binary_inputs, write_job_inputs

from evaluation.evaluate import main
from evaluation.metrics import RankedScores, binary_scalars, confusion, regression_scalars


def run(predictions_dir: Path, test_dir: Path, output_dir: Path, predictor_type: str) -> dict[str, Any]:
    args = ["--predictions-dir", str(predictions_dir), "--test-dir", str(test_dir), "--output-dir", str(output_dir)]
    assert main([*args, "--predictor-type", predictor_type]) == 0
    return json.loads((output_dir / "evaluation.json").read_text())


def assert_metric(section: dict[str, Any], name: str, expected: float) -> None:
    assert section[name]["value"] == pytest.approx(expected, abs=1e-12), name


def test_binary_report_matches_scikit_learn(tmp_path: Path) -> None:
    labels, scores, predicted = binary_case(1500)
    records = [{"score": float(s), "predicted_label": int(p)} for s, p in zip(scores, predicted, strict=True)]
    report = run(*write_job_inputs(tmp_path, labels, records), "binary_classifier")

    y = labels.astype(int)
    metrics = report["binary_classification_metrics"]
    (tn, fp), (fn, tp) = skm.confusion_matrix(y, predicted)
    assert metrics["confusion_matrix"] == {"0": {"0": tn, "1": fp}, "1": {"0": fn, "1": tp}}
    assert_metric(metrics, "accuracy", skm.accuracy_score(y, predicted))
    assert_metric(metrics, "precision", skm.precision_score(y, predicted))
    assert_metric(metrics, "recall", skm.recall_score(y, predicted))
    assert_metric(metrics, "true_positive_rate", skm.recall_score(y, predicted))
    assert_metric(metrics, "true_negative_rate", skm.recall_score(y, predicted, pos_label=0))
    assert_metric(metrics, "false_positive_rate", 1 - skm.recall_score(y, predicted, pos_label=0))
    assert_metric(metrics, "false_negative_rate", 1 - skm.recall_score(y, predicted))
    assert_metric(metrics, "auc", skm.roc_auc_score(y, scores))
    for name, beta in {"f0_5": 0.5, "f1": 1.0, "f2": 2.0}.items():
        assert_metric(metrics, name, skm.fbeta_score(y, predicted, beta=beta))
        assert_metric(metrics, f"{name}_best_constant_classifier", skm.fbeta_score(y, np.ones_like(y), beta=beta))
    always_positive = np.ones_like(y)
    majority = np.full_like(y, int(y.mean() >= 0.5))  # the constant best for accuracy: the majority class
    assert_metric(metrics, "accuracy_best_constant_classifier", skm.accuracy_score(y, majority))
    assert_metric(metrics, "precision_best_constant_classifier", skm.precision_score(y, always_positive))
    assert_metric(metrics, "recall_best_constant_classifier", 1.0)

    # The curves are sklearn's own points (every distinct threshold up to 1001, ends kept), in Model Monitor's names.
    fpr, tpr, _ = skm.roc_curve(y, scores)
    roc = report["binary_classification_metrics"]["receiver_operating_characteristic_curve"]
    roc_points = list(zip(roc["false_positive_rates"], roc["true_positive_rates"], strict=True))
    assert 2 <= len(roc_points) <= 1001
    assert set(roc_points) <= set(zip(fpr.tolist(), tpr.tolist(), strict=True))
    assert roc_points[0] == (0.0, 0.0) and roc_points[-1] == (1.0, 1.0)
    pr = metrics["precision_recall_curve"]
    assert len(pr["recalls"]) == len(np.unique(scores))  # every distinct score a threshold, none made up
    # every point against the counts of its threshold (one comparison matrix, not ~1,500 pairs of scikit-learn calls:
    # those took most of this test's CPU), and scikit-learn's own scores at every 50th threshold
    thresholds = np.asarray(pr["thresholds"])
    chosen = scores[None, :] >= thresholds[:, None]
    true_positives = (chosen & (y[None, :] == 1)).sum(axis=1)
    assert np.allclose(pr["precisions"], true_positives / chosen.sum(axis=1), rtol=0, atol=1e-12)
    assert np.allclose(pr["recalls"], true_positives / y.sum(), rtol=0, atol=1e-12)
    for precision, recall, threshold in list(zip(pr["precisions"], pr["recalls"], pr["thresholds"], strict=True))[::50]:
        picked = (scores >= threshold).astype(int)
        assert precision == pytest.approx(skm.precision_score(y, picked), abs=1e-12)
        assert recall == pytest.approx(skm.recall_score(y, picked), abs=1e-12)
    assert pr["recalls"] == sorted(pr["recalls"]) and (pr["recalls"][-1], pr["precisions"][-1]) == (1.0, y.mean())
    # the report's threshold dot (its precision and recall) is one of the curve's points
    dot = (metrics["recall"]["value"], metrics["precision"]["value"])
    assert any(point == pytest.approx(dot, abs=1e-12) for point in zip(pr["recalls"], pr["precisions"], strict=True))

    # Bootstrap deviations: present for every metric, and the right size (accuracy: sqrt(a(1-a)/n)).
    for name, metric in metrics.items():
        if "value" in metric:
            assert math.isfinite(metric["standard_deviation"]) and metric["standard_deviation"] >= 0, name
    accuracy = metrics["accuracy"]["value"]
    expected = math.sqrt(accuracy * (1 - accuracy) / len(y))
    assert 0.5 * expected < metrics["accuracy"]["standard_deviation"] < 1.6 * expected
    assert metrics["recall_best_constant_classifier"]["standard_deviation"] == 0.0

    assert report["gate"] == {"metric": "auc", "value": metrics["auc"]["value"]}
    assert report["dataset"] == {"item_count": 1500, "file_count": 3}


def test_report_is_deterministic_and_written_atomically(tmp_path: Path) -> None:
    labels, scores, predicted = binary_case(400)
    records = [{"score": float(s), "predicted_label": int(p)} for s, p in zip(scores, predicted, strict=True)]
    predictions_dir, test_dir, output_dir = write_job_inputs(tmp_path, labels, records)
    run(predictions_dir, test_dir, output_dir, "binary_classifier")
    first = (output_dir / "evaluation.json").read_bytes()
    run(predictions_dir, test_dir, output_dir, "binary_classifier")
    assert (output_dir / "evaluation.json").read_bytes() == first
    assert sorted(path.name for path in output_dir.iterdir()) == ["evaluation.json"]


@pytest.mark.parametrize("n", [30, 120])
def test_small_test_sets_get_deviations_near_the_analytic_ones(tmp_path: Path, n: int) -> None:
    """Below Model Monitor's 200 records the report still gives every deviation (the bootstrap's), says how, and
    gives the analytic standard errors beside them: Hanley-McNeil for AUC, binomial for accuracy."""
    labels, scores, predicted = binary_case(n)
    records = [{"score": float(s), "predicted_label": int(p)} for s, p in zip(scores, predicted, strict=True)]
    report = run(*write_job_inputs(tmp_path, labels, records), "binary_classifier")
    metrics = report["binary_classification_metrics"]
    assert metrics["auc"]["value"] == pytest.approx(skm.roc_auc_score(labels, scores), abs=1e-12)
    uncertainty = report["standard_deviations"]
    assert (uncertainty["method"], uncertainty["bootstrap_rounds"], uncertainty["records"]) == ("bootstrap", 30, n)
    assert "95%" in uncertainty["confidence"]
    auc, positives = metrics["auc"]["value"], float(labels.sum())
    q1, q2 = auc / (2 - auc), 2 * auc**2 / (1 + auc)
    negatives = n - positives
    hanley = math.sqrt(
        (auc * (1 - auc) + (positives - 1) * (q1 - auc**2) + (negatives - 1) * (q2 - auc**2)) / (positives * negatives)
    )
    assert uncertainty["analytic"]["auc"]["standard_deviation"] == pytest.approx(hanley, rel=1e-12)
    accuracy = metrics["accuracy"]["value"]
    binomial = math.sqrt(accuracy * (1 - accuracy) / n)
    assert uncertainty["analytic"]["accuracy"]["standard_deviation"] == pytest.approx(binomial, rel=1e-12)
    for name, analytic in (("auc", hanley), ("accuracy", binomial)):  # 30 rounds: within about half either way
        assert 0.5 * analytic < metrics[name]["standard_deviation"] < 1.6 * analytic, name


def test_multiclass_report_matches_scikit_learn(tmp_path: Path) -> None:
    generator = np.random.default_rng(3)
    n, classes = 900, 4
    labels = generator.choice(classes, size=n, p=[0.1, 0.4, 0.3, 0.2])
    logits = generator.normal(size=(n, classes)) + 1.6 * np.eye(classes)[labels]
    probabilities = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    predicted = probabilities.argmax(axis=1)
    records = [
        {"score": [float(p) for p in row], "predicted_label": int(k)}
        for row, k in zip(probabilities, predicted, strict=True)
    ]
    report = run(*write_job_inputs(tmp_path, labels.astype(np.float32), records), "multiclass_classifier")

    metrics = report["multiclass_classification_metrics"]
    matrix = skm.confusion_matrix(labels, predicted, labels=range(classes))
    assert metrics["confusion_matrix"] == {
        str(i): {str(j): int(matrix[i, j]) for j in range(classes)} for i in range(classes)
    }
    majority = np.full(n, np.bincount(labels).argmax())
    for suffix, guesses in (("", predicted), ("_best_constant_classifier", majority)):
        assert_metric(metrics, f"accuracy{suffix}", skm.accuracy_score(labels, guesses))
        weighted = {"average": "weighted", "zero_division": 0}
        assert_metric(metrics, f"weighted_recall{suffix}", skm.recall_score(labels, guesses, **weighted))
        assert_metric(metrics, f"weighted_precision{suffix}", skm.precision_score(labels, guesses, **weighted))
        for name, beta in {"f0_5": 0.5, "f1": 1.0, "f2": 2.0}.items():
            expected = skm.fbeta_score(labels, guesses, beta=beta, **weighted)
            assert_metric(metrics, f"weighted_{name}{suffix}", expected)
    assert metrics["accuracy"]["standard_deviation"] > 0
    assert report["gate"] == {"metric": "accuracy", "value": metrics["accuracy"]["value"]}


def test_label_values_name_the_classes_and_per_class_metrics_match_scikit_learn(tmp_path: Path) -> None:
    generator = np.random.default_rng(5)
    n, names = 600, ["setosa", "versicolor", "virginica"]
    labels = generator.choice(3, size=n)
    logits = generator.normal(size=(n, 3)) + 1.5 * np.eye(3)[labels]
    probabilities = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    predicted = probabilities.argmax(axis=1)
    pairs = zip(probabilities, predicted, strict=True)
    records = [{"score": row.tolist(), "predicted_label": int(k)} for row, k in pairs]
    predictions_dir, test_dir, output_dir = write_job_inputs(tmp_path, labels.astype(np.float32), records)
    summary_dir = tmp_path / "summary"
    summary_dir.mkdir()
    for host in ("algo-1", "algo-2"):  # what Preprocess's summary output holds with several hosts
        (summary_dir / f"summary-{host}.json").write_text(json.dumps({"host": host, "label_values": names}))
    args = ["--predictions-dir", str(predictions_dir), "--test-dir", str(test_dir), "--output-dir", str(output_dir)]
    assert main([*args, "--predictor-type", "multiclass_classifier", "--summary-dir", str(summary_dir)]) == 0
    report = json.loads((output_dir / "evaluation.json").read_text())
    matrix = skm.confusion_matrix(labels, predicted, labels=range(3))
    assert report["multiclass_classification_metrics"]["confusion_matrix"] == {
        names[i]: {names[j]: int(matrix[i, j]) for j in range(3)} for i in range(3)
    }
    assert report["class_names"] == names
    precision, recall, f1, support = skm.precision_recall_fscore_support(labels, predicted, labels=range(3))
    for index, name in enumerate(names):
        per_class = report["per_class_metrics"][name]
        assert per_class["precision"] == pytest.approx(precision[index], abs=1e-12)
        assert per_class["recall"] == pytest.approx(recall[index], abs=1e-12)
        assert per_class["f1"] == pytest.approx(f1[index], abs=1e-12)
        assert per_class["support"] == support[index]


def test_regression_report_matches_scikit_learn(tmp_path: Path) -> None:
    generator = np.random.default_rng(5)
    labels = generator.normal(10, 3, size=2500).astype(np.float32)
    predictions = labels + generator.normal(scale=1.0, size=len(labels))
    records = [{"score": float(value)} for value in predictions]
    report = run(*write_job_inputs(tmp_path, labels, records), "regressor")

    y = labels.astype(np.float64)
    metrics = report["regression_metrics"]
    assert_metric(metrics, "mae", skm.mean_absolute_error(y, predictions))
    assert_metric(metrics, "mse", skm.mean_squared_error(y, predictions))
    assert_metric(metrics, "rmse", math.sqrt(skm.mean_squared_error(y, predictions)))
    assert_metric(metrics, "r2", skm.r2_score(y, predictions))
    assert 0 < metrics["r2"]["standard_deviation"] < 0.05
    assert report["gate"] == {"metric": "r2", "value": metrics["r2"]["value"]}
    sample = report["prediction_sample"]
    assert sample["item_count"] == 2500 and len(sample["labels"]) == len(sample["predictions"]) == 1000
    pairs = set(zip(y.tolist(), predictions.tolist(), strict=True))
    assert set(zip(sample["labels"], sample["predictions"], strict=True)) <= pairs


def run_failing(tmp_path: Path, predictions_dir: Path, test_dir: Path, predictor_type: str) -> str:
    """Runs the entry point in this process; returns stderr after checking it failed and wrote nothing."""
    output_dir = tmp_path / "evaluation"
    args = ["--predictions-dir", str(predictions_dir), "--test-dir", str(test_dir), "--output-dir", str(output_dir)]
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        assert main([*args, "--predictor-type", predictor_type]) == 1
    assert not output_dir.exists() or not any(output_dir.iterdir())
    return stderr.getvalue()


@pytest.fixture
def binary_inputs(tmp_path: Path) -> tuple[Path, Path]:
    return write_binary_inputs(tmp_path)


def test_missing_out_file_fails_clearly(tmp_path: Path, binary_inputs: tuple[Path, Path]) -> None:
    predictions_dir, test_dir = binary_inputs
    (predictions_dir / "part-1.recordio.out").unlink()
    stderr = run_failing(tmp_path, predictions_dir, test_dir, "binary_classifier")
    assert "missing predictions for test shard part-1.recordio" in stderr
    assert str(predictions_dir / "part-1.recordio.out") in stderr


@pytest.mark.parametrize(
    ("damage", "predictor_type", "message"),
    [
        (lambda p, t: (p / "stray.recordio.out").write_text(""), "binary_classifier", "stray.recordio.out has no"),
        (lambda p, t: _replace_line(p, 3, "{not json"), "binary_classifier", "part-0.recordio.out: line 3: not valid"),
        (
            lambda p, t: _replace_line(p, 2, '{"score": 0.2, "predicted_label": 2}'),
            "binary_classifier",
            "line 2: 'predicted_label' is 2, expected an integer in [0, 2)",
        ),
        (
            lambda p, t: _replace_line(p, 1, '{"score": 1.7, "predicted_label": 1}'),
            "binary_classifier",
            "line 1: 'score' is 1.7, expected a probability",
        ),
        (lambda p, t: _replace_line(p, 1, '{"label": 1}'), "binary_classifier", "line 1: expected an object with"),
        (lambda p, t: None, "multiclass_classifier", "expected a list of class probabilities"),
        (
            lambda p, t: (t / "part-0.recordio").write_bytes((t / "part-0.recordio").read_bytes()[:-5]),
            "binary_classifier",
            "test shard",
        ),
    ],
)
def test_malformed_input_fails_clearly(
    tmp_path: Path, binary_inputs: tuple[Path, Path], damage: Any, predictor_type: str, message: str
) -> None:
    predictions_dir, test_dir = binary_inputs
    damage(predictions_dir, test_dir)
    assert message in run_failing(tmp_path, predictions_dir, test_dir, predictor_type)


def _replace_line(predictions_dir: Path, line_number: int, text: str) -> None:
    out_file = predictions_dir / "part-0.recordio.out"
    lines = out_file.read_text().splitlines()
    lines[line_number - 1] = text
    out_file.write_text("\n".join(lines) + "\n")


def test_labels_that_are_not_classes_fail_clearly(tmp_path: Path) -> None:
    labels = np.array([0, 1, 2, 1] * 10, dtype=np.float32)
    records = [{"score": 0.5, "predicted_label": 1}] * len(labels)
    predictions_dir, test_dir, _ = write_job_inputs(tmp_path, labels, records)
    stderr = run_failing(tmp_path, predictions_dir, test_dir, "binary_classifier")
    # shards are read in name order: nested/part-2.recordio (records 26..39) comes first, record 0 there is label 2
    assert f"test shard {test_dir / 'nested' / 'part-2.recordio'}: record 0: label 2.0 is not a class index" in stderr


def test_single_class_binary_test_set_fails_because_auc_is_undefined(tmp_path: Path) -> None:
    labels = np.zeros(30, dtype=np.float32)
    records = [{"score": 0.1, "predicted_label": 0}] * len(labels)
    predictions_dir, test_dir, _ = write_job_inputs(tmp_path, labels, records)
    assert "only class 0" in run_failing(tmp_path, predictions_dir, test_dir, "binary_classifier")


def test_bootstrap_weights_are_resamples() -> None:
    """A bootstrap round weights each record by how often it was drawn; metrics under those weights are the
    resample's metrics, which scikit-learn computes from the copied rows."""
    labels, scores, predicted = binary_case(500, seed=9)
    rows = np.random.default_rng(0).integers(0, len(labels), size=len(labels))
    weights = np.bincount(rows, minlength=len(labels)).astype(float)
    ranked = RankedScores.of(scores)
    assert ranked.auc(labels, weights) == pytest.approx(skm.roc_auc_score(labels[rows], scores[rows]), abs=1e-12)
    resampled = binary_scalars(confusion(labels, predicted, 2, weights), math.nan)
    assert resampled["f1"] == pytest.approx(skm.f1_score(labels[rows], predicted[rows]), abs=1e-12)
    values = regression_scalars(labels.astype(float), scores, weights)
    assert values["r2"] == pytest.approx(skm.r2_score(labels[rows], scores[rows]), abs=1e-12)
    assert values["mae"] == pytest.approx(skm.mean_absolute_error(labels[rows], scores[rows]), abs=1e-12)


def test_hosts_that_built_different_layouts_fail_the_evaluation(tmp_path: Path) -> None:
    """Issue 11: without a schema, hosts with other column sets trained one model on mixed columns, exit 0."""
    labels, scores, predicted = binary_case(300)
    records = [{"score": float(s), "predicted_label": int(p)} for s, p in zip(scores, predicted, strict=True)]
    predictions_dir, test_dir, output_dir = write_job_inputs(tmp_path, labels, records)
    summary_dir = tmp_path / "summary"
    summary_dir.mkdir()
    (summary_dir / "summary-algo-1.json").write_text(json.dumps({"feature_names": ["f0", "f4"], "label_values": None}))
    (summary_dir / "summary-algo-2.json").write_text(json.dumps({"feature_names": ["f0", "g4"], "label_values": None}))
    args = ["--predictions-dir", str(predictions_dir), "--test-dir", str(test_dir), "--output-dir", str(output_dir)]
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        code = main([*args, "--predictor-type", "binary_classifier", "--summary-dir", str(summary_dir)])
    assert code == 1 and not (output_dir / "evaluation.json").exists()
    assert "Preprocess hosts built different layouts: feature_names of summary-algo-1.json is ['f0', 'f4']" in (
        stderr.getvalue()
    )


def test_hinge_loss_margins_rank_for_auc_and_predicted_labels_count_for_the_rest(tmp_path: Path) -> None:
    labels, probabilities = predictions_for("binary_classifier", "logistic", 300)
    _, margins = predictions_for("binary_classifier", "hinge_loss", 300)
    assert min(record["score"] for record in margins) < 0 < max(record["score"] for record in margins)
    reports = []
    for name, predictions, loss in (("p", probabilities, "logistic"), ("m", margins, "hinge_loss")):
        predictions_dir, test_dir, output_dir = write_job_inputs(tmp_path / name, labels, predictions)
        args = ["--predictions-dir", predictions_dir, "--test-dir", test_dir, "--output-dir", output_dir]
        assert main([*map(str, args), "--predictor-type", "binary_classifier", "--loss", loss]) == 0
        reports.append(json.loads((output_dir / "evaluation.json").read_text()))
    by_probability, by_margin = (report["binary_classification_metrics"] for report in reports)
    margin_scores = np.array([record["score"] for record in margins])
    assert by_margin["auc"]["value"] == pytest.approx(skm.roc_auc_score(labels, margin_scores), abs=1e-12)
    assert by_margin["auc"]["value"] == pytest.approx(by_probability["auc"]["value"], abs=1e-12)  # same ranking
    predicted = np.array([record["predicted_label"] for record in margins])
    assert by_margin["f1"]["value"] == pytest.approx(skm.f1_score(labels, predicted), abs=1e-12)
    assert reports[1]["score"] == {"kind": "margin"} and reports[0]["score"] == {"kind": "probability"}


def test_margins_without_a_margin_loss_fail_naming_the_line(tmp_path: Path) -> None:
    labels, margins = predictions_for("binary_classifier", "hinge_loss", 60)
    predictions_dir, test_dir, _ = write_job_inputs(tmp_path, labels, margins)
    stderr = run_failing(tmp_path, predictions_dir, test_dir, "binary_classifier")
    assert "expected a probability (a margin only with --loss (pipeline parameter Loss) hinge_loss)" in stderr


@pytest.mark.parametrize("positives", [4, 50, 96])
def test_best_constant_classifier_is_the_best_constant_for_each_metric(positives: int) -> None:
    """Each metric's best constant prediction, found by trying both constants: accuracy the majority class (0.96 on
    4% positives), precision, recall and the F-scores always positive (always negative scores 0 on them)."""
    labels = np.r_[np.ones(positives), np.zeros(100 - positives)].astype(int)
    values = binary_scalars(confusion(labels, labels, 2), 1.0)
    constants = [np.zeros(100, dtype=int), np.ones(100, dtype=int)]
    scorers = {
        "accuracy": skm.accuracy_score,
        "precision": lambda y, p: skm.precision_score(y, p, zero_division=0),
        "recall": skm.recall_score,
        "f1": skm.f1_score,
        "f2": lambda y, p: skm.fbeta_score(y, p, beta=2.0),
    }
    for name, scorer in scorers.items():
        best = max(scorer(labels, constant) for constant in constants)
        assert values[f"{name}_best_constant_classifier"] == pytest.approx(best, abs=1e-12), name
    assert values["accuracy_best_constant_classifier"] == pytest.approx(max(positives, 100 - positives) / 100)
