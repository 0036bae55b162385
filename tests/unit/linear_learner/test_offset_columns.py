"""A column's offset or scale does not change what the local Linear Learner learns: the scaler's variance is taken
around the mean (not E[x^2] - mean^2, which cancelled to noise for 1e8 + N(0, 1)), dense features are centred before
the product, and the model folded onto raw features is refused, naming the feature, when its float32 scores would
lose what it learnt (the 1e8 column's folding swamped the others: AUC 0.754 where the baseline got 0.947)."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.core.errors import AlgorithmInputError
from pipeline.linear_learner.collective import LocalCollective
from pipeline.linear_learner.final_metrics import evaluate
from pipeline.linear_learner.hyperparameters import parse_hyperparameters
from pipeline.linear_learner.trainer import Dataset, fit, fit_scaler

ROWS = 4000
HYPERPARAMETERS = {"predictor_type": "binary_classifier", "epochs": "5", "num_models": "4", "mini_batch_size": "100"}


def table(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Four informative N(0, 1) columns and a noisy binary label."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(ROWS, 4))
    y = (z @ np.array([1.0, 0.8, -0.6, 0.4]) + 0.7 * rng.logistic(size=ROWS) > 0).astype(np.float32)
    return z, y


def auc(features: np.ndarray, labels: np.ndarray) -> float:
    """The test AUC of the artifact's model (float32 weights on raw features, as the service scores)."""
    data = features.astype(np.float32)
    train, validation, test = (Dataset(data[a:b], labels[a:b]) for a, b in ((0, 2800), (2800, 3400), (3400, ROWS)))
    hp = parse_hyperparameters(HYPERPARAMETERS)
    result = fit(hp, train, validation, LocalCollective(), lambda line: None)
    return {key: value for _, key, value in evaluate(hp, result.model, test)}["roc_auc_score"]


@pytest.mark.parametrize(
    ("column", "offset", "scale"),
    [(0, 0.0, 1e-6), (1, 0.0, 1e6), (0, 1e4, 1.0), (2, -3e5, 1e3), (3, 1e8, 1e6), (0, 1e3, 1e-3), (1, -1e12, 1e9)],
)
def test_an_offset_or_scale_of_a_column_leaves_the_auc_as_it_was(column: int, offset: float, scale: float) -> None:
    z, y = table(seed=column)
    shifted = z.copy()
    shifted[:, column] = offset + scale * z[:, column]
    assert auc(shifted, y) == pytest.approx(auc(z, y), abs=0.003)


@pytest.mark.parametrize(("offset", "scale"), [(1e7, 1.0), (-2e6, 0.2), (3e9, 100.0)])
def test_a_model_whose_float32_artifact_would_lose_it_is_refused_naming_the_feature(offset: float, scale: float):
    z, y = table(seed=5)
    z[:, 2] = offset + scale * z[:, 2]
    with pytest.raises(AlgorithmInputError, match=r"feature 2 \(0-based\) has mean .*subtract a constant near"):
        auc(z, y)


@pytest.mark.parametrize("offset", [1e4, 1e8, -1e9])
def test_the_scaler_s_spread_of_a_column_far_from_zero_is_its_float64_spread(offset: float) -> None:
    rng = np.random.default_rng(7)
    values = (offset + rng.normal(scale=abs(offset) * 1e-6, size=(5000, 1))).astype(np.float32)
    hp = parse_hyperparameters({"predictor_type": "regressor", "num_point_for_scaler": "5000"})
    scaler, _ = fit_scaler(hp, Dataset(values, rng.normal(size=5000).astype(np.float32)), LocalCollective())
    exact = values.astype(np.float64)
    assert scaler.feature_mean[0] == pytest.approx(exact.mean(), rel=1e-12)
    assert scaler.feature_scale[0] == pytest.approx(exact.std(), rel=1e-9)


@pytest.mark.parametrize("value", [1.7e9, -3e7, 12345.678])
def test_a_constant_column_far_from_zero_adds_nothing_to_the_artifact_s_scores(value: float) -> None:
    """Centred, a constant column is all zeros: its weight starts and stays 0, so folding it onto the raw value adds
    nothing for float32 to round (a random starting weight times 1.7e9 shifted every score)."""
    z, y = table(seed=3)
    hp = parse_hyperparameters({**HYPERPARAMETERS, "wd": "0", "l1": "0"})  # nothing pulls a stray weight to 0
    models = []
    for features in (z, np.column_stack([z, np.full(ROWS, value)])):
        data = features.astype(np.float32)
        train, validation = Dataset(data[:3000], y[:3000]), Dataset(data[3000:], y[3000:])
        result = fit(hp, train, validation, LocalCollective(), lambda line: None)
        models.append((result.model, data[3000:]))
    (plain, plain_test), (constant, constant_test) = models
    assert constant.weights[-1, 0] == 0.0
    np.testing.assert_allclose(constant.weights[:-1], plain.weights, rtol=1e-5)
    plain_scores, _ = plain.predict(plain_test)
    constant_scores, _ = constant.predict(constant_test)
    np.testing.assert_allclose(constant_scores, plain_scores, atol=1e-5)
