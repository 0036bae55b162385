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
from support.container import Container

from containerlib.recordio import write_dense
from evaluation.evaluate import main
from evaluation.metrics import RankedScores, binary_scalars, confusion, regression_scalars

SHARD_NAMES = ("part-0.recordio", "part-1.recordio", "nested/part-2.recordio")


def write_job_inputs(
    root: Path, labels: np.ndarray, predictions: list[dict[str, Any]], shard_names: tuple[str, ...] = SHARD_NAMES
) -> tuple[Path, Path, Path]:
    """Splits records over RecordIO test shards and matching ``.out`` files, as Preprocess and Transform write them."""
    test_dir, predictions_dir, output_dir = root / "test", root / "predictions", root / "evaluation"
    features = np.random.default_rng(7).normal(size=(len(labels), 3)).astype(np.float32)
    bounds = np.linspace(0, len(labels), len(shard_names) + 1).astype(int)
    for name, start, stop in zip(shard_names, bounds[:-1], bounds[1:], strict=True):
        (test_dir / name).parent.mkdir(parents=True, exist_ok=True)
        with (test_dir / name).open("wb") as shard:
            write_dense(shard, features[start:stop], labels[start:stop])
        (predictions_dir / name).parent.mkdir(parents=True, exist_ok=True)
        lines = "".join(json.dumps(record) + "\n" for record in predictions[start:stop])
        (predictions_dir / f"{name}.out").write_text(lines, encoding="utf-8")
    return predictions_dir, test_dir, output_dir


def run(predictions_dir: Path, test_dir: Path, output_dir: Path, predictor_type: str) -> dict[str, Any]:
    args = ["--predictions-dir", str(predictions_dir), "--test-dir", str(test_dir), "--output-dir", str(output_dir)]
    assert main([*args, "--predictor-type", predictor_type]) == 0
    return json.loads((output_dir / "evaluation.json").read_text())


