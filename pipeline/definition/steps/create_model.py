"""The CreateModel step: the inference pipeline (featurizer, Linear Learner, labels; ``steps/serving.py``) as one
model, its containers called in order (``InferenceExecutionConfig.Mode=Serial``), so batch transform and endpoints
serve the same thing the registry holds."""

from __future__ import annotations

from typing import Any

from pipeline.core.names import CREATE_MODEL
from pipeline.definition.config import PipelineConfig
from pipeline.definition.steps.common import linear_learner_image, model_step_retries


def model_builder(config: PipelineConfig, model_data: Any, session: Any) -> Any:
    """A ModelBuilder for the trained Linear Learner artifact, on the same image (the algorithm serves itself)."""
    import logging

    from sagemaker.serve import ModelBuilder
    from sagemaker.train.configs import Networking

    networking: dict[str, Any] = {"enable_network_isolation": config.enable_network_isolation}
    if config.subnets:
        networking.update(subnets=list(config.subnets), security_group_ids=list(config.security_group_ids))
    return ModelBuilder(
        image_uri=linear_learner_image(config),
        s3_model_data_url=model_data,
        role_arn=config.role_arn,
        sagemaker_session=session,
        network=Networking(**networking),
        # no code dependencies: the default {"auto": False} is truthy and makes register() add script-mode
        # variables (SAGEMAKER_PROGRAM="" ...) meant for framework containers
        dependencies={},
        log_level=logging.WARNING,
    )


def create_model_step(config: PipelineConfig, model_data: Any, containers: list[dict], session: Any) -> Any:
    from sagemaker.mlops.workflow import ModelStep

    # with use_custom_job_prefix the name is a prefix: SageMaker appends a unique suffix per execution
    step_args = model_builder(config, model_data, session).build(model_name=f"{config.base_job_prefix}-model")
    # ModelBuilder makes a one-container model; the request takes the inference pipeline's containers instead
    # (CreateModel allows PrimaryContainer or Containers, not both)
    request = step_args.create_model_request
    request.pop("PrimaryContainer", None)
    request["Containers"] = containers
    request["InferenceExecutionConfig"] = {"Mode": "Serial"}
    return ModelStep(name=CREATE_MODEL, step_args=step_args, retry_policies=model_step_retries())
