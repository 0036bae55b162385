"""What the job steps share: caching and retries, images, the processor, processing inputs and outputs, and
where an execution writes (``s3://<bucket>/<pipeline-name>/<ExecutionId>/...``).
"""

from __future__ import annotations

import functools
from typing import Any

from pipeline.core.images import DEFAULT_PROCESSING_IMAGE, LINEAR_LEARNER
from pipeline.definition.config import PipelineConfig

CODE_DIR = "/opt/ml/processing/input/code"
CACHE_EXPIRY = "P30D"  # ISO 8601: reuse a successful step with identical inputs for 30 days
PROCESSING_MAX_RUNTIME_SECONDS = 12 * 3600


def execution_uri(config: PipelineConfig, *parts: str) -> Any:
    """``s3://<bucket>/<pipeline-name>/<ExecutionId>/<parts...>``: no execution overwrites another's outputs."""
    from sagemaker.core.workflow.execution_variables import ExecutionVariables
    from sagemaker.core.workflow.functions import Join

    return Join(on="/", values=[config.pipeline_prefix, ExecutionVariables.PIPELINE_EXECUTION_ID, *parts])


def job_step_options(cache: bool = True) -> dict[str, Any]:
    """Caching and retries shared by every job step: capacity and throttling errors are retried with backoff.

    ``cache=False`` for a step whose result depends on something outside its request (the registry's champion).
    """
    from sagemaker.mlops.workflow import CacheConfig
    from sagemaker.mlops.workflow.retry import (
        SageMakerJobExceptionTypeEnum,
        SageMakerJobStepRetryPolicy,
        StepExceptionTypeEnum,
        StepRetryPolicy,
    )

    return {
        "cache_config": CacheConfig(enable_caching=True, expire_after=CACHE_EXPIRY) if cache else None,
        "retry_policies": [
            StepRetryPolicy(
                exception_types=[StepExceptionTypeEnum.SERVICE_FAULT, StepExceptionTypeEnum.THROTTLING],
                interval_seconds=10,
                backoff_rate=2.0,
                max_attempts=5,
            ),
            SageMakerJobStepRetryPolicy(
                exception_types=[
                    SageMakerJobExceptionTypeEnum.CAPACITY_ERROR,
                    SageMakerJobExceptionTypeEnum.RESOURCE_LIMIT,
                    SageMakerJobExceptionTypeEnum.INTERNAL_ERROR,
                ],
                interval_seconds=60,
                backoff_rate=2.0,
                max_attempts=3,
            ),
        ],
    }


def model_step_retries() -> list[Any]:
    """Model steps accept only service-level retries (SageMakerJobStepRetryPolicy is rejected there)."""
    from sagemaker.mlops.workflow.retry import StepExceptionTypeEnum, StepRetryPolicy

    return [
        StepRetryPolicy(
            exception_types=[StepExceptionTypeEnum.SERVICE_FAULT, StepExceptionTypeEnum.THROTTLING],
            interval_seconds=10,
            backoff_rate=2.0,
            max_attempts=5,
        )
    ]


def sklearn_image(config: PipelineConfig) -> str:
    return image_uri(DEFAULT_PROCESSING_IMAGE.framework, config.region, config.sklearn_image_version)


def linear_learner_image(config: PipelineConfig) -> str:
    return image_uri(LINEAR_LEARNER, config.region, config.linear_learner_image_version)


@functools.lru_cache(maxsize=16)
def image_uri(framework: str, region: str, version: str) -> str:
    """The ECR image URI (the SDK reads its bundled tables: a pure function, cached as it takes ~0.2 s a call)."""
    from sagemaker.core import image_uris

    return image_uris.retrieve(framework, region, version=version)


def network_config(config: PipelineConfig, isolation: bool = True) -> Any:
    """Processing jobs get the same VPC, isolation and encryption settings as training; ``isolation=False`` for a job
    that calls AWS APIs (Evaluate reads the registry: an isolated container cannot reach any API)."""
    from sagemaker.core.network import NetworkConfig

    return NetworkConfig(
        enable_network_isolation=config.enable_network_isolation and isolation,
        encrypt_inter_container_traffic=config.encrypt_inter_container_traffic,
        subnets=list(config.subnets) or None,
        security_group_ids=list(config.security_group_ids) or None,
    )


def sklearn_processor(
    config: PipelineConfig,
    entry_point: str,
    name: str,
    count: Any,
    instance_type: Any,
    session: Any,
    volume_size_in_gb: Any,
    isolation: bool = True,
):
    """A plain Processor running ``python3 <code dir>/<entry point>`` on the scikit-learn image, each instance with a
    storage volume of ``volume_size_in_gb`` (a parameter: the sizes follow the data)."""
    from sagemaker.core.processing import Processor

    return Processor(
        role=config.role_arn,
        image_uri=sklearn_image(config),
        entrypoint=["python3", f"{CODE_DIR}/{entry_point}"],
        instance_count=count,
        instance_type=instance_type,
        volume_size_in_gb=volume_size_in_gb,
        volume_kms_key=config.kms_key_id,
        output_kms_key=config.kms_key_id,
        max_runtime_in_seconds=PROCESSING_MAX_RUNTIME_SECONDS,
        base_job_name=f"{config.base_job_prefix}-{name}",
        sagemaker_session=session,
        env={"PYTHONUNBUFFERED": "1"},
        tags=config.all_tags or None,
        network_config=network_config(config, isolation),
    )


def s3_input(name: str, s3_uri: Any, local_path: str, distribution: str = "FullyReplicated") -> Any:
    from sagemaker.core.shapes import ProcessingInput, ProcessingS3Input

    return ProcessingInput(
        input_name=name,
        s3_input=ProcessingS3Input(
            s3_uri=s3_uri,
            local_path=local_path,
            s3_data_type="S3Prefix",
            s3_input_mode="File",
            s3_data_distribution_type=distribution,
        ),
    )


def s3_output(name: str, local_path: str, s3_uri: Any) -> Any:
    from sagemaker.core.shapes import ProcessingOutput, ProcessingS3Output

    return ProcessingOutput(
        output_name=name,
        s3_output=ProcessingS3Output(s3_uri=s3_uri, local_path=local_path, s3_upload_mode="EndOfJob"),
    )
