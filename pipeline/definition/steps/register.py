"""The Register step: a model package version in the group, with the report, the data-quality baselines and the
champion comparison."""

from __future__ import annotations

from typing import Any

from pipeline.core.names import DECISION, JSON, REGISTER, REPORT_NAME, REQUEST_TYPES, RESPONSE_TYPES
from pipeline.definition.config import PipelineConfig
from pipeline.definition.declared import Parameters
from pipeline.definition.steps.common import model_step_retries
from pipeline.definition.steps.create_model import model_builder

INFERENCE_INSTANCE_TYPES = ["ml.m5.large", "ml.m5.xlarge", "ml.c5.large", "ml.c5.xlarge"]
INFERENCE_CONTENT_TYPES = list(REQUEST_TYPES)  # raw rows (the featurizer), encoded rows (pass-through)
INFERENCE_RESPONSE_TYPES = list(RESPONSE_TYPES)  # the labels container answers in these


def register_step(
    config: PipelineConfig,
    params: Parameters,
    model_data: Any,
    containers: list[dict],
    evaluate: Any,
    report: Any,
    data_quality: Any,
    session: Any,
) -> Any:
    from sagemaker.core.drift_check_baselines import DriftCheckBaselines
    from sagemaker.core.model_metrics import MetricsSource, ModelMetrics
    from sagemaker.core.workflow.functions import Join, JsonGet
    from sagemaker.mlops.workflow import ModelStep

    def decision(field: str) -> Any:
        # Join makes every value a string, as CustomerMetadataProperties requires
        value = JsonGet(step_name=evaluate.name, property_file=report, json_path=f"{DECISION}.{field}")
        return Join(on="", values=[value])

    report_uri = Join(
        on="/",
        values=[evaluate.properties.ProcessingOutputConfig.Outputs["evaluation"].S3Output.S3Uri, REPORT_NAME],
    )
    step_args = model_builder(config, model_data, session).register(
        model_package_group_name=config.model_package_group,
        content_types=INFERENCE_CONTENT_TYPES,
        response_types=INFERENCE_RESPONSE_TYPES,
        inference_instances=INFERENCE_INSTANCE_TYPES,
        transform_instances=INFERENCE_INSTANCE_TYPES,
        # this run's data-quality baseline, and the one later runs and the endpoint's monitor check against (the
        # approved version's unless RegisterNewDataQualityBaseline): AWS's drift-detection sample's wiring
        model_metrics=ModelMetrics(
            model_statistics=MetricsSource(s3_uri=report_uri, content_type=JSON),
            model_data_statistics=_source(data_quality.properties.CalculatedBaselineStatistics),
            model_data_constraints=_source(data_quality.properties.CalculatedBaselineConstraints),
        ),
        drift_check_baselines=DriftCheckBaselines(
            model_data_statistics=_source(data_quality.properties.BaselineUsedForDriftCheckStatistics),
            model_data_constraints=_source(data_quality.properties.BaselineUsedForDriftCheckConstraints),
        ),
        approval_status=params.model_approval_status,
        # the champion this version was compared with on the same test split, and why it was promoted
        customer_metadata_properties={
            "ChampionModelPackageArn": decision("champion_model_package_arn"),
            "ChampionValue": decision("champion_value"),
            "ChallengerValue": decision("challenger_value"),
            "GateMetric": decision("metric"),
            "ChampionTolerance": decision("champion_tolerance"),
            "BaselineValue": decision("baseline_value"),  # Evaluate's scikit-learn baseline, same test split
        },
    )
    # the version holds the inference pipeline's three containers (steps/serving.py), as CreateModel does
    step_args.create_model_package_request["InferenceSpecification"]["Containers"] = containers
    return ModelStep(name=REGISTER, step_args=step_args, retry_policies=model_step_retries())


def _source(uri: Any) -> Any:
    from sagemaker.core.model_metrics import MetricsSource

    return MetricsSource(s3_uri=uri, content_type=JSON)
