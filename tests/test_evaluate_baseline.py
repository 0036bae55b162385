"""Evaluate's scikit-learn baseline: fitted on the real RecordIO train shards, scored on the test shards, its report
section equal to scikit-learn's own metrics on the same arrays; the sample bound; the BaselineTolerance gate."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from container import Container
from sklearn import metrics as skm
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine
from sklearn.linear_model import LogisticRegressionCV, RidgeCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from containerlib.recordio import write_dense
from evaluation.baseline import read_train_sample
from evaluation.evaluate import main
from evaluation.gate import GateSettings, decide


def split(predictor_type: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    loader = {"binary_classifier": load_breast_cancer, "multiclass_classifier": load_wine}.get(
        predictor_type, load_diabetes
    )
    X, y = loader(return_X_y=True)
    order = np.random.default_rng(3).permutation(len(y))
    X, y = X[order].astype(np.float32), y[order].astype(np.float32)
    cut = int(len(y) * 0.7)
    return X[:cut], y[:cut], X[cut:], y[cut:]


def write_shards(folder: Path, features: np.ndarray, labels: np.ndarray, parts: int = 2) -> None:
    folder.mkdir(parents=True)
    for index, rows in enumerate(np.array_split(np.arange(len(labels)), parts)):
        with (folder / f"part-{index}.pbr").open("wb") as shard:
            write_dense(shard, features[rows], labels[rows])


def challenger_predictions(predictor_type: str, X_test: np.ndarray, y_test: np.ndarray) -> list[dict[str, Any]]:
    """Some other model's predictions (a noisy one): the baseline must not depend on them."""
    rng = np.random.default_rng(5)
    if predictor_type == "binary_classifier":
        scores = np.clip(0.7 * y_test + rng.uniform(0, 0.3, len(y_test)), 0, 1)
        return [{"score": float(s), "predicted_label": int(s > 0.5)} for s in scores]
    if predictor_type == "multiclass_classifier":
        records = []
        for label in y_test.astype(int):
            row = rng.dirichlet(np.ones(3))
            row[label] += 0.5
            row /= row.sum()
            records.append({"score": [float(v) for v in row], "predicted_label": int(row.argmax())})
        return records
    return [{"score": float(value + rng.normal(scale=80))} for value in y_test]


def run_evaluate(tmp_path: Path, predictor_type: str, *extra: str) -> tuple[dict[str, Any], tuple]:
    X_train, y_train, X_test, y_test = split(predictor_type)
    write_shards(tmp_path / "train", X_train, y_train)
    write_shards(tmp_path / "test", X_test, y_test, parts=1)
    (tmp_path / "predictions").mkdir()
    lines = "".join(json.dumps(r) + "\n" for r in challenger_predictions(predictor_type, X_test, y_test))
    (tmp_path / "predictions" / "part-0.pbr.out").write_text(lines)
    args = ["--predictions-dir", tmp_path / "predictions", "--test-dir", tmp_path / "test"]
    args += ["--train-dir", tmp_path / "train", "--output-dir", tmp_path / "out", "--predictor-type", predictor_type]
    assert main([*map(str, args), *extra]) == 0
    return json.loads((tmp_path / "out" / "evaluation.json").read_text()), (X_train, y_train, X_test, y_test)


