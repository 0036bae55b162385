"""The training losses, evaluated for all parallel models at once on a (records, models * classes) score matrix.

Every function returns the per-model sum of losses over the batch and the gradient of that sum with respect to
the scores (same shape as the scores). Regression losses work on the normalised label scale; their parameters
(insensitivity, huber delta) are passed already divided by the label scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

# the loss name the service uses in "<name>_objective" log lines
OBJECTIVE_NAMES = {
    "logistic": "binary_classification_cross_entropy",
    "hinge_loss": "binary_classification_hinge_loss",
    "softmax_loss": "multiclass_cross_entropy",
    "squared_loss": "square_loss",
    "absolute_loss": "absolute_loss",
    "eps_insensitive_squared_loss": "eps_insensitive_squared_loss",
    "eps_insensitive_absolute_loss": "eps_insensitive_absolute_loss",
    "quantile_loss": "quantile_loss",
    "huber_loss": "huber_loss",
}
# degree of homogeneity in the residual: a loss on the normalised scale times scale**degree is the raw-scale loss
REGRESSION_DEGREE = {
    "squared_loss": 2,
    "absolute_loss": 1,
    "eps_insensitive_squared_loss": 2,
    "eps_insensitive_absolute_loss": 1,
    "quantile_loss": 1,
    "huber_loss": 2,
}


@dataclass(frozen=True)
class LossParameters:
    """Loss settings, on the scale the scores are computed on."""

    name: str
    margin: float = 1.0
    insensitivity: float = 0.01
    quantile: float = 0.5
    huber_delta: float = 1.0


def binary_loss(
    params: LossParameters, scores: np.ndarray, labels: np.ndarray, weights: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Logistic or hinge loss; ``labels`` is (n, 1) of 0/1, ``weights`` (n, M) or None."""
    if params.name == "logistic":
        gradient = expit(scores) - labels
        if scores.dtype == np.float32:
            # training: -log(probability of the true class) = -log1p(-|p - y|); 3 cheap passes, capped near 16
            loss = -np.log1p(-np.minimum(np.abs(gradient), np.float32(1.0 - 1e-7)))
        else:
            # evaluation: log(1 + exp(z)) - y z, exact for any score
            loss = np.maximum(scores, 0) + np.log1p(np.exp(-np.abs(scores))) - labels * scores
    else:  # hinge_loss
        signs = 2.0 * labels - 1.0
        slack = params.margin - signs * scores
        active = slack > 0
        loss = np.where(active, slack, 0.0)
        gradient = np.where(active, -signs, 0.0)
    if weights is not None:
        loss = loss * weights
        gradient = gradient * weights
    return loss.sum(axis=0), gradient.astype(scores.dtype, copy=False)


def softmax_loss(
    scores: np.ndarray, labels: np.ndarray, classes: int, weights: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Softmax cross entropy; ``scores`` is (n, M*K), ``labels`` (n,) class ids, ``weights`` (n,) or None."""
    n = scores.shape[0]
    z = scores.reshape(n, -1, classes)
    z = z - z.max(axis=2, keepdims=True)
    exp = np.exp(z)
    total = exp.sum(axis=2, keepdims=True)
    probabilities = exp / total
    rows = np.arange(n)
    loss = np.log(total[:, :, 0]) - z[rows, :, labels]
    gradient = probabilities
    gradient[rows, :, labels] -= 1.0
    if weights is not None:
        loss = loss * weights[:, None]
        gradient = gradient * weights[:, None, None]
    return loss.sum(axis=0), gradient.reshape(n, -1).astype(scores.dtype, copy=False)


def regression_loss(params: LossParameters, scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The regression losses on residual r = score - label; ``labels`` is (n, 1)."""
    r = scores - labels
    name = params.name
    if name == "squared_loss":
        loss, gradient = r * r, 2.0 * r
    elif name == "absolute_loss":
        loss, gradient = np.abs(r), np.sign(r)
    elif name == "eps_insensitive_squared_loss":
        excess = np.maximum(np.abs(r) - params.insensitivity, 0.0)
        loss, gradient = excess * excess, 2.0 * excess * np.sign(r)
    elif name == "eps_insensitive_absolute_loss":
        excess = np.abs(r) - params.insensitivity
        loss, gradient = np.maximum(excess, 0.0), np.where(excess > 0, np.sign(r), 0.0)
    elif name == "quantile_loss":
        q = params.quantile
        # under-prediction (label above the score) costs q per unit, over-prediction 1 - q
        loss = np.where(r < 0, -q * r, (1.0 - q) * r)
        gradient = np.where(r < 0, -q, 1.0 - q)
    elif name == "huber_loss":
        delta = params.huber_delta
        absolute = np.abs(r)
        loss = np.where(absolute <= delta, 0.5 * r * r, delta * (absolute - 0.5 * delta))
        gradient = np.clip(r, -delta, delta)
    else:
        raise ValueError(f"unknown regression loss {name!r}")
    return loss.sum(axis=0), gradient.astype(scores.dtype, copy=False)
