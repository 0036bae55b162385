"""The trained model on the raw feature scale: scores = X @ weights + bias, then the predictor's output rule."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit


@dataclass(frozen=True)
class LinearModel:
    """One selected model with normalisation folded in: raw features in, raw-scale predictions out."""

    predictor_type: str
    loss: str
    weights: np.ndarray  # (feature_dim, K) float32; K = num_classes for multiclass, else 1
    bias: np.ndarray  # (K,) float32
    threshold: float = 0.5  # binary only: positive when the score is greater than this

    @property
    def feature_dim(self) -> int:
        return int(self.weights.shape[0])

    @property
    def num_classes(self) -> int:
        return int(self.weights.shape[1]) if self.predictor_type == "multiclass_classifier" else 2

    def linear_scores(self, features) -> np.ndarray:
        """X @ W + b as float64 (n, K); ``features`` dense ndarray or scipy sparse (float32 product, no copy)."""
        product = features @ self.weights
        return np.asarray(product, dtype=np.float64) + self.bias.astype(np.float64)

    def predict(self, features) -> tuple[np.ndarray, np.ndarray | None]:
        """(score, predicted_label): binary score (n,), multiclass probabilities (n, K), regression value (n,)."""
        z = self.linear_scores(features)
        if self.predictor_type == "regressor":
            return z[:, 0], None
        if self.predictor_type == "multiclass_classifier":
            z = z - z.max(axis=1, keepdims=True)
            exp = np.exp(z)
            probabilities = exp / exp.sum(axis=1, keepdims=True)
            return probabilities, np.argmax(probabilities, axis=1)
        score = expit(z[:, 0]) if self.loss == "logistic" else z[:, 0]
        return score, (score > self.threshold).astype(np.int64)
