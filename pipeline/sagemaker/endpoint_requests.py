"""The names and requests of a stage's endpoint: CreateModel from the model package, CreateEndpointConfig, the
blue/green DeploymentConfig and the CloudWatch alarms its automatic rollback watches.

Names are decided here, never timestamped: the endpoint is ``<pipeline>-<stage>``; a model and an endpoint config are
``<endpoint>-v<version>-<8 hex digits of the request's SHA-256>`` (the request without its name and tags), so the
same version with the same settings reuses what exists and changed settings (instance type, capture) make new ones.
Tags name the stage, the model package and the pipeline execution that trained it (``MetadataProperties.
GeneratedBy``): ``llpipe endpoints`` and the no-op check read them back from the live endpoint config.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from pipeline.core.deployment import NAME_LIMIT, Version, stage_endpoint_name
from pipeline.core.names import CSV, JSON_TEXT_TYPES
from pipeline.definition.config import PipelineConfig

_SUFFIX_RESERVE = len("-v") + 6 + len("-") + 8  # -v<version of up to 6 digits>-<hash>
VARIANT = "AllTraffic"
TAG_STAGE = "llpipe:stage"
TAG_PACKAGE = "llpipe:model-package-arn"
TAG_VERSION = "llpipe:model-package-version"
TAG_EXECUTION = "llpipe:pipeline-execution-arn"
TAG_SMOKE_TEST = "llpipe:smoke-test"  # "passed: N rows at <time>", added when the version passed on this stage
TRAFFIC_MODES = ("all-at-once", "canary")
# the automatic rollback's alarms (the Developer Guide's deployment-guardrails examples, on the endpoint's variant):
# more than 1% of invocations answered 5xx, or a mean model latency above 250 ms, in 2 of 3 one-minute periods
ERROR_RATE_THRESHOLD = 0.01
LATENCY_THRESHOLD_MICROSECONDS = 250_000


@dataclass(frozen=True)
class Traffic:
    """How an update shifts traffic to the new fleet (blue/green) and how long it bakes before the old one goes."""

    mode: str = "all-at-once"  # or canary: canary_percent of the capacity first, the rest after canary_wait
    canary_percent: int = 10
    canary_wait_seconds: int = 300
    bake_seconds: int = 300  # TerminationWaitInSeconds: the alarms can still roll back during it

    def __post_init__(self) -> None:
        if self.mode not in TRAFFIC_MODES:
            raise ValueError(f"traffic {self.mode!r}: expected one of {', '.join(TRAFFIC_MODES)}")
        if not 1 <= self.canary_percent <= 50:
            raise ValueError(f"canary percent {self.canary_percent}: expected 1 to 50 (of the new fleet's capacity)")
        for name in ("canary_wait_seconds", "bake_seconds"):
            if not 0 <= getattr(self, name) <= 3600:
                raise ValueError(f"{name.replace('_', ' ')} {getattr(self, name)}: expected 0 to 3600")


def endpoint_name(config: PipelineConfig, stage: str) -> str:
    """``<pipeline>-<stage>`` (:func:`pipeline.core.deployment.stage_endpoint_name`, the same name locally)."""
    return stage_endpoint_name(config.pipeline_name, stage)


def versioned_prefix(endpoint: str) -> str:
    """``<endpoint>-v``, what every model and endpoint config of the endpoint is named from (an endpoint name
    longer than 46 characters is cut, leaving room for a version of up to 6 digits and the hash)."""
    return f"{endpoint[: NAME_LIMIT - _SUFFIX_RESERVE].rstrip('-')}-v"


def versioned_name(endpoint: str, version: int, request: dict[str, Any]) -> str:
    """``<endpoint>-v<version>-<hash>``: the request without its name and tags decides the hash."""
    content = {key: value for key, value in request.items() if key not in ("ModelName", "EndpointConfigName", "Tags")}
    digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:8]
    return f"{versioned_prefix(endpoint)}{version}-{digest}"


def version_tags(config: PipelineConfig, stage: str, version: Version) -> list[dict[str, str]]:
    """The configured tags, the stage, the model package (ARN, version) and the execution that trained it."""
    tags = {tag["Key"]: tag["Value"] for tag in config.all_tags}
    tags.update({TAG_STAGE: stage, TAG_PACKAGE: version.package_arn, TAG_VERSION: str(version.version)})
    if version.execution_arn:
        tags[TAG_EXECUTION] = version.execution_arn
    return [{"Key": key, "Value": value} for key, value in sorted(tags.items())]


def endpoint_tags(config: PipelineConfig, stage: str) -> list[dict[str, str]]:
    tags = {tag["Key"]: tag["Value"] for tag in config.all_tags}
    tags[TAG_STAGE] = stage
    return [{"Key": key, "Value": value} for key, value in sorted(tags.items())]


CONTAINER_KEYS = ("Image", "ModelDataUrl", "Environment")  # what CreateModel takes of a package's container


def model_request(config: PipelineConfig, endpoint: str, stage: str, version: Version) -> dict[str, Any]:
    """CreateModel from the model package: an inference pipeline (llpipe's featurizer, Linear Learner, labels) as
    its containers in order (Image, ModelDataUrl, Environment), called one after the other (``Serial``); a
    one-container package as the SDK's ``ModelPackage`` sends it (``Containers: [{"ModelPackageName": arn}]``); the
    pipeline role, network settings."""
    request: dict[str, Any] = {"ExecutionRoleArn": config.role_arn}
    if len(version.containers) > 1:
        request["Containers"] = [
            {key: container[key] for key in CONTAINER_KEYS if key in container} for container in version.containers
        ]
        request["InferenceExecutionConfig"] = {"Mode": "Serial"}
    else:
        request["Containers"] = [{"ModelPackageName": version.package_arn}]
    if config.subnets:
        request["VpcConfig"] = {"SecurityGroupIds": list(config.security_group_ids), "Subnets": list(config.subnets)}
    if config.enable_network_isolation:
        request["EnableNetworkIsolation"] = True
    name = versioned_name(endpoint, version.version, request)
    return {"ModelName": name, **request, "Tags": version_tags(config, stage, version)}


def endpoint_config_request(
    config: PipelineConfig, endpoint: str, stage: str, version: Version, model_name: str
) -> dict[str, Any]:
    """One variant of the stage's instances, data capture of requests and answers into the pipeline's prefix."""
    instance_type = config.staging_instance_type if stage == "staging" else config.prod_instance_type
    count = config.staging_instance_count if stage == "staging" else config.prod_instance_count
    request: dict[str, Any] = {
        "ProductionVariants": [
            {
                "VariantName": VARIANT,
                "ModelName": model_name,
                "InitialInstanceCount": count,
                "InstanceType": instance_type,
                "InitialVariantWeight": 1.0,
            }
        ]
    }
    if config.data_capture_percentage:
        capture: dict[str, Any] = {
            "EnableCapture": True,
            "InitialSamplingPercentage": config.data_capture_percentage,
            "DestinationS3Uri": f"{config.pipeline_prefix}/datacapture",
            "CaptureOptions": [{"CaptureMode": "Input"}, {"CaptureMode": "Output"}],
            # captured as text (not base64) for these types, so llpipe monitor and Model Monitor read the rows
            "CaptureContentTypeHeader": {"CsvContentTypes": [CSV], "JsonContentTypes": list(JSON_TEXT_TYPES)},
        }
        if config.kms_key_id:
            capture["KmsKeyId"] = config.kms_key_id
        request["DataCaptureConfig"] = capture
    if config.kms_key_id:
        request["KmsKeyId"] = config.kms_key_id  # the instances' storage volumes
    name = versioned_name(endpoint, version.version, request)
    return {"EndpointConfigName": name, **request, "Tags": version_tags(config, stage, version)}


def alarm_names(endpoint: str) -> list[str]:
    return [f"{endpoint}-5xx-errors", f"{endpoint}-model-latency"]


def alarm_requests(config: PipelineConfig, endpoint: str) -> list[dict[str, Any]]:
    """PutMetricAlarm: the endpoint's 5xx error rate and model latency (the rollback alarms)."""
    errors, latency = alarm_names(endpoint)
    common: dict[str, Any] = {
        "Namespace": "AWS/SageMaker",
        "Dimensions": [{"Name": "EndpointName", "Value": endpoint}, {"Name": "VariantName", "Value": VARIANT}],
        "Statistic": "Average",
        "Period": 60,
        "EvaluationPeriods": 3,
        "DatapointsToAlarm": 2,
        "ComparisonOperator": "GreaterThanThreshold",
        "TreatMissingData": "notBreaching",  # no traffic is no error
    }
    if config.all_tags:
        common["Tags"] = config.all_tags
    return [
        {
            "AlarmName": errors,
            "AlarmDescription": f"llpipe deploy: more than 1% of {endpoint}'s invocations fail with 5xx (rolls back)",
            "MetricName": "Invocation5XXErrors",
            "Threshold": ERROR_RATE_THRESHOLD,
            **common,
        },
        {
            "AlarmName": latency,
            "AlarmDescription": f"llpipe deploy: {endpoint}'s mean model latency above 250 ms (rolls back)",
            "MetricName": "ModelLatency",
            "Threshold": float(LATENCY_THRESHOLD_MICROSECONDS),
            **common,
        },
    ]


def deployment_config(traffic: Traffic, alarms: list[str]) -> dict[str, Any]:
    """UpdateEndpoint's blue/green policy, rolled back automatically when an alarm fires."""
    routing: dict[str, Any] = {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 0}
    if traffic.mode == "canary":
        routing = {
            "Type": "CANARY",
            "WaitIntervalInSeconds": traffic.canary_wait_seconds,
            "CanarySize": {"Type": "CAPACITY_PERCENT", "Value": traffic.canary_percent},
        }
    return {
        "BlueGreenUpdatePolicy": {
            "TrafficRoutingConfiguration": routing,
            "TerminationWaitInSeconds": traffic.bake_seconds,
        },
        "AutoRollbackConfiguration": {"Alarms": [{"AlarmName": name} for name in alarms]},
    }


def restore_config() -> dict[str, Any]:
    """Back to the previous version at once, with no alarms: an alarm would roll the restore back."""
    return {
        "BlueGreenUpdatePolicy": {
            "TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 0},
            "TerminationWaitInSeconds": 0,
        }
    }
