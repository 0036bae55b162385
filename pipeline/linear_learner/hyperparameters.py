"""Linear Learner hyperparameters: every documented name, default and valid range, coerced from strings.

SageMaker passes hyperparameters as strings (``"True"``, ``"auto"``, ``"0.1"``). ``parse_hyperparameters`` checks
every name and value before any data is read and fails with a ``HyperparameterError`` that names the hyperparameter,
the value and what is allowed; it then resolves every ``auto`` to the value the service logs for it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.core.errors import AlgorithmInputError
from pipeline.core.names import PREDICTOR_TYPES, SELECTION_CRITERIA

LOSSES_BY_PREDICTOR = {
    "binary_classifier": ("logistic", "hinge_loss"),
    "multiclass_classifier": ("softmax_loss",),
    "regressor": (
        "squared_loss",
        "absolute_loss",
        "eps_insensitive_squared_loss",
        "eps_insensitive_absolute_loss",
        "quantile_loss",
        "huber_loss",
    ),
}
ALL_LOSSES = (
    "auto",
    "logistic",
    "squared_loss",
    "absolute_loss",
    "hinge_loss",
    "eps_insensitive_squared_loss",
    "eps_insensitive_absolute_loss",
    "quantile_loss",
    "huber_loss",
    "softmax_loss",
)
# the SDK also accepts these spellings; the service treats them as their documented equivalents
SELECTION_ALIASES = {"f1": "f_beta", "cross_entropy_loss": "loss_function"}
# internal names the service and automatic model tuning add; accepted and ignored
INTERNAL_NAMES = (
    "_kvstore",
    "_num_gpus",
    "_num_kv_servers",
    "_log_level",
    "_tuning_objective_metric",
    "_enable_profiler",
)

AUTO_LEARNING_RATE = {"adam": 0.1, "sgd": 0.1, "rmsprop": 0.01}
AUTO_NUM_MODELS = 32
# records (from the start of the validation channel, or of train without one) used to calibrate the threshold of
# every parallel model; sorting all of a large channel for 32 models would cost more than the training
AUTO_CALIBRATION_SAMPLES = 100_000


class HyperparameterError(AlgorithmInputError):
    """An unknown hyperparameter name or an invalid value; the message says what is allowed."""


class _Invalid(ValueError):
    """Raised by a value parser; its text says what is allowed."""


def _boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise _Invalid("true or false")


def _integer(low: int, high: float = math.inf) -> Callable[[str], int]:
    allowed = (
        f"an integer from {low} to {high:,}"
        if high != math.inf
        else ("a positive integer" if low == 1 else f"an integer >= {low}")
    )

    def parse(text: str) -> int:
        try:
            number = float(text)
        except ValueError:
            raise _Invalid(allowed) from None
        if not number.is_integer() or not low <= number <= high:
            raise _Invalid(allowed)
        return int(number)

    return parse


def _real(
    low: float = -math.inf, high: float = math.inf, *, low_open: bool = False, high_open: bool = False, allowed: str
) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            number = float(text)
        except ValueError:
            raise _Invalid(allowed) from None
        if not math.isfinite(number):
            raise _Invalid(allowed)
        if number < low or (low_open and number == low) or number > high or (high_open and number == high):
            raise _Invalid(allowed)
        return number

    return parse


def _choice(*options: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in options:
            raise _Invalid("one of " + ", ".join(options))
        return text

    return parse


def _auto_or(parse: Callable[[str], Any], allowed_extra: tuple[str, ...] = ("auto",)) -> Callable[[str], Any]:
    def wrapped(text: str) -> Any:
        if text.strip().lower() in allowed_extra:
            return text.strip().lower()
        try:
            return parse(text)
        except _Invalid as error:
            raise _Invalid(" or ".join(allowed_extra) + f" or {error}") from None

    return wrapped


_POSITIVE = _real(0.0, low_open=True, allowed="a positive number")
_NON_NEGATIVE = _real(0.0, allowed="a non-negative number")
_UNIT_OPEN = _real(0.0, 1.0, low_open=True, high_open=True, allowed="a number between 0 and 1 (exclusive)")
_UNIT_HALF_OPEN = _real(0.0, 1.0, high_open=True, allowed="a number from 0 up to (not including) 1")
_UNIT_CLOSED_TOP = _real(0.0, 1.0, low_open=True, allowed="a number greater than 0 and at most 1")

# name -> (default as the service would receive it, parser); default None means required or not applicable
SPECS: dict[str, tuple[str | None, Callable[[str], Any]]] = {
    "predictor_type": (None, _choice(*PREDICTOR_TYPES)),
    "feature_dim": ("auto", _auto_or(_integer(1))),
    "num_classes": (None, _integer(3, 1_000_000)),
    "accuracy_top_k": ("3", _integer(1)),
    "balance_multiclass_weights": ("false", _boolean),
    "beta_1": ("auto", _auto_or(_UNIT_HALF_OPEN)),
    "beta_2": ("auto", _auto_or(_UNIT_HALF_OPEN)),
    "bias_lr_mult": ("auto", _auto_or(_POSITIVE)),
    "bias_wd_mult": ("auto", _auto_or(_NON_NEGATIVE)),
    "binary_classifier_model_selection_criteria": ("accuracy", _choice(*SELECTION_CRITERIA, *SELECTION_ALIASES)),
    "early_stopping_patience": ("3", _integer(1)),
    "early_stopping_tolerance": ("0.001", _POSITIVE),
    "epochs": ("15", _integer(1)),
    "f_beta": ("1.0", _POSITIVE),
    "huber_delta": ("1.0", _POSITIVE),
    "init_bias": ("0", _real(allowed="a number")),
    "init_method": ("uniform", _choice("uniform", "normal")),
    "init_scale": ("0.07", _POSITIVE),
    "init_sigma": ("0.01", _POSITIVE),
    "l1": ("auto", _auto_or(_NON_NEGATIVE)),
    "learning_rate": ("auto", _auto_or(_POSITIVE)),
    "loss": ("auto", _choice(*ALL_LOSSES)),
    "loss_insensitivity": ("0.01", _POSITIVE),
    "lr_scheduler_factor": ("auto", _auto_or(_UNIT_OPEN)),
    "lr_scheduler_minimum_lr": ("auto", _auto_or(_POSITIVE)),
    "lr_scheduler_step": ("auto", _auto_or(_integer(1))),
    "margin": ("1.0", _POSITIVE),
    "mini_batch_size": ("1000", _integer(1)),
    "momentum": ("auto", _auto_or(_UNIT_HALF_OPEN)),
    "normalize_data": ("true", _auto_or(_boolean)),
    "normalize_label": ("auto", _auto_or(_boolean)),
    "num_calibration_samples": ("auto", _auto_or(_integer(1))),
    "num_models": ("auto", _auto_or(_integer(1))),
    "num_point_for_scaler": ("10000", _integer(1)),
    "optimizer": ("auto", _choice("auto", "sgd", "adam", "rmsprop")),
    "positive_example_weight_mult": ("1.0", _auto_or(_POSITIVE, ("auto", "balanced"))),
    "quantile": ("0.5", _UNIT_OPEN),
    "target_precision": ("0.8", _UNIT_CLOSED_TOP),
    "target_recall": ("0.8", _UNIT_CLOSED_TOP),
    "unbias_data": ("auto", _auto_or(_boolean)),
    "unbias_label": ("auto", _auto_or(_boolean)),
    "use_bias": ("true", _boolean),
    "use_lr_scheduler": ("true", _boolean),
    "wd": ("auto", _auto_or(_NON_NEGATIVE)),
}


@dataclass(frozen=True)
class Hyperparameters:
    """Validated hyperparameters with every ``auto`` resolved; ``explicit`` lists the names set to a value."""

    predictor_type: str
    feature_dim: int | None  # None: taken from the data
    num_classes: int  # 1 for binary and regression
    loss: str
    accuracy_top_k: int
    balance_multiclass_weights: bool
    beta_1: float
    beta_2: float
    bias_lr_mult: float
    bias_wd_mult: float
    selection_criteria: str
    early_stopping_patience: int
    early_stopping_tolerance: float
    epochs: int
    f_beta: float
    huber_delta: float
    init_bias: float
    init_method: str
    init_scale: float
    init_sigma: float
    l1: float
    learning_rate: float
    loss_insensitivity: float
    lr_scheduler_factor: float
    lr_scheduler_minimum_lr: float
    lr_scheduler_step: int
    margin: float
    mini_batch_size: int
    momentum: float
    normalize_data: bool
    normalize_label: bool
    num_calibration_samples: int
    num_models: int
    num_point_for_scaler: int
    optimizer: str
    positive_example_weight_mult: float | str  # a number, "balanced" or "auto"
    quantile: float
    target_precision: float
    target_recall: float
    unbias_data: bool | None  # None: auto (true for dense data when use_bias)
    unbias_label: bool
    use_bias: bool
    use_lr_scheduler: bool
    wd: float
    explicit: frozenset[str]

    def resolved(self) -> dict[str, str]:
        """Every value as a string, the way the service logs its final configuration."""
        return {name: str(value) for name, value in sorted(vars(self).items()) if name != "explicit"}


def _fail(name: str, value: str, allowed: str) -> HyperparameterError:
    return HyperparameterError(f"Hyperparameter {name!r} has the invalid value {value!r}: allowed is {allowed}")


def parse_hyperparameters(raw: Mapping[str, Any]) -> Hyperparameters:
    """Validate and coerce the strings of ``hyperparameters.json``; raise ``HyperparameterError`` when invalid."""
    unknown = sorted(name for name in raw if name not in SPECS and name not in INTERNAL_NAMES)
    if unknown:
        raise HyperparameterError(
            f"Unknown hyperparameter(s) {', '.join(repr(n) for n in unknown)}: allowed names are "
            + ", ".join(sorted(SPECS))
        )
    values: dict[str, Any] = {}
    multiclass = str(raw.get("predictor_type", "")).strip() == "multiclass_classifier"
    for name, (default, parse) in SPECS.items():
        if name == "num_classes" and not multiclass:
            continue  # documented: ignored unless predictor_type is multiclass_classifier
        if name in raw:
            text = str(raw[name]).strip()
            try:
                values[name] = parse(text)
            except _Invalid as error:
                raise _fail(name, text, str(error)) from None
        elif default is not None:
            values[name] = parse(default)
    if "predictor_type" not in values:
        raise HyperparameterError(
            "Hyperparameter 'predictor_type' is required: allowed is one of " + ", ".join(PREDICTOR_TYPES)
        )
    if "_tuning_objective_metric" in raw:
        values["num_models"] = 1  # the service turns its internal tuning off under automatic model tuning
    # "auto" given explicitly is still auto (the pipeline always sends learning_rate, wd, l1)
    explicit = frozenset(name for name in raw if name in SPECS and str(raw[name]).strip().lower() != "auto")
    return _resolve(values, explicit)


def _resolve(values: dict[str, Any], explicit: frozenset[str]) -> Hyperparameters:
    predictor = values["predictor_type"]
    if predictor == "multiclass_classifier":
        if "num_classes" not in values:
            raise HyperparameterError(
                "Hyperparameter 'num_classes' is required when predictor_type is "
                "multiclass_classifier: allowed is an integer from 3 to 1,000,000"
            )
        num_classes = values["num_classes"]
    else:
        num_classes = 1
    loss = values["loss"]
    allowed_losses = LOSSES_BY_PREDICTOR[predictor]
    if loss == "auto":
        loss = allowed_losses[0]
    elif loss not in allowed_losses:
        raise _fail("loss", loss, f"auto or one of {', '.join(allowed_losses)} when predictor_type is {predictor}")
    optimizer = "adam" if values["optimizer"] == "auto" else values["optimizer"]
    criteria = values["binary_classifier_model_selection_criteria"]
    criteria = SELECTION_ALIASES.get(criteria, criteria)
    f_beta = 1.0 if values["binary_classifier_model_selection_criteria"] == "f1" else values["f_beta"]

    def auto(name: str, value: Any) -> Any:
        return value if values[name] == "auto" else values[name]

    use_bias = values["use_bias"]
    normalize_label = values["normalize_label"]
    normalize_label = (
        (predictor == "regressor") if normalize_label == "auto" else (normalize_label and predictor == "regressor")
    )
    unbias_label = values["unbias_label"]
    unbias_label = (
        (predictor == "regressor" and use_bias)
        if unbias_label == "auto"
        else (unbias_label and predictor == "regressor")
    )
    feature_dim = None if values["feature_dim"] == "auto" else values["feature_dim"]
    calibration = auto("num_calibration_samples", AUTO_CALIBRATION_SAMPLES)
    return Hyperparameters(
        predictor_type=predictor,
        feature_dim=feature_dim,
        num_classes=num_classes,
        loss=loss,
        accuracy_top_k=values["accuracy_top_k"],
        balance_multiclass_weights=values["balance_multiclass_weights"],
        beta_1=auto("beta_1", 0.9),
        beta_2=auto("beta_2", 0.999),
        bias_lr_mult=auto("bias_lr_mult", 1.0),
        bias_wd_mult=auto("bias_wd_mult", 0.0),
        selection_criteria=criteria,
        early_stopping_patience=values["early_stopping_patience"],
        early_stopping_tolerance=values["early_stopping_tolerance"],
        epochs=values["epochs"],
        f_beta=f_beta,
        huber_delta=values["huber_delta"],
        init_bias=values["init_bias"],
        init_method=values["init_method"],
        init_scale=values["init_scale"],
        init_sigma=values["init_sigma"],
        l1=auto("l1", 0.0),
        learning_rate=auto("learning_rate", AUTO_LEARNING_RATE[optimizer]),
        loss_insensitivity=values["loss_insensitivity"],
        lr_scheduler_factor=auto("lr_scheduler_factor", 0.99),
        lr_scheduler_minimum_lr=auto("lr_scheduler_minimum_lr", 1e-5),
        lr_scheduler_step=auto("lr_scheduler_step", 100),
        margin=values["margin"],
        mini_batch_size=values["mini_batch_size"],
        momentum=auto("momentum", 0.0),
        normalize_data=values["normalize_data"] in ("auto", True),
        normalize_label=normalize_label,
        num_calibration_samples=calibration,
        num_models=auto("num_models", AUTO_NUM_MODELS),
        num_point_for_scaler=values["num_point_for_scaler"],
        optimizer=optimizer,
        positive_example_weight_mult=values["positive_example_weight_mult"],
        quantile=values["quantile"],
        target_precision=values["target_precision"],
        target_recall=values["target_recall"],
        unbias_data=None if values["unbias_data"] == "auto" else values["unbias_data"],
        unbias_label=unbias_label,
        use_bias=use_bias,
        use_lr_scheduler=values["use_lr_scheduler"],
        wd=auto("wd", 1e-4),
        explicit=explicit,
    )
