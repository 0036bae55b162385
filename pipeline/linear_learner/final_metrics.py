"""A trained model's final metrics on a channel, under the names the service logs (``#<channel>_score``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from containerlib.linear_learner.model import LinearModel
from pipeline.linear_learner.hyperparameters import Hyperparameters
from pipeline.linear_learner.losses import OBJECTIVE_NAMES, LossParameters, binary_loss, regression_loss, softmax_loss
from pipeline.linear_learner.metrics import binary_metrics, multiclass_metrics, regression_metrics

if TYPE_CHECKING:
    from pipeline.linear_learner.trainer import Channel


def evaluate(hp: Hyperparameters, model: LinearModel, data: Channel) -> list[tuple[str, str, float]]:
    """Final metrics of ``model`` on ``data`` as (name logged by the service, short key, value).

    Read block by block: only the scores, predictions and labels of the whole channel are held, not its features."""
    raw = LossParameters(
        hp.loss, margin=hp.margin, insensitivity=hp.loss_insensitivity, quantile=hp.quantile, huber_delta=hp.huber_delta
    )
    parts = [
        (model.linear_scores(block.features).astype(np.float64), *model.predict(block.features), block.labels)
        for block in data.blocks()
    ]
    scores = np.concatenate([part[0] for part in parts])
    score = np.concatenate([part[1] for part in parts])
    predicted = None if parts[0][2] is None else np.concatenate([part[2] for part in parts])
    labels = np.concatenate([part[3] for part in parts]).astype(np.float64)
    del parts
    objective_name = OBJECTIVE_NAMES[hp.loss] + "_objective"
    if hp.predictor_type == "binary_classifier":
        loss, _ = binary_loss(raw, scores, labels[:, None], None)
        values = binary_metrics(labels, predicted, score, hp.f_beta)
        names = {"binary_f_beta": f"binary_f_{hp.f_beta:.3f}"}
    elif hp.predictor_type == "multiclass_classifier":
        loss, _ = softmax_loss(scores, labels.astype(np.int64), hp.num_classes, None)
        probabilities = score
        values = multiclass_metrics(labels, probabilities, hp.accuracy_top_k, hp.f_beta)
        names = {
            "multiclass_top_k_accuracy": f"multiclass_top_{hp.accuracy_top_k}_accuracy",
            "macro_f_beta": f"macro_f_{hp.f_beta:.3f}",
        }
    else:
        loss, _ = regression_loss(raw, scores, labels[:, None])
        values = regression_metrics(labels, scores[:, 0])
        names = {}
    results = [(objective_name, "objective_loss", float(loss[0]) / max(data.rows, 1))]
    results += [(names.get(key, key), key, value) for key, value in values.items()]
    return results
