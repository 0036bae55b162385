"""The Transform step: batch transform of Preprocess's test split with the created model (jsonlines out)."""

from __future__ import annotations

from typing import Any

from pipeline.core.names import JSONLINES, RECORDIO, TRANSFORM
from pipeline.definition.config import PipelineConfig
from pipeline.definition.declared import Parameters
from pipeline.definition.steps.common import execution_uri, job_step_options
from pipeline.definition.steps.preprocess import preprocess_output


def sized_transformer() -> type:
    """The SDK's Transformer with an InstanceCount that may be a parameter: its ``TransformResources`` shape types
    the count as a plain int, so the request's resources are built unvalidated (botocore's model takes the value)."""
    from sagemaker.core.shapes import TransformResources
    from sagemaker.core.transformer import Transformer

    class SizedTransformer(Transformer):
        def _get_transform_request(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
            resources = dict(kwargs.pop("resource_config"))
            placeholder = {**resources, "instance_count": 1}
            request = super()._get_transform_request(*args, resource_config=placeholder, **kwargs)
            request["TransformResources"] = TransformResources.model_construct(**resources)
            return request

    return SizedTransformer


def transform_step(config: PipelineConfig, params: Parameters, preprocess: Any, create_model: Any, session: Any):
    from sagemaker.mlops.workflow import TransformStep

    transformer = sized_transformer()(
        model_name=create_model.properties.ModelName,
        instance_count=params.transform_instance_count,
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
