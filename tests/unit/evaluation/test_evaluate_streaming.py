"""Evaluate in bounded memory: predictions and test shards streamed chunk by chunk, exact metrics up to the record
cap, and past it the sketch (histogram AUC within its stated error bound, an online Poisson bootstrap)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn import metrics as skm
from support.container import Container
from support.evaluation_inputs import binary_case, predictions_for, write_job_inputs, write_shards_of_every_kind
from test_champion import GROUP, champion_artifact, job_with_champion
from test_evaluate_baseline import challenger_predictions, split, write_shards

from containerlib.predictions import (
    PredictionsError,
    ScoredChunk,
    iter_scored,
    load_scored,
    pair_predictions,
)
from evaluation import EvaluationError
from evaluation.collect import Collector
from evaluation.evaluate import main
from evaluation.gate import GateSettings
from evaluation.job import evaluate
from evaluation.sketch import HISTOGRAM_BINS

ROUNDS = 200  # enough rounds that two bootstraps of the same records agree on the deviations to about 10%


def continuous_binary(n: int, seed: int = 3) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Labels and probabilities without ties, so the histogram's bins really hold pairs of unknown order."""
    generator = np.random.default_rng(seed)
    labels = (generator.random(n) < 0.3).astype(np.float32)
    scores = 1 / (1 + np.exp(-(2.0 * labels - 1.0 + generator.normal(size=n))))
    return labels, [{"score": float(s), "predicted_label": int(s > 0.4)} for s in scores]


def both_reports(tmp_path: Path, predictor_type: str, labels: np.ndarray, records: list, cap: int, **options: Any):
    """The report with every record kept (exact) and the one with the sketch past ``cap`` records, same inputs."""
    predictions_dir, test_dir, _ = write_job_inputs(tmp_path, labels, records)
    exact = evaluate(predictions_dir, test_dir, tmp_path / "exact", predictor_type, ROUNDS, 0, **options)
    options["max_exact"] = cap
    sketched = evaluate(predictions_dir, test_dir, tmp_path / "sketch", predictor_type, ROUNDS, 0, **options)
    return exact, sketched


def assert_deviations_agree(exact: dict[str, Any], sketched: dict[str, Any]) -> None:
    """Two bootstraps (multinomial, Poisson) of the same records: the same deviations up to sampling noise."""
    for name, item in exact.items():
        if isinstance(item, dict) and "standard_deviation" in item and item["standard_deviation"] > 0:
            ratio = sketched[name]["standard_deviation"] / item["standard_deviation"]
            assert 0.75 < ratio < 1.33, (name, ratio)


def test_past_the_cap_counts_stay_exact_and_auc_is_within_its_stated_bound(tmp_path: Path) -> None:
    labels, records = continuous_binary(6000)
    exact, sketched = both_reports(tmp_path, "binary_classifier", labels, records, cap=1000)
    assert "sketch" not in exact
    bound = sketched["sketch"]["auc_error_bound"]
    assert sketched["sketch"] == {
        "exact_records_cap": 1000,
        "bootstrap": "poisson",
        "bootstrap_rounds": ROUNDS,
        "auc": "histogram",
        "histogram_bins": HISTOGRAM_BINS,
        "auc_error_bound": bound,
    }
    assert 0 < bound < 1e-3
    exact_metrics, sketch_metrics = exact["binary_classification_metrics"], sketched["binary_classification_metrics"]
    y = labels.astype(int)
    scores = np.array([record["score"] for record in records])
    assert exact_metrics["auc"]["value"] == pytest.approx(skm.roc_auc_score(y, scores), abs=1e-12)
    assert abs(sketch_metrics["auc"]["value"] - exact_metrics["auc"]["value"]) <= bound
    assert sketch_metrics["confusion_matrix"] == exact_metrics["confusion_matrix"]
    for name, item in exact_metrics.items():
        if isinstance(item, dict) and "value" in item and name != "auc":
            assert sketch_metrics[name]["value"] == pytest.approx(item["value"], abs=1e-12), name
    assert_deviations_agree(exact_metrics, sketch_metrics)
    assert sketched["per_class_metrics"] == exact["per_class_metrics"]
    assert sketched["dataset"] == exact["dataset"] == {"item_count": 6000, "file_count": 3}
    # the curves at the bins' edges: from (0, 0) to (1, 1), never going back, close to scikit-learn's
    roc = sketch_metrics["receiver_operating_characteristic_curve"]
    fpr, tpr = np.array(roc["false_positive_rates"]), np.array(roc["true_positive_rates"])
    assert (fpr[0], tpr[0], fpr[-1], tpr[-1]) == (0.0, 0.0, 1.0, 1.0)
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0) and len(fpr) <= 1001
    # every point is the exact (fpr, tpr) of the threshold at some bin's lower edge k / bins
    edges = np.arange(HISTOGRAM_BINS) / HISTOGRAM_BINS
    negatives, positives = np.sort(scores[y == 0]), np.sort(scores[y == 1])
    exact_fpr = 1 - np.searchsorted(negatives, edges) / len(negatives)
    exact_tpr = 1 - np.searchsorted(positives, edges) / len(positives)
    at_edges = set(zip(exact_fpr.round(12).tolist(), exact_tpr.round(12).tolist(), strict=True)) | {(0.0, 0.0)}
    assert set(zip(fpr.round(12).tolist(), tpr.round(12).tolist(), strict=True)) <= at_edges
    pr = sketch_metrics["precision_recall_curve"]
    assert pr["recalls"][0] > 0.0 and pr["recalls"] == sorted(pr["recalls"]) and pr["recalls"][-1] == 1.0
    # each point is the exact precision of its threshold (a bin's lower edge): no made-up precision-1 start
    for precision, threshold in zip(pr["precisions"][:50], pr["thresholds"][:50], strict=True):
        chosen = scores >= threshold
        assert precision == pytest.approx(y[chosen].mean(), abs=1e-12)
    assert pr["precisions"][-1] == pytest.approx(labels.mean(), abs=1e-12)  # everything predicted positive


