"""The Transform step: batch transform of Preprocess's test split with the created model (jsonlines out)."""

from __future__ import annotations

from typing import Any

from pipeline.core.names import JSONLINES, RECORDIO, TRANSFORM
from pipeline.definition.config import PipelineConfig
from pipeline.definition.declared import Parameters
from pipeline.definition.steps.common import execution_uri, job_step_options
from pipeline.definition.steps.preprocess import preprocess_output


def transform_step(config: PipelineConfig, params: Parameters, preprocess: Any, create_model: Any, session: Any):
    from sagemaker.core.transformer import Transformer
    from sagemaker.mlops.workflow import TransformStep

    transformer = Transformer(
        model_name=create_model.properties.ModelName,
        instance_count=1,
        instance_type=params.transform_instance_type,
        strategy="MultiRecord",
        max_payload=6,
        assemble_with="Line",
        accept=JSONLINES,
        output_path=execution_uri(config, "transform"),
        output_kms_key=config.kms_key_id,
        volume_kms_key=config.kms_key_id,
        base_transform_job_name=f"{config.base_job_prefix}-transform",
        tags=config.all_tags or None,
        sagemaker_session=session,
    )
    step_args = transformer.transform(
        data=preprocess_output(preprocess, "test"),
        data_type="S3Prefix",
        content_type=RECORDIO,
        split_type="RecordIO",
        wait=False,
        logs=False,
    )
    return TransformStep(name=TRANSFORM, step_args=step_args, **job_step_options())
