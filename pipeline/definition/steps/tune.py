"""The Tuning step ``Tune`` in place of Train when the configuration turns tuning on."""

from __future__ import annotations

from typing import Any

from pipeline.core.names import TUNE
from pipeline.definition.config import PipelineConfig
from pipeline.definition.declared import Parameters
from pipeline.definition.steps.common import job_step_options
from pipeline.definition.steps.train import model_trainer, training_channels

# The tuning jobs' artifacts: s3://<bucket>/<pipeline>/tune/<training job>/output/model.tar.gz. Not per execution
# as the other outputs are: a cached Tune step hands on an earlier execution's job names, and the model URI is built
# from them and this prefix; the names are unique to each tuning job, so nothing is overwritten.
TUNING_OUTPUT = "tune"


def tuning_key(config: PipelineConfig) -> str:
    """The key prefix (no bucket) under which the tuning jobs' training jobs write their artifacts."""
    return f"{config.pipeline_name}/{TUNING_OUTPUT}"


def tune_step(config: PipelineConfig, params: Parameters, preprocess: Any, session: Any) -> Any:
    """A Tuning step over the documented Linear Learner ranges (definition/tuning.py), num_models forced to 1."""
    from sagemaker.mlops.workflow.steps import TuningStep

    from pipeline.definition.tuning import linear_learner_tuner

    output_path = f"s3://{config.bucket}/{tuning_key(config)}"
    trainer = model_trainer(config, params, TUNING_OUTPUT, output_path, session)
    trainer.hyperparameters = {**trainer.hyperparameters, "num_models": "1"}  # the service forces it when tuning
    tuner = linear_learner_tuner(config, trainer, base_name=f"{config.base_job_prefix}-{TUNING_OUTPUT}")
    step_args = tuner.tune(inputs=training_channels(params, preprocess), wait=False)
    return TuningStep(name=TUNE, step_args=step_args, **job_step_options())