def test_hinge_margins_past_the_cap_are_binned_in_order(tmp_path: Path) -> None:
    labels, records = predictions_for("binary_classifier", "hinge_loss", 3000)
    exact, sketched = both_reports(tmp_path, "binary_classifier", labels, records, cap=500, loss="hinge_loss")
    assert sketched["score"] == {"kind": "margin"}
    auc = exact["binary_classification_metrics"]["auc"]["value"]
    sketch_auc = sketched["binary_classification_metrics"]["auc"]["value"]
    assert abs(sketch_auc - auc) <= sketched["sketch"]["auc_error_bound"] < 1e-3


def test_multiclass_past_the_cap_is_exact_but_for_the_bootstrap(tmp_path: Path) -> None:
    labels, records = predictions_for("multiclass_classifier", "auto", 4000)
    exact, sketched = both_reports(tmp_path, "multiclass_classifier", labels, records, cap=700)
    exact_metrics = exact["multiclass_classification_metrics"]
    sketch_metrics = sketched["multiclass_classification_metrics"]
    assert sketch_metrics["confusion_matrix"] == exact_metrics["confusion_matrix"]
    assert list(sketch_metrics) == list(exact_metrics)
    for name, item in exact_metrics.items():
        if name != "confusion_matrix":
            assert sketch_metrics[name]["value"] == pytest.approx(item["value"], abs=1e-12), name
    assert_deviations_agree(exact_metrics, sketch_metrics)
    assert sketched["sketch"] == {"exact_records_cap": 700, "bootstrap": "poisson", "bootstrap_rounds": ROUNDS}


def test_regression_past_the_cap_keeps_exact_sums_and_a_uniform_sample_in_record_order(tmp_path: Path) -> None:
    labels, records = predictions_for("regressor", "auto", 5000)
    exact, sketched = both_reports(tmp_path, "regressor", labels, records, cap=1200)
    in_order = load_scored(tmp_path / "predictions", tmp_path / "test", "regressor")  # the shards' sorted order
    for name, item in exact["regression_metrics"].items():
        assert sketched["regression_metrics"][name]["value"] == pytest.approx(item["value"], rel=1e-9), name
    assert_deviations_agree(exact["regression_metrics"], sketched["regression_metrics"])
    sample = sketched["prediction_sample"]
    assert sample["item_count"] == 5000 and len(sample["labels"]) == len(sample["predictions"]) == 1000
    pairs = list(zip(in_order.labels.tolist(), in_order.scores.tolist(), strict=True))
    rows = [pairs.index(pair) for pair in zip(sample["labels"], sample["predictions"], strict=True)]
    assert rows == sorted(rows) and rows[-1] >= 1200  # in record order, drawn from past the cap too
    assert sketched["sketch"]["prediction_sample"] == "bottom-k"


def test_the_sketched_report_is_the_same_every_run(tmp_path: Path) -> None:
    labels, records = continuous_binary(2000)
    predictions_dir, test_dir, _ = write_job_inputs(tmp_path, labels, records)
    first = evaluate(predictions_dir, test_dir, tmp_path / "a", "binary_classifier", 30, 4, max_exact=300)
    evaluate(predictions_dir, test_dir, tmp_path / "b", "binary_classifier", 30, 4, max_exact=300)
    assert (tmp_path / "a" / "evaluation.json").read_bytes() == (tmp_path / "b" / "evaluation.json").read_bytes()
    other_seed = evaluate(predictions_dir, test_dir, tmp_path / "c", "binary_classifier", 30, 5, max_exact=300)
    name = "binary_classification_metrics"
    assert other_seed[name]["auc"]["value"] == first[name]["auc"]["value"]
    assert other_seed[name]["auc"]["standard_deviation"] != first[name]["auc"]["standard_deviation"]


