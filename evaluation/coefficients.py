"""The model's coefficients in the report: each feature's weight under its name (a numeric column's name,
``column#bucket`` for a hashed one: :mod:`containerlib.feature_names`, as Preprocess's summary lists them), the bias,
and the weight on the standardised scale (times the feature's standard deviation on the baseline's train sample), so
weights of features with different units can be ranked. Listed by the size of the standardised weight (of the raw
weight without a sample), at most ``MAX_LISTED`` features."""

from __future__ import annotations

from typing import Any

import numpy as np

from containerlib.linear_learner.model import LinearModel

COEFFICIENTS = "coefficients"  # the report's section
MAX_LISTED = 1000  # features listed at most (the largest first): a hashed layout can hold many thousands


def feature_scale(features: Any) -> np.ndarray:
    """Each feature's standard deviation over the sample's rows (a dense array or a CSR matrix), float64."""
    if isinstance(features, np.ndarray):
        return np.asarray(features, dtype=np.float64).std(axis=0)
    rows = features.shape[0]
    mean = np.asarray(features.sum(axis=0), dtype=np.float64).ravel() / rows
    squares = np.asarray(features.multiply(features).sum(axis=0), dtype=np.float64).ravel() / rows
    return np.sqrt(np.maximum(squares - mean**2, 0.0))


def coefficients_section(
    model: LinearModel, names: list[str] | None, scale: np.ndarray | None, sample_records: int | None
) -> dict[str, Any]:
    """The ``coefficients`` section: the bias and the features' weights, largest (standardised) first."""
    weights = np.asarray(model.weights, dtype=np.float64)  # (features, K)
    count, outputs = weights.shape
    if names is None or len(names) != count:
        names = [f"feature_{index}" for index in range(count)]
    if scale is not None and len(scale) != count:
        scale = None
    standardised = None if scale is None else weights * scale[:, None]
    strength = np.abs(weights if standardised is None else standardised).max(axis=1)
    order = np.argsort(-strength, kind="stable")[:MAX_LISTED]
    several = outputs > 1

    def value(row: np.ndarray) -> Any:
        return [float(item) for item in row] if several else float(row[0])

    features = []
    for index in order.tolist():
        entry: dict[str, Any] = {"feature": names[index], "weight": value(weights[index])}
        if standardised is not None and scale is not None:
            entry["standard_deviation"] = float(scale[index])
            entry["standardised_weight"] = value(standardised[index])
        features.append(entry)
    scale_text = (
        f"standardised weight = weight x the feature's standard deviation on the baseline's train sample "
        f"({sample_records} records)"
        if scale is not None
        else "no train sample: weights on the raw feature scale only"
    )
    return {
        "feature_count": count,
        "listed": len(features),
        "ranked_by": "standardised_weight" if scale is not None else "weight",
        "scale": scale_text,
        "bias": value(np.asarray(model.bias, dtype=np.float64).reshape(-1)),
        "features": features,
    }
