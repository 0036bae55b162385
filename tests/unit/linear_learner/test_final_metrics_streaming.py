"""The final metrics are streamed block by block: the same figures as the whole channel scored at once, the AUC
exact up to its cap and within its stated bound past it, and memory that does not grow with the channel."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from containerlib.linear_learner.model import LinearModel
from pipeline.linear_learner.final_metrics import evaluate
from pipeline.linear_learner.hyperparameters import parse_hyperparameters
from pipeline.linear_learner.metrics import (
    RankedScores,
    binary_metrics,
    multiclass_metrics,
    regression_metrics,
    roc_auc,
)
from pipeline.linear_learner.trainer import Dataset


@dataclass
class Generated:
    """A channel of ``count`` blocks of ``size`` records generated one at a time (never all in memory)."""

    dim: int
    size: int
    count: int
    classes: int = 2
    seed: int = 0

    @property
    def rows(self) -> int:
        return self.size * self.count

    def blocks(self, rng: np.random.Generator | None = None) -> Iterator[Dataset]:
        for index in range(self.count):
            generator = np.random.default_rng([self.seed, index])
            features = generator.standard_normal((self.size, self.dim), dtype=np.float32)
            # rounded features give tied scores, so the AUC's tie handling is exercised
            features = np.round(features, 1)
            labels = generator.integers(0, self.classes, self.size).astype(np.float32)
            yield Dataset(features, labels)

    def whole(self) -> Dataset:
        parts = list(self.blocks())
        return Dataset(np.vstack([p.features for p in parts]), np.concatenate([p.labels for p in parts]))


def _model(predictor_type: str, dim: int, outputs: int = 1, loss: str = "logistic") -> LinearModel:
    weights = np.random.default_rng(1).standard_normal((dim, outputs)).astype(np.float32)
    return LinearModel(
        predictor_type=predictor_type,
        loss_type=loss,
        weights=weights,
        bias=np.full(outputs, 0.1, dtype=np.float32),
        threshold=0.5,
        metrics_params={},
    )


def test_binary_metrics_streamed_equal_the_whole_channel_at_once():
    hp = parse_hyperparameters({"predictor_type": "binary_classifier"})
    data = Generated(dim=3, size=997, count=7)
    model = _model("binary_classifier", 3)
    streamed = {key: value for _, key, value in evaluate(hp, model, data)}
    whole = data.whole()
    score, predicted = model.predict(whole.features)
    expected = binary_metrics(whole.labels.astype(np.float64), predicted, score, hp.f_beta)
    assert set(streamed) == {"objective_loss", *expected}
    for key, value in expected.items():
        assert streamed[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    assert streamed["roc_auc_score"] == pytest.approx(roc_auc_score(whole.labels, score), rel=1e-12)


def test_multiclass_and_regression_metrics_streamed_equal_the_whole_channel_at_once():
    hp = parse_hyperparameters({"predictor_type": "multiclass_classifier", "num_classes": "4", "accuracy_top_k": "2"})
    data = Generated(dim=3, size=500, count=5, classes=4)
    model = _model("multiclass_classifier", 3, outputs=4, loss="softmax_loss")
    streamed = {key: value for _, key, value in evaluate(hp, model, data)}
    whole = data.whole()
    probabilities, _ = model.predict(whole.features)
    for key, value in multiclass_metrics(whole.labels.astype(np.float64), probabilities, 2, hp.f_beta).items():
        assert streamed[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key

    hp = parse_hyperparameters({"predictor_type": "regressor"})
    data = Generated(dim=3, size=400, count=6, classes=50)
    model = _model("regressor", 3, loss="squared_loss")
    streamed = {key: value for _, key, value in evaluate(hp, model, data)}
    whole = data.whole()
    predictions, _ = model.predict(whole.features)
    for key, value in regression_metrics(whole.labels.astype(np.float64), predictions).items():
        assert streamed[key] == pytest.approx(value, rel=1e-10), key


def test_ranked_scores_are_exact_up_to_the_cap_and_within_the_bound_past_it():
    rng = np.random.default_rng(3)
    scores = np.round(rng.random(20_000), 3).astype(np.float32)  # many ties
    labels = (rng.random(20_000) < scores).astype(np.int64)
    exact = RankedScores("probability", exact_records=20_000, bins=64)
    binned = RankedScores("probability", exact_records=5_000, bins=64)
    for start in range(0, scores.size, 3_000):
        for ranked in (exact, binned):
            ranked.add(scores[start : start + 3_000], labels[start : start + 3_000] == 1)
    assert exact.auc() == pytest.approx(roc_auc(labels, scores), rel=1e-12)
    assert exact.auc() == pytest.approx(roc_auc_score(labels, scores), rel=1e-12)
    assert exact.error_bound == 0.0
    assert 0 < binned.error_bound < 0.02
    assert binned.auc() != exact.auc()
    assert abs(binned.auc() - exact.auc()) <= binned.error_bound


def test_ranked_scores_of_margins_bin_by_their_logistic():
    rng = np.random.default_rng(4)
    margins = (rng.standard_normal(8_000) * 3).astype(np.float32)
    labels = rng.random(8_000) < 1 / (1 + np.exp(-margins))
    binned = RankedScores("margin", exact_records=100, bins=1 << 12)
    binned.add(margins, labels)
    assert abs(binned.auc() - roc_auc_score(labels, margins)) <= binned.error_bound


def test_past_the_exact_cap_memory_does_not_grow_with_the_channel():
    """Traced allocations over 40 blocks are what they are over 4: one block's and the fixed counts'."""
    hp = parse_hyperparameters({"predictor_type": "binary_classifier"})
    model = _model("binary_classifier", 8)

    def peak(count: int) -> tuple[int, dict]:
        tracemalloc.start()
        try:
            metrics = {
                key: value for _, key, value in evaluate(hp, model, Generated(8, 20_000, count), exact_auc_records=1000)
            }
            return tracemalloc.get_traced_memory()[1], metrics
        finally:
            tracemalloc.stop()

    small, _ = peak(4)
    large, metrics = peak(40)
    assert large <= small * 1.05 + (1 << 18), (small, large)
    assert 0 < metrics["roc_auc_score_error_bound"] < 0.01
