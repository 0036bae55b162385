"""The DataQuality step: SDK v3 ``QualityCheckStep`` with a data-quality check (Model Monitor's analyzer).

It describes the raw feature columns Preprocess sampled into its ``baseline`` output (what a served request carries,
in the schema's order: no label, no id, values as they were in the input) and checks them against the latest
approved model package's ``DriftCheckBaselines`` (or the supplied files). A violation fails the execution, and
Train waits for the check: a broken feed is never trained on. Its statistics and constraints are registered with the
model package (``register.py``).
"""

from __future__ import annotations

from typing import Any

from pipeline.core.names import DATA_QUALITY
from pipeline.definition.config import PipelineConfig
from pipeline.definition.declared import Parameters
from pipeline.definition.steps.common import PROCESSING_MAX_RUNTIME_SECONDS, execution_uri, network_config
from pipeline.definition.steps.preprocess import preprocess_output


def data_quality_step(config: PipelineConfig, params: Parameters, preprocess: Any, session: Any) -> Any:
    from sagemaker.core.model_monitor import DatasetFormat
    from sagemaker.mlops.workflow import CheckJobConfig, QualityCheckStep
    from sagemaker.mlops.workflow.quality_check_step import DataQualityCheckConfig

    check_job = CheckJobConfig(
        role=config.role_arn,
        instance_count=1,
        instance_type=params.processing_instance_type,
        volume_size_in_gb=params.processing_volume_size_in_gb,  # its input, the baseline sample, is Preprocess's
        volume_kms_key=config.kms_key_id,
        output_kms_key=config.kms_key_id,
        max_runtime_in_seconds=PROCESSING_MAX_RUNTIME_SECONDS,
        base_job_name=f"{config.base_job_prefix}-data-quality",
        sagemaker_session=session,
        tags=config.all_tags or None,
        # its request dict, not the object: the SDK (sagemaker-mlops 1.27) puts this value into the step's
        # arguments as it is, and an object is not JSON
        network_config=network_config(config)._to_request_dict(),
    )
    check = DataQualityCheckConfig(
        baseline_dataset=preprocess_output(preprocess, "baseline"),
        dataset_format=DatasetFormat.csv(header=True),
        output_s3_uri=execution_uri(config, "dataquality"),
    )
    return QualityCheckStep(
        name=DATA_QUALITY,
        quality_check_config=check,
        check_job_config=check_job,
        skip_check=params.skip_data_quality_check,
        register_new_baseline=params.register_new_data_quality_baseline,
        fail_on_violation=True,
        model_package_group_name=config.model_package_group,
        supplied_baseline_statistics=params.data_quality_supplied_statistics,
        supplied_baseline_constraints=params.data_quality_supplied_constraints,
    )
