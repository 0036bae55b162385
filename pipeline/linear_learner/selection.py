"""Model selection: the best of the parallel models' best snapshots (by validation loss, or for binary classifiers
by the selection criterion on a calibration sample, with its threshold calibrated), folded into a raw-scale model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy.special import expit

from containerlib.linear_learner.model import LinearModel
from containerlib.linear_learner.writer import float32_double
from pipeline.core.errors import AlgorithmInputError
from pipeline.linear_learner.artifact import metrics_params
from pipeline.linear_learner.hyperparameters import Hyperparameters
from pipeline.linear_learner.metrics import calibrate_thresholds

if TYPE_CHECKING:
    from pipeline.linear_learner.trainer import Channel, ParallelModels, Scaler


def select_model(
    hp: Hyperparameters,
    models: ParallelModels,
    best_params: np.ndarray,
    best_loss: np.ndarray,
    data: Channel,
    scaler: Scaler,
) -> tuple[LinearModel, int]:
    """Pick the best of the models' best snapshots; for binary classifiers calibrate the threshold first."""
    # the service writes 0.5 for regressors and multiclass too; hinge loss scores are margins, split at 0
    threshold = 0.0 if hp.loss == "hinge_loss" else 0.5
    if hp.predictor_type == "binary_classifier" and hp.selection_criteria != "loss_function":
        thresholds, values = criteria_values(hp, models, best_params, data)
        # best criterion value; among equals the lower loss
        order = np.lexsort((best_loss, -values))
        index = int(order[0])
        threshold = float(thresholds[index])
    else:
        index = int(np.argmin(best_loss))
    return to_linear_model(hp, models, best_params, index, scaler, threshold), index


def stops_on_binary_criteria(hp: Hyperparameters) -> bool:
    return (
        hp.predictor_type == "binary_classifier"
        and hp.selection_criteria != "loss_function"
        and "binary_classifier_model_selection_criteria" in hp.explicit
    )


def criteria_values(
    hp: Hyperparameters, models: ParallelModels, params: np.ndarray, data: Channel
) -> tuple[np.ndarray, np.ndarray]:
    """Calibrated threshold and selection-criterion value of every model on the calibration sample of ``data`` (its
    first ``num_calibration_samples`` records). Scored block by block and calibrated model by model, so memory holds
    the float32 scores and one model's working arrays, not the features nor every model's float64 arrays at once."""
    scores, labels = [], []
    remaining = min(hp.num_calibration_samples, data.rows)
    for block in data.blocks():
        if remaining <= 0:
            break
        part = block.head(remaining)
        scores.append(models.score(part.features, params))
        labels.append(part.labels)
        remaining -= part.rows
    joined = np.concatenate(scores) if len(scores) > 1 else scores[0]
    sample_labels = np.concatenate(labels)
    del scores, labels
    default_threshold = 0.5 if hp.loss == "logistic" else 0.0
    thresholds, values = np.empty(joined.shape[1]), np.empty(joined.shape[1])
    for column in range(joined.shape[1]):  # columns are independent: the same numbers as all at once
        column_scores = joined[:, column : column + 1].astype(np.float64)
        if hp.loss == "logistic":
            column_scores = expit(column_scores)
        found = calibrate_thresholds(
            sample_labels,
            column_scores,
            hp.selection_criteria,
            beta=hp.f_beta,
            target_precision=hp.target_precision,
            target_recall=hp.target_recall,
            default_threshold=default_threshold,
        )
        thresholds[column], values[column] = found[0][0], found[1][0]
    return thresholds, values


def to_linear_model(
    hp: Hyperparameters, models: ParallelModels, params: np.ndarray, index: int, scaler: Scaler, threshold: float
) -> LinearModel:
    """Fold the normalisation (features and label) into model ``index``'s raw-scale weights and bias, in float64
    from the scaler's float64 mean and scale; refused when the float32 artifact, scored on raw features as the
    service and batch transform score it, would lose the model (:func:`check_folded_precision`)."""
    columns = slice(index * models.classes, (index + 1) * models.classes)
    normalised = params[:, columns].astype(np.float64)
    weights = normalised[:-1] / scaler.feature_scale[:, None]
    bias = normalised[-1] - scaler.feature_mean @ weights
    weights = weights * scaler.label_scale
    bias = bias * scaler.label_scale + scaler.label_mean
    check_folded_precision(weights, scaler)
    threshold = float32_double(threshold)  # the artifact stores it as float32: score with what is stored
    return LinearModel(
        predictor_type=hp.predictor_type,
        loss_type=hp.loss,
        weights=weights.astype(np.float32),
        bias=bias.astype(np.float32),
        threshold=threshold,
        metrics_params=metrics_params(hp, threshold),
    )


FLOAT32_EPSILON = 2.0**-24  # float32's relative rounding
FOLDED_ERROR_LIMIT = 0.05  # of the scores' spread: what float32 rounding of the folded model may cost at most


def check_folded_precision(weights: np.ndarray, scaler: Scaler) -> None:
    """The artifact holds float32 weights acting on raw features: a feature whose mean dwarfs its spread (1e8 +
    N(0, 1)) gets a weight whose products with raw values, and a bias cancelling them, are far larger than the
    score, and float32 rounding of those terms swamps the score. Bound that rounding (each term ``|x w|`` with
    ``|x| <= |mean| + scale``) against the scores' spread (``|w| * scale`` summed) and raise AlgorithmInputError
    naming the feature that costs most, and what to do, when it exceeds :data:`FOLDED_ERROR_LIMIT`. The bias's own
    rounding is left out: it shifts every score alike (a model whose weights are all 0 predicts a constant, and is
    not refused for the float32 rounding of that constant)."""
    magnitude = (np.abs(scaler.feature_mean) + scaler.feature_scale)[:, None] * np.abs(weights)
    rounding = FLOAT32_EPSILON * magnitude.sum(axis=0)
    spread = (scaler.feature_scale[:, None] * np.abs(weights)).sum(axis=0)
    lost = rounding > FOLDED_ERROR_LIMIT * np.maximum(spread, np.finfo(np.float64).tiny)
    if not lost.any():
        return
    column = int(np.flatnonzero(lost)[0])
    feature = int(magnitude[:, column].argmax())
    raise AlgorithmInputError(
        f"feature {feature} (0-based) has mean {scaler.feature_mean[feature]:.6g} and standard deviation "
        f"{scaler.feature_scale[feature]:.6g}: the model's float32 weights on raw features (the artifact the service "
        f"and batch transform score with) would round its scores by up to {rounding[column]:.3g} where they spread "
        f"by {spread[column]:.3g}; subtract a constant near its mean from that feature before training (llpipe's "
        "Preprocess does for columns of an inferred schema)"
    )