def sklearn_reference(predictor_type: str, X_train, y_train):
    """The baseline as a notebook writes it, independently of evaluation/baseline.py."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if predictor_type == "regressor":
            return make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-3, 3, 13))).fit(X_train, y_train)
        model = LogisticRegressionCV(Cs=10, cv=5, scoring="neg_log_loss", max_iter=1000)
        return make_pipeline(StandardScaler(), model).fit(X_train, y_train.astype(int))


def value(section: dict[str, Any], name: str) -> float:
    return section[name]["value"]


@pytest.mark.parametrize("predictor_type", ["binary_classifier", "multiclass_classifier", "regressor"])
def test_baseline_section_equals_scikit_learns_metrics_on_the_same_arrays(tmp_path: Path, predictor_type: str) -> None:
    report, (X_train, y_train, X_test, y_test) = run_evaluate(tmp_path, predictor_type)
    baseline = report["baseline"]
    assert baseline["train_records"] == baseline["train_channel_records"] == len(y_train)
    reference = sklearn_reference(predictor_type, X_train, y_train)
    if predictor_type == "binary_classifier":
        section = baseline["binary_classification_metrics"]
        probabilities = reference.predict_proba(X_test)[:, 1]
        predicted = reference.predict(X_test)
        assert value(section, "auc") == pytest.approx(skm.roc_auc_score(y_test, probabilities), abs=1e-9)
        assert value(section, "accuracy") == pytest.approx(skm.accuracy_score(y_test, predicted), abs=1e-12)
        assert value(section, "f1") == pytest.approx(skm.f1_score(y_test, predicted), abs=1e-12)
        assert value(section, "recall") == pytest.approx(skm.recall_score(y_test, predicted), abs=1e-12)
        assert "standard_deviation" in section["auc"]  # NaN under 200 test records, as Model Monitor writes it
    elif predictor_type == "multiclass_classifier":
        section = baseline["multiclass_classification_metrics"]
        predicted = reference.predict(X_test)
        assert value(section, "accuracy") == pytest.approx(skm.accuracy_score(y_test, predicted), abs=1e-12)
        weighted = skm.f1_score(y_test, predicted, average="weighted")
        assert value(section, "weighted_f1") == pytest.approx(weighted, abs=1e-12)
    else:
        section = baseline["regression_metrics"]
        predicted = reference.predict(X_test)
        rmse = skm.mean_squared_error(y_test, predicted) ** 0.5
        assert value(section, "rmse") == pytest.approx(rmse, rel=1e-6)
        assert value(section, "r2") == pytest.approx(skm.r2_score(y_test, predicted), rel=1e-6)
    gate = baseline["gate"]
    assert gate["metric"] == report["gate"]["metric"]
    assert gate["value"] == value(section, gate["metric"])
    assert gate["challenger_minus_baseline"] == pytest.approx(report["gate"]["value"] - gate["value"])


def test_the_sample_is_bounded_uniform_over_every_shard_and_repeatable(tmp_path: Path) -> None:
    features = np.arange(3000, dtype=np.float32).reshape(-1, 1)
    write_shards(tmp_path / "train", features, np.zeros(3000, dtype=np.float32), parts=3)
    sample = read_train_sample(tmp_path / "train", limit=500, seed=0)
    rows = sample.features[:, 0].astype(int)
    assert (len(rows), sample.channel_records, sample.file_count) == (500, 3000, 3)
    assert len(set(rows)) == 500 and list(rows) == sorted(rows)  # distinct records, kept in channel order
    assert all(100 < np.sum((rows >= lo) & (rows < lo + 1000)) < 240 for lo in (0, 1000, 2000))
    again = read_train_sample(tmp_path / "train", limit=500, seed=0)
    np.testing.assert_array_equal(again.features, sample.features)


def test_baseline_tolerance_fails_the_gate_naming_both_values_and_is_off_by_default() -> None:
    baseline = {"gate": {"metric": "auc", "value": 0.735}}
    off = decide("auc", 0.69, GateSettings(0.6), None, None, baseline)
    assert off["promote"] and off["baseline_floor"] == 0.69
    assert "below the scikit-learn baseline (auc 0.735" in off["reason"]
    gated = decide("auc", 0.69, GateSettings(0.6, baseline_tolerance=0.01), None, None, baseline)
    assert not gated["promote"] and gated["baseline_floor"] == pytest.approx(0.725)
    assert "auc 0.69 reaches MetricThreshold 0.6" in gated["reason"]
    assert "NOT within BaselineTolerance 0.01 of the scikit-learn baseline (auc 0.735" in gated["reason"]
    near = decide("auc", 0.73, GateSettings(0.6, baseline_tolerance=0.01), None, None, baseline)
    assert near["promote"] and "within BaselineTolerance 0.01" in near["reason"]


def test_the_gate_with_baseline_tolerance_runs_from_the_report(tmp_path: Path) -> None:
    """--baseline-tolerance 0 with a challenger far below the baseline: the decision says do not promote."""
    report, _ = run_evaluate(tmp_path, "regressor", "--metric-threshold", "-10", "--baseline-tolerance", "0")
    decision = report["decision"]
    assert report["gate"]["value"] < report["baseline"]["gate"]["value"]
    assert not decision["promote"]
    assert decision["baseline_value"] == report["baseline"]["gate"]["value"] == decision["baseline_floor"]


def test_baseline_runs_from_its_code_bundle_on_python_3_9(tmp_path: Path, container: Container) -> None:
    report, _ = run_evaluate(tmp_path / "here", "binary_classifier")
    here = tmp_path / "here"
    args = ["--predictions-dir", here / "predictions", "--test-dir", here / "test", "--train-dir", here / "train"]
    result = container.run("evaluate", *args, "--predictor-type", "binary_classifier", "--output-dir", tmp_path / "img")
    assert result.returncode == 0, result.stderr
    assert "evaluate: baseline (scikit-learn" in result.stdout
    in_image = json.loads((tmp_path / "img" / "evaluation.json").read_text())["baseline"]
    # scikit-learn 1.2.1's lbfgs stops at a slightly different optimum than this interpreter's scikit-learn
    assert in_image["gate"]["value"] == pytest.approx(report["baseline"]["gate"]["value"], abs=2e-3)


def test_sparse_train_shards_fit_a_baseline_without_centring(tmp_path: Path) -> None:
    import scipy.sparse as sp

    from containerlib.recordio import write_sparse
    from evaluation.baseline import fit_baseline

    X_train, y_train, _, _ = split("binary_classifier")
    (tmp_path / "train").mkdir()
    with (tmp_path / "train" / "part-0.pbr").open("wb") as shard:
        write_sparse(shard, sp.csr_matrix(X_train), y_train)
    sample = read_train_sample(tmp_path / "train")
    assert sp.issparse(sample.features) and sample.features.shape == X_train.shape
    estimator = fit_baseline(sample, "binary_classifier")
    assert estimator.steps[0][1].with_mean is False
    assert skm.roc_auc_score(y_train, estimator.predict_proba(X_train)[:, 1]) > 0.95


def test_train_shards_without_labels_fail_naming_the_shard(tmp_path: Path) -> None:
    from evaluation import EvaluationError

    (tmp_path / "train").mkdir()
    with (tmp_path / "train" / "part-0.pbr").open("wb") as shard:
        write_dense(shard, np.ones((5, 2), dtype=np.float32), None)
    with pytest.raises(EvaluationError, match=r"train shard .*part-0.pbr: records from 0 on have no label"):
        read_train_sample(tmp_path / "train")