def test_past_the_cap_the_collector_keeps_no_records() -> None:
    """Memory stops growing at the cap: the kept chunks are replayed into the sketch and dropped, and the sketch's
    arrays are the same size after every further chunk."""
    collector = Collector("binary_classifier", "probability", 30, 0, max_exact=2500)
    generator = np.random.default_rng(0)
    sizes = []
    for _ in range(12):
        labels = (generator.random(1000) < 0.5).astype(np.float32)
        scores = generator.random(1000)
        collector.add(ScoredChunk(labels, scores, (scores > 0.5).astype(np.int64)))
        if collector.sketch is None:
            assert sum(part[0].size for part in collector.parts) == collector.count
            assert [part[1].dtype for part in collector.parts] == [np.float64] * len(collector.parts)
            assert [part[2].dtype for part in collector.parts] == [np.int8] * len(collector.parts)
        else:
            assert collector.parts == []
            sketch = collector.sketch
            sizes.append(sum(array.nbytes for array in vars(sketch).values() if isinstance(array, np.ndarray)))
    assert collector.count == 12_000 and len(sizes) == 10 and len(set(sizes)) == 1
    assert collector.sketch.count == 12_000 and collector.sketch.confusion().sum() == 12_000


def test_predictions_are_read_a_chunk_at_a_time_and_joined_in_order(tmp_path: Path) -> None:
    labels, scores, predicted = binary_case(100)
    records = [{"score": float(s), "predicted_label": int(p)} for s, p in zip(scores, predicted, strict=True)]
    predictions_dir, test_dir, _ = write_job_inputs(tmp_path, labels, records)
    chunks = list(iter_scored(pair_predictions(predictions_dir, test_dir), "binary_classifier", chunk_records=7))
    assert max(len(chunk.labels) for chunk in chunks) == 7 and sum(len(chunk.labels) for chunk in chunks) == 100
    whole = load_scored(predictions_dir, test_dir, "binary_classifier")
    np.testing.assert_array_equal(np.concatenate([chunk.labels for chunk in chunks]), whole.labels)
    np.testing.assert_array_equal(np.concatenate([chunk.scores for chunk in chunks]), whole.scores)
    np.testing.assert_array_equal(np.concatenate([chunk.predicted_labels for chunk in chunks]), whole.predicted_labels)
    assert sorted(whole.scores.tolist()) == sorted(scores.tolist())  # every record, in the shards' sorted order


@pytest.mark.parametrize("change", [-5, 3])
def test_a_count_mismatch_in_a_later_chunk_names_both_counts(tmp_path: Path, change: int) -> None:
    labels, scores, predicted = binary_case(90)
    records = [{"score": float(s), "predicted_label": int(p)} for s, p in zip(scores, predicted, strict=True)]
    predictions_dir, test_dir, _ = write_job_inputs(tmp_path, labels, records, ("part-0.recordio",))
    out_file = predictions_dir / "part-0.recordio.out"
    lines = out_file.read_text().splitlines(keepends=True)
    out_file.write_text("".join(lines[:change] if change < 0 else lines + lines[:change]))
    pairing = pair_predictions(predictions_dir, test_dir)
    expected = f"{out_file} holds {90 + change} predictions but test shard part-0.recordio holds 90 records"
    with pytest.raises(PredictionsError, match=f"^{expected}: the counts must match$"):
        list(iter_scored(pairing, "binary_classifier", chunk_records=20))


def test_a_bad_label_past_the_first_chunk_is_named_by_its_record(tmp_path: Path) -> None:
    labels, scores, predicted = binary_case(50)
    labels[33] = 4.0
    records = [{"score": float(s), "predicted_label": int(p)} for s, p in zip(scores, predicted, strict=True)]
    predictions_dir, test_dir, _ = write_job_inputs(tmp_path, labels, records, ("part-0.recordio",))
    pairing = pair_predictions(predictions_dir, test_dir)
    expected = f"test shard {test_dir / 'part-0.recordio'}: record 33: label 4.0 is not a class index in [0, 2)"
    with pytest.raises(PredictionsError, match=f"^{re.escape(expected)}$"):
        list(iter_scored(pairing, "binary_classifier", chunk_records=10))


