"""The data-quality monitoring schedule of a deployed endpoint, checking its captured traffic against the registered
baseline of the model package it serves.

DescribeModelPackage gives the baseline (``DriftCheckBaselines.ModelDataQuality``: the version's own, or the one it
carried forward), DescribeEndpoint confirms the endpoint captures data; then CreateDataQualityJobDefinition (Model
Monitor's analyzer on the endpoint's captured input, the baseline, the pipeline role, and the configuration's
instance, network and encryption settings) named after the endpoint and the version, unless it exists, and
CreateMonitoringSchedule, or UpdateMonitoringSchedule when the endpoint's schedule exists (it then checks against
the new version's baseline). The requests are those the SDK's ``DefaultModelMonitor.create_monitoring_schedule``
sends, with names chosen here rather than timestamped, so a repeated call changes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.errors import AwsError, UsageError
from pipeline.definition.config import PipelineConfig
from pipeline.sagemaker import aws
from pipeline.sagemaker.packages import package_arn

HOURLY = "cron(0 * ? * * *)"
ENDPOINT_INPUT = "/opt/ml/processing/input/endpoint"
OUTPUT = "/opt/ml/processing/output"
INSTANCE_TYPE = "ml.m5.xlarge"
VOLUME_GB = 20
MAX_RUNTIME_SECONDS = 1800  # an hourly job must end within the hour (Model Monitor's limit for hourly schedules)


@dataclass(frozen=True)
class MonitoringSchedule:
    """What ``schedule_data_quality`` created or updated."""

    schedule_name: str
    schedule_arn: str
    job_definition_name: str
    job_definition_arn: str
    model_package_arn: str
    statistics: str
    constraints: str
    created: bool  # False: an existing schedule now runs this job definition
    cron: str


def analyzer_image(region: str) -> str:
    """Model Monitor's analyzer image in ``region``, from the SDK's bundled table (no SDK import: it is slow)."""
    import importlib.util

    spec = importlib.util.find_spec("sagemaker.core")
    folder = Path(next(iter(spec.submodule_search_locations or []))) if spec else None
    if folder is None:
        raise UsageError("the SageMaker SDK (sagemaker-core) is not installed: it holds the analyzer image table")
    entry = json.loads((folder / "image_uri_config" / "model-monitor.json").read_text())["versions"][""]
    account = entry["registries"].get(region)
    if account is None:
        raise UsageError(f"Model Monitor's analyzer image is not offered in region {region}")
    domain = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"{account}.dkr.ecr.{region}.{domain}/{entry['repository']}"


def schedule_name(endpoint: str) -> str:
    return f"{endpoint}-data-quality"[:63].rstrip("-")


def job_definition_name(endpoint: str, version: Any) -> str:
    """``<endpoint>-dq-v<version>``, cut to 63 characters from the endpoint's side (the version stays)."""
    suffix = f"-dq-v{version}"
    return f"{endpoint[: 63 - len(suffix)].rstrip('-')}{suffix}"


def _described(sagemaker: Any, describe: str, what: str, **name: str) -> dict[str, Any] | None:
    """A Describe* answer, or None when the resource does not exist (any other error is raised)."""
    from botocore.exceptions import ClientError

    with aws.call(f"{describe} {what}"):
        try:
            return getattr(sagemaker, describe)(**name)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("ResourceNotFound", "ResourceNotFoundException"):
                return None
            raise


