"""Alert an SNS topic when an execution fails: an EventBridge rule on the pipeline's status changes."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pipeline.core.errors import AwsError
from pipeline.definition.config import PipelineConfig
from pipeline.sagemaker import aws

EXECUTION_STATUS_CHANGE = "SageMaker Model Building Pipeline Execution Status Change"
ALERT_TARGET_ID = "llpipe-failure-topic"
_RULE_NAME_LIMIT = 64


def alert_rule_name(config: PipelineConfig) -> str:
    """``<pipeline>-failed``; names past EventBridge's 64 characters are cut and suffixed with a hash."""
    name = f"{config.pipeline_name}-failed"
    if len(name) <= _RULE_NAME_LIMIT:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: _RULE_NAME_LIMIT - 16]}-{digest}-failed"


def failure_event_pattern(pipeline_arn: str) -> dict[str, Any]:
    """EventBridge pattern: this pipeline's executions changing to Failed."""
    return {
        "source": ["aws.sagemaker"],
        "detail-type": [EXECUTION_STATUS_CHANGE],
        "detail": {"pipelineArn": [pipeline_arn], "currentPipelineExecutionStatus": ["Failed"]},
    }


def put_failure_alert(config: PipelineConfig, topic_arn: str, session: Any = None) -> str:
    """PutRule on the pipeline's failed executions and PutTargets to the SNS topic (a readable message)."""
    session = session or aws.session(config)
    with aws.call(f"DescribePipeline {config.pipeline_name}"):
        pipeline_arn = session.client("sagemaker").describe_pipeline(PipelineName=config.pipeline_name)["PipelineArn"]
    events = session.client("events")
    name = alert_rule_name(config)
    rule: dict[str, Any] = {
        "Name": name,
        "EventPattern": json.dumps(failure_event_pattern(pipeline_arn)),
        "State": "ENABLED",
        "Description": f"Failed executions of SageMaker pipeline {config.pipeline_name} to SNS (llpipe alerts)",
    }
    if config.all_tags:
        rule["Tags"] = config.all_tags
    target = {
        "Id": ALERT_TARGET_ID,
        "Arn": topic_arn,
        "InputTransformer": {
            "InputPathsMap": {"execution": "$.detail.pipelineExecutionArn", "time": "$.time"},
            "InputTemplate": (
                f'"SageMaker pipeline {config.pipeline_name}: execution <execution> failed at <time>. '
                'Inspect it with: llpipe execution show <execution> --sagemaker --logs"'
            ),
        },
    }
    with aws.call(f"PutRule {name}"):
        rule_arn = events.put_rule(**rule)["RuleArn"]
    with aws.call(f"PutTargets {name}"):
        response = events.put_targets(Rule=name, Targets=[target])
    if response.get("FailedEntryCount"):
        failed = response["FailedEntries"][0]
        raise AwsError(f"PutTargets {name}: {failed.get('ErrorCode')}: {failed.get('ErrorMessage')}")
    return rule_arn


def delete_failure_alert(config: PipelineConfig, session: Any = None) -> bool:
    """RemoveTargets then DeleteRule; False when there was no rule."""
    from botocore.exceptions import ClientError

    events = (session or aws.session(config)).client("events")
    name = alert_rule_name(config)
    with aws.call(f"deleting rule {name}"):
        try:
            events.remove_targets(Rule=name, Ids=[ALERT_TARGET_ID])
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                return False
            raise
        events.delete_rule(Name=name)
    return True
