"""Training's writing of the model artifact: ``additional-params.json``'s metrics_params from the hyperparameters,
and ``model.tar.gz`` written atomically. The bytes are :mod:`containerlib.linear_learner.writer`'s (the service's
layout), read back by :mod:`containerlib.linear_learner.model`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from containerlib.linear_learner.model import LinearModel
from containerlib.linear_learner.writer import artifact_bytes, float32_double
from pipeline.core.files import write_bytes_atomically
from pipeline.linear_learner.hyperparameters import Hyperparameters


def metrics_params(hp: Hyperparameters, threshold: float) -> dict[str, Any]:
    """``additional-params.json``'s metrics_params for ``hp``: the values the loss and metrics use, null otherwise."""
    weight_mult = hp.positive_example_weight_mult
    return {
        "quantile": hp.quantile if hp.loss == "quantile_loss" else None,
        "huber_delta": hp.huber_delta if hp.loss == "huber_loss" else None,
        "margin": hp.margin if hp.loss == "hinge_loss" else None,
        "loss_insensitivity": hp.loss_insensitivity if hp.loss.startswith("eps_insensitive") else None,
        "eps_insensitive_loss_type": hp.loss if hp.loss.startswith("eps_insensitive") else None,
        "accuracy_top_k": hp.accuracy_top_k,
        "f_beta": None if hp.predictor_type == "regressor" else float(hp.f_beta),
        "positive_example_weight_mult": float(weight_mult) if isinstance(weight_mult, (int, float)) else weight_mult,
        "class_weights": None,
        "threshold": float32_double(threshold),
    }


def save_model(model: LinearModel, path: Path) -> None:
    """Write ``path`` (model.tar.gz) atomically: a temporary name, renamed when complete."""
    write_bytes_atomically(path, artifact_bytes(model))