def schedule_data_quality(
    config: PipelineConfig, endpoint: str, model_package: str | None = None, cron: str = HOURLY, session: Any = None
) -> MonitoringSchedule:
    """Create (or re-point) ``endpoint``'s hourly data-quality monitoring schedule at ``model_package``'s baseline."""
    sagemaker = (session or aws.session(config)).client("sagemaker")
    arn = package_arn(sagemaker, config.model_package_group, model_package)
    with aws.call(f"DescribeModelPackage {arn}"):
        package = sagemaker.describe_model_package(ModelPackageName=arn)
    baseline = ((package.get("DriftCheckBaselines") or {}).get("ModelDataQuality")) or {}
    statistics = (baseline.get("Statistics") or {}).get("S3Uri")
    constraints = (baseline.get("Constraints") or {}).get("S3Uri")
    if not (statistics and constraints):
        raise AwsError(f"model package {arn} carries no DriftCheckBaselines.ModelDataQuality to monitor against")
    with aws.call(f"DescribeEndpoint {endpoint}"):
        described = sagemaker.describe_endpoint(EndpointName=endpoint)
    if not (described.get("DataCaptureConfig") or {}).get("EnableCapture"):
        raise AwsError(
            f"endpoint {endpoint} does not capture its traffic: give its endpoint config a DataCaptureConfig "
            "(EnableCapture, CaptureOptions Input) so there is data to monitor"
        )
    definition = job_definition_name(endpoint, package.get("ModelPackageVersion", "0"))
    existing = _described(sagemaker, "describe_data_quality_job_definition", definition, JobDefinitionName=definition)
    if existing is None:
        with aws.call(f"CreateDataQualityJobDefinition {definition}"):
            existing = sagemaker.create_data_quality_job_definition(
                **job_definition_request(config, definition, endpoint, statistics, constraints)
            )
    name = schedule_name(endpoint)
    schedule_config = {
        "ScheduleConfig": {"ScheduleExpression": cron},
        "MonitoringJobDefinitionName": definition,
        "MonitoringType": "DataQuality",
    }
    new = _described(sagemaker, "describe_monitoring_schedule", name, MonitoringScheduleName=name) is None
    if new:
        with aws.call(f"CreateMonitoringSchedule {name}"):
            answer = sagemaker.create_monitoring_schedule(
                MonitoringScheduleName=name, MonitoringScheduleConfig=schedule_config, Tags=config.all_tags
            )
    else:
        with aws.call(f"UpdateMonitoringSchedule {name}"):
            answer = sagemaker.update_monitoring_schedule(
                MonitoringScheduleName=name, MonitoringScheduleConfig=schedule_config
            )
    return MonitoringSchedule(
        name, answer["MonitoringScheduleArn"], definition, existing["JobDefinitionArn"], arn, statistics,
        constraints, new, cron,
    )  # fmt: skip


def job_definition_request(
    config: PipelineConfig, name: str, endpoint: str, statistics: str, constraints: str
) -> dict[str, Any]:
    """CreateDataQualityJobDefinition: the analyzer on the endpoint's captured input against the baseline."""
    cluster: dict[str, Any] = {"InstanceCount": 1, "InstanceType": INSTANCE_TYPE, "VolumeSizeInGB": VOLUME_GB}
    output: dict[str, Any] = {
        "MonitoringOutputs": [
            {
                "S3Output": {
                    "S3Uri": f"{config.pipeline_prefix}/monitoring/{endpoint}",
                    "LocalPath": OUTPUT,
                    "S3UploadMode": "Continuous",
                }
            }
        ]
    }
    if config.kms_key_id:
        cluster["VolumeKmsKeyId"] = config.kms_key_id
        output["KmsKeyId"] = config.kms_key_id
    request: dict[str, Any] = {
        "JobDefinitionName": name,
        "DataQualityBaselineConfig": {
            "ConstraintsResource": {"S3Uri": constraints},
            "StatisticsResource": {"S3Uri": statistics},
        },
        "DataQualityAppSpecification": {
            "ImageUri": analyzer_image(config.region),
            "Environment": {"publish_cloudwatch_metrics": "Enabled"},
        },
        "DataQualityJobInput": {
            "EndpointInput": {
                "EndpointName": endpoint,
                "LocalPath": ENDPOINT_INPUT,
                "S3InputMode": "File",
                "S3DataDistributionType": "FullyReplicated",
            }
        },
        "DataQualityJobOutputConfig": output,
        "JobResources": {"ClusterConfig": cluster},
        "RoleArn": config.role_arn,
        "StoppingCondition": {"MaxRuntimeInSeconds": MAX_RUNTIME_SECONDS},
    }
    network: dict[str, Any] = {
        "EnableInterContainerTrafficEncryption": config.encrypt_inter_container_traffic,
        "EnableNetworkIsolation": config.enable_network_isolation,
    }
    if config.subnets or config.security_group_ids:
        network["VpcConfig"] = {"SecurityGroupIds": list(config.security_group_ids), "Subnets": list(config.subnets)}
    request["NetworkConfig"] = network
    if config.all_tags:
        request["Tags"] = config.all_tags
    return request