def binary_case(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    generator = np.random.default_rng(seed)
    labels = (generator.random(n) < 0.3).astype(np.float32)
    scores = 1 / (1 + np.exp(-(2.5 * labels - 1.2 + generator.normal(scale=1.2, size=n))))
    scores = np.round(scores, 3)  # ties, as real scores have, so curve thinning and tie handling are exercised
    predicted = (scores > 0.4).astype(int)  # a calibrated threshold, not 0.5
    return labels, scores, predicted


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
    assert_metric(metrics, "accuracy_best_constant_classifier", skm.accuracy_score(y, always_positive))
    assert_metric(metrics, "precision_best_constant_classifier", skm.precision_score(y, always_positive))
    assert_metric(metrics, "recall_best_constant_classifier", 1.0)

    # The curves are sklearn's own points (thinned to at most 201, ends kept), in Model Monitor's field names.
    fpr, tpr, _ = skm.roc_curve(y, scores)
    roc = report["binary_classification_metrics"]["receiver_operating_characteristic_curve"]
    roc_points = list(zip(roc["false_positive_rates"], roc["true_positive_rates"], strict=True))
    assert 2 <= len(roc_points) <= 201
    assert set(roc_points) <= set(zip(fpr.tolist(), tpr.tolist(), strict=True))
    assert roc_points[0] == (0.0, 0.0) and roc_points[-1] == (1.0, 1.0)
    precisions, recalls, _ = skm.precision_recall_curve(y, scores)
    pr = metrics["precision_recall_curve"]
    pr_points = list(zip(pr["recalls"], pr["precisions"], strict=True))
    assert set(pr_points) <= set(zip(recalls.tolist(), precisions.tolist(), strict=True))
    assert pr["recalls"] == sorted(pr["recalls"]) and pr_points[-1] == (1.0, float(y.mean()))

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


def test_small_test_sets_report_nan_deviation_as_model_monitor_does(tmp_path: Path) -> None:
    labels, scores, predicted = binary_case(120)
    records = [{"score": float(s), "predicted_label": int(p)} for s, p in zip(scores, predicted, strict=True)]
    report = run(*write_job_inputs(tmp_path, labels, records), "binary_classifier")
    assert report["binary_classification_metrics"]["auc"]["standard_deviation"] == "NaN"
    assert report["binary_classification_metrics"]["auc"]["value"] == pytest.approx(
        skm.roc_auc_score(labels, scores), abs=1e-12
    )


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
    labels, scores, predicted = binary_case(60)
    records = [{"score": float(s), "predicted_label": int(p)} for s, p in zip(scores, predicted, strict=True)]
    predictions_dir, test_dir, _ = write_job_inputs(tmp_path, labels, records)
    return predictions_dir, test_dir


def test_count_mismatch_fails_naming_the_file_and_both_counts(
    tmp_path: Path, binary_inputs: tuple[Path, Path], container: Container
) -> None:
    """Run as the container runs it: a separate process, a non-zero exit, one line on stderr, no report."""
    predictions_dir, test_dir = binary_inputs
    out_file = predictions_dir / "nested" / "part-2.recordio.out"
    lines = out_file.read_text().splitlines(keepends=True)
    out_file.write_text("".join(lines[:-1]))
    output_dir = tmp_path / "evaluation"
    args = ["--predictions-dir", predictions_dir, "--test-dir", test_dir, "--output-dir", output_dir]
    (tmp_path / "output").mkdir()  # SageMaker's /opt/ml/output: the line is also the job's ExitMessage
    resource_config = tmp_path / "resourceconfig.json"
    resource_config.write_text(json.dumps({"current_host": "algo-1", "hosts": ["algo-1"]}))
    args += ["--exit-message-file", tmp_path / "output" / "message", "--resource-config", resource_config]
    result = container.run("evaluate", "--predictor-type", "binary_classifier", *args)
    assert result.returncode == 1 and not output_dir.exists()
    stderr = result.stderr
    assert len(stderr.strip().splitlines()) == 1 and stderr.startswith("evaluate: error: ")
    assert f"{out_file} holds {len(lines) - 1} predictions" in stderr
    assert f"test shard nested/part-2.recordio holds {len(lines)} records" in stderr
    assert (tmp_path / "output" / "message").read_bytes() == f"algo-1: {stderr}".encode()


def test_an_unexpected_failure_still_says_what_it_was_in_the_exit_message(
    tmp_path: Path, binary_inputs: tuple[Path, Path], container: Container
) -> None:
    """A defect rather than bad input (here the output folder is a file): traceback in the log, last line in
    ExitMessage."""
    predictions_dir, test_dir = binary_inputs
    not_a_folder = tmp_path / "evaluation"
    not_a_folder.write_text("")
    (tmp_path / "output").mkdir()
    resource_config = tmp_path / "resourceconfig.json"
    resource_config.write_text(json.dumps({"current_host": "algo-1", "hosts": ["algo-1"]}))
    args = ["--predictions-dir", predictions_dir, "--test-dir", test_dir, "--output-dir", not_a_folder]
    args += ["--exit-message-file", tmp_path / "output" / "message", "--resource-config", resource_config]
    result = container.run("evaluate", "--predictor-type", "binary_classifier", *args)
    assert result.returncode == 1 and "Traceback (most recent call last)" in result.stderr
    message = (tmp_path / "output" / "message").read_text()
    assert message.startswith("algo-1: evaluate: unexpected ") and message.endswith(" (traceback in the log)\n")
    assert str(not_a_folder) in message and message.count("\n") == 1


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


def test_runs_from_its_code_bundle(tmp_path: Path, binary_inputs: tuple[Path, Path], container: Container) -> None:
    """The container runs evaluate.py with the packages of its bundle, without the repository's, on Python 3.9."""
    predictions_dir, test_dir = binary_inputs
    output_dir = tmp_path / "out"
    args = ["--predictions-dir", predictions_dir, "--test-dir", test_dir, "--output-dir", output_dir]
    result = container.run("evaluate", *args, "--predictor-type", "binary_classifier", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "gate auc = " in result.stdout
    assert json.loads((output_dir / "evaluation.json").read_text())["gate"]["metric"] == "auc"


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


# ------------------------------------------------------------------------------------- in the scikit-learn image


def predictions_for(predictor_type: str, loss: str, n: int) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Labels and Linear Learner's jsonlines records for one predictor type and loss."""
    generator = np.random.default_rng(5)
    if predictor_type == "binary_classifier":
        labels, scores, predicted = binary_case(n)
        if loss == "hinge_loss":  # a margin: any real number, positive means class 1
            scores = np.log(scores + 1e-3) - np.log(1 - scores + 1e-3)
        return labels, [{"score": float(s), "predicted_label": int(p)} for s, p in zip(scores, predicted, strict=True)]
    if predictor_type == "multiclass_classifier":
        labels = generator.integers(0, 3, size=n).astype(np.float32)
        probabilities = generator.dirichlet(np.ones(3), size=n)
        probabilities[np.arange(n), labels.astype(int)] += 0.5
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        return labels, [
            {"score": [float(v) for v in row], "predicted_label": int(np.argmax(row))} for row in probabilities
        ]
    labels = generator.normal(10, 3, size=n).astype(np.float32)
    return labels, [{"score": float(y + generator.normal())} for y in labels]


def write_shards_of_every_kind(root: Path, labels: np.ndarray, predictions: list[dict[str, Any]]) -> tuple[Path, Path]:
    """Test shards as SageMaker may hand them to Evaluate: a one-record dense shard, a one-record sparse shard, a
    dense shard whose records are split with dmlc's continuation flag, and a sparse shard; with their ``.out`` files."""
    from scipy import sparse
    from support.protobuf_oracle import MAGIC_AS_FLOAT32, dmlc_split_frames, payloads

    from containerlib.recordio import write_sparse

    test_dir, predictions_dir = root / "test", root / "predictions"
    test_dir.mkdir(parents=True)
    predictions_dir.mkdir(parents=True)
    n = len(labels)
    features = np.random.default_rng(3).normal(size=(n, 6)).astype(np.float32)
    features[::3, 2] = 0.0
    features[2:, 0] = MAGIC_AS_FLOAT32  # an aligned magic number inside a payload: dmlc's writer splits there
    half = 2 + (n - 2) // 2
    parts = [("a-one-dense", 0, 1, False), ("b-one-sparse", 1, 2, True), ("c-split", 2, half, False)]
    parts.append(("d-sparse", half, n, True))
    for name, start, stop, is_sparse in parts:
        out = io.BytesIO()
        if is_sparse:
            write_sparse(out, sparse.csr_matrix(features[start:stop]), labels[start:stop])
        else:
            write_dense(out, features[start:stop], labels[start:stop])
        data = out.getvalue()
        if name == "c-split":
            data = b"".join(dmlc_split_frames(payload) for payload in payloads(data))
            assert any(int.from_bytes(data[i : i + 4], "little") >> 29 == 1 for i in range(4, len(data), 4))
        (test_dir / name).write_bytes(data)
        lines = "".join(json.dumps(record) + "\n" for record in predictions[start:stop])
        (predictions_dir / f"{name}.out").write_text(lines, encoding="utf-8")
    return predictions_dir, test_dir


@pytest.mark.parametrize(
    ("predictor_type", "loss"),
    [
        ("binary_classifier", "logistic"),
        ("binary_classifier", "hinge_loss"),
        ("multiclass_classifier", "softmax_loss"),
        ("regressor", "squared_loss"),
    ],
)
def test_the_image_environment_gives_the_report_of_this_interpreter(
    tmp_path: Path, container: Container, predictor_type: str, loss: str
) -> None:
    """evaluate.py from its code bundle on Python 3.9 / numpy 1.24.1 / scikit-learn 1.2.1, on single-record, sparse
    and split-record shards, writes the report this interpreter's run writes."""
    labels, predictions = predictions_for(predictor_type, loss, 240)
    predictions_dir, test_dir = write_shards_of_every_kind(tmp_path, labels, predictions)
    args = ["--predictions-dir", predictions_dir, "--test-dir", test_dir, "--predictor-type", predictor_type]
    args += ["--loss", loss]
    result = container.run("evaluate", *args, "--output-dir", tmp_path / "image")
    assert result.returncode == 0, result.stderr
    assert main([*map(str, args), "--output-dir", str(tmp_path / "here")]) == 0
    in_image = json.loads((tmp_path / "image" / "evaluation.json").read_text())
    here = json.loads((tmp_path / "here" / "evaluation.json").read_text())
    assert in_image["dataset"] == {"item_count": 240, "file_count": 4}
    expected_kind = {"binary_classifier": "probability", "regressor": "value"}.get(predictor_type, "probability")
    assert in_image["score"] == {"kind": "margin" if loss == "hinge_loss" else expected_kind}
    assert in_image["gate"]["value"] == pytest.approx(here["gate"]["value"], rel=1e-9)
    section = next(key for key in in_image if key.endswith("_metrics"))
    for name, entry in here[section].items():
        if isinstance(entry, dict) and "value" in entry:
            assert in_image[section][name]["value"] == pytest.approx(entry["value"], rel=1e-9, nan_ok=True), name


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
    assert "expected a probability (a margin only with --loss hinge_loss)" in stderr
