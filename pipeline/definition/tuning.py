"""What automatic model tuning of Linear Learner searches and optimises: objectives, strategies, ranges.

The documented facts ("Tune a linear learner model"): the objective metrics and their direction, the tunable
hyperparameters, and that tuning forces ``num_models`` to 1; the ranges searched (narrower than the recommended
ones, see ``RANGES``). Both the definition (the
Tuning step's request) and the configuration (checking the settings) read them from here.

The objective defaults to ``validation:objective_loss`` (minimise): the predictor type is a *runtime* pipeline
parameter, so a build-time default cannot follow it, and the objective loss is the one metric every predictor type
emits (and the only one with early stopping of training jobs). A metric of one predictor type only (e.g.
``validation:roc_auc_score``) is chosen with the ``tuning_objective`` setting; a run whose predictor type does not
emit it fails with a reason naming the metric.
"""

from __future__ import annotations

from typing import Any

DEFAULT_OBJECTIVE = "validation:objective_loss"
STRATEGIES = ("Bayesian", "Random")
MAX_TRAINING_JOBS = 750  # the service's limit per tuning job
MAX_PARALLEL_TRAINING_JOBS = 100  # the API's bound; accounts start with a quota of 10
RANDOM_SEED = 1  # RandomSeed of the tuning job: repeatable searches on the service and locally

_MINIMIZE = ("objective_loss", "rmse", "mse", "absolute_loss")
_MAXIMIZE = (
    # binary classifiers
    "roc_auc_score",
    "binary_f_beta",
    "binary_classification_accuracy",
    "precision",
    "recall",
    # multiclass classifiers
    "multiclass_accuracy",
    "multiclass_top_k_accuracy",
    "macro_f_beta",
    "macro_precision",
    "macro_recall",
    "dcg",
)
OBJECTIVES: dict[str, str] = {
    **{f"validation:{name}": "Minimize" for name in _MINIMIZE},
    **{f"validation:{name}": "Maximize" for name in _MAXIMIZE},
}

# name -> (kind, low, high or values, scaling). Narrower than the documented recommended ranges (learning_rate
# 1e-5..1, wd and l1 1e-7..1, mini_batch_size 100..5000, positive_example_weight_mult 1e-5..1e5, use_bias): under
# tuning every training job trains one model (num_models 1), where the untuned defaults train many and keep the best,
# so a dozen jobs spread over those ranges mostly land where no default model would (a learning rate of 0.5, wd 0.8,
# a positive weight of 1e4) and the best of them was worse on the test split than the defaults (ISLP's Caravan: AUC
# 0.719 against 0.735). These ranges span what the defaults' models try (the local algorithm's wd grid 1e-7..1e-1,
# its learning rates 0.03 and 0.1) and a decade around; use_bias and positive_example_weight_mult stay the
# parameters' values (weighting moves the probabilities, not the ranking AUC measures). benchmarks/tuning.py
# measures it (benchmarks/RESULTS.md).
RANGES: dict[str, tuple[str, Any, Any, str]] = {
    "learning_rate": ("Continuous", "0.001", "0.3", "Logarithmic"),
    "l1": ("Continuous", "1e-07", "0.01", "Logarithmic"),
    "wd": ("Continuous", "1e-07", "0.1", "Logarithmic"),
    "mini_batch_size": ("Integer", "100", "2000", "Logarithmic"),
}


def objective_type(metric: str) -> str:
    """``Minimize`` or ``Maximize`` for a Linear Learner objective metric; ValueError naming the known ones."""
    if metric not in OBJECTIVES:
        known = ", ".join(OBJECTIVES)
        raise ValueError(f"{metric!r} is not a Linear Learner objective metric; expected one of {known}")
    return OBJECTIVES[metric]


def sdk_ranges() -> dict[str, Any]:
    """The ranges as SDK v3 parameter ranges (call inside ``offline_sdk``), in a stable order."""
    from sagemaker.core.parameter import CategoricalParameter, ContinuousParameter, IntegerParameter

    ranges: dict[str, Any] = {}
    for name, (kind, low, high, scaling) in RANGES.items():
        if kind == "Continuous":
            ranges[name] = ContinuousParameter(low, high, scaling_type=scaling)
        elif kind == "Integer":
            ranges[name] = IntegerParameter(low, high, scaling_type=scaling)
        else:
            ranges[name] = CategoricalParameter(low)
    return ranges


def tuner_arguments(config: Any, trainer: Any, base_name: str) -> dict[str, Any]:
    """The keyword arguments of SDK v3's ``HyperparameterTuner`` for the configuration's tuning settings."""
    return {
        "model_trainer": trainer,
        "objective_metric_name": config.tuning_objective,
        "objective_type": objective_type(config.tuning_objective),
        "hyperparameter_ranges": sdk_ranges(),
        "strategy": config.tuning_strategy,
        "max_jobs": config.tuning_max_jobs,
        # more at once than there are jobs means nothing
        "max_parallel_jobs": min(config.tuning_max_parallel_jobs, config.tuning_max_jobs),
        "early_stopping_type": "Off",
        "random_seed": RANDOM_SEED,
        "base_tuning_job_name": base_name,
        "tags": config.all_tags or None,
    }


def linear_learner_tuner(config: Any, trainer: Any, base_name: str) -> Any:
    """The SDK v3 HyperparameterTuner of the configuration (call inside ``offline_sdk``)."""
    from sagemaker.train.tuner import HyperparameterTuner

    class SecureTuner(HyperparameterTuner):
        """SDK v3 3.27 leaves the trainer's network isolation, traffic encryption and volume KMS key out of the
        tuning job's TrainingJobDefinition (it passes only the VPC): put them back, as a training job has them."""

        def _build_training_job_definition(self, inputs: Any) -> Any:
            definition = super()._build_training_job_definition(inputs)
            networking, compute = trainer.networking, trainer.compute
            definition.enable_network_isolation = networking.enable_network_isolation
            definition.enable_inter_container_traffic_encryption = networking.enable_inter_container_traffic_encryption
            if compute.volume_kms_key_id:
                definition.resource_config.volume_kms_key_id = compute.volume_kms_key_id
            return definition

    return SecureTuner(**tuner_arguments(config, trainer, base_name))