@pytest.mark.parametrize("predictor_type", ["binary_classifier", "regressor"])
def test_the_baseline_scored_past_the_cap_is_the_exact_baseline_within_the_sketch(
    tmp_path: Path, predictor_type: str
) -> None:
    X_train, y_train, X_test, y_test = split(predictor_type)
    train_dir, test_dir, predictions_dir = tmp_path / "train", tmp_path / "test", tmp_path / "predictions"
    write_shards(train_dir, X_train, y_train)
    write_shards(test_dir, X_test, y_test)
    predictions_dir.mkdir()
    records = challenger_predictions(predictor_type, X_test, y_test)
    for index, part in enumerate(np.array_split(np.arange(len(records)), 2)):
        lines = "".join(json.dumps(records[row]) + "\n" for row in part)
        (predictions_dir / f"part-{index}.pbr.out").write_text(lines)
    cap = len(y_test) // 3
    exact = evaluate(predictions_dir, test_dir, tmp_path / "exact", predictor_type, 30, 0, train_dir=train_dir)
    sketched = evaluate(
        predictions_dir, test_dir, tmp_path / "sketch", predictor_type, 30, 0, train_dir=train_dir, max_exact=cap
    )
    metric = exact["gate"]["metric"]
    exact_value, sketch_value = exact["baseline"]["gate"]["value"], sketched["baseline"]["gate"]["value"]
    assert sketched["baseline"]["sketch"]["exact_records_cap"] == cap and "sketch" not in exact["baseline"]
    bound = sketched["baseline"]["sketch"].get("auc_error_bound", 0.0)
    assert math.isfinite(exact_value) and abs(sketch_value - exact_value) <= bound + 1e-9, metric


def test_the_champion_scored_past_the_cap_is_within_the_sketch_of_scikit_learn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clients, (predictions_dir, test_dir, output_dir), stubs = job_with_champion(
        tmp_path, champion_artifact([0.8, -0.3, 0.1], 0.2)
    )
    monkeypatch.setattr("evaluation.gate.aws_clients", clients)
    with stubs[0], stubs[1]:
        report = evaluate(
            predictions_dir, test_dir, output_dir, "binary_classifier", 30, 0,
            gate=GateSettings(0.6, 0.05, GROUP), max_exact=150,
        )  # fmt: skip
    labels = binary_case(400)[0].astype(int)
    features = np.random.default_rng(7).normal(size=(400, 3)).astype(np.float32)
    champion_scores = 1 / (1 + np.exp(-(features @ np.array([0.8, -0.3, 0.1], np.float32) + np.float32(0.2))))
    auc = report["champion"]["binary_classification_metrics"]["auc"]["value"]
    bound = report["champion"]["sketch"]["auc_error_bound"]
    assert abs(auc - skm.roc_auc_score(labels, champion_scores)) <= bound < 1e-3
    assert report["decision"]["champion_value"] == auc


@pytest.mark.parametrize(
    ("predictor_type", "loss"),
    [("binary_classifier", "logistic"), ("multiclass_classifier", "softmax_loss"), ("regressor", "squared_loss")],
)
def test_the_sketch_runs_in_the_image_environment_as_here(
    tmp_path: Path, container: Container, predictor_type: str, loss: str
) -> None:
    """The sketch on Python 3.9 / numpy 1.24.1 from the code bundle, on single-record, sparse and split-record shards:
    the values this interpreter's run writes."""
    labels, predictions = predictions_for(predictor_type, loss, 600)
    predictions_dir, test_dir = write_shards_of_every_kind(tmp_path, labels, predictions)
    args = ["--predictions-dir", predictions_dir, "--test-dir", test_dir, "--predictor-type", predictor_type]
    args += ["--loss", loss, "--max-exact-records", "100"]
    result = container.run("evaluate", *args, "--output-dir", tmp_path / "image")
    assert result.returncode == 0, result.stderr
    assert main([*map(str, args), "--output-dir", str(tmp_path / "here")]) == 0
    in_image = json.loads((tmp_path / "image" / "evaluation.json").read_text())
    here = json.loads((tmp_path / "here" / "evaluation.json").read_text())
    assert in_image["sketch"] == here["sketch"] and in_image["sketch"]["exact_records_cap"] == 100
    section = next(key for key in in_image if key.endswith("_metrics"))
    for name, entry in here[section].items():
        if isinstance(entry, dict) and "value" in entry:
            assert in_image[section][name]["value"] == pytest.approx(entry["value"], rel=1e-9), name
            deviation = entry["standard_deviation"]  # the same Poisson draws from the same seed on either numpy
            assert in_image[section][name]["standard_deviation"] == pytest.approx(deviation, rel=1e-9), name


def test_a_negative_record_cap_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EvaluationError, match=r"^max exact records is -1, expected a record count >= 0 \(0: always"):
        evaluate(tmp_path, tmp_path, tmp_path / "out", "regressor", max_exact=-1)
