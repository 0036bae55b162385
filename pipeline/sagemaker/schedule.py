"""Schedule executions with EventBridge Scheduler: one schedule named after the pipeline.

The schedule calls StartPipelineExecution as a universal target whose DataVersion is the scheduled time
(``put_triggers`` of the SDK uses the templated SageMaker target, which cannot carry the scheduled time).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from pipeline.core.data_version import PARAMETER as DATA_VERSION
from pipeline.core.data_version import SCHEDULED_TIME
from pipeline.core.errors import ParameterError, UsageError
from pipeline.definition.config import PipelineConfig
from pipeline.definition.parameters import check_overrides
from pipeline.sagemaker import aws
from pipeline.sagemaker.start import deployed_parameters, sized_from_listing

START_PIPELINE_EXECUTION_TARGET = "arn:aws:scheduler:::aws-sdk:sagemaker:startPipelineExecution"  # universal target
SCHEDULE_ARN = "<aws.scheduler.schedule-arn>"  # a context attribute EventBridge Scheduler fills in, like the time


def schedule_expression(cron: str | None = None, rate: str | None = None) -> str:
    """``cron(...)`` or ``rate(...)`` from a bare expression or one already wrapped."""
    if (cron is None) == (rate is None):
        raise UsageError("give exactly one of a cron or a rate expression")
    kind, expression = ("cron", cron) if cron is not None else ("rate", rate)
    expression = expression.strip()
    if expression.startswith(f"{kind}(") and expression.endswith(")"):
        expression = expression[len(kind) + 1 : -1].strip()
    if not expression:
        raise UsageError(f"empty {kind} expression")
    if kind == "cron" and len(expression.split()) != 6:
        raise UsageError(f"cron({expression}): EventBridge cron needs 6 fields: minutes hours day month weekday year")
    if kind == "rate" and not _valid_rate(expression):
        raise UsageError(f"rate({expression}): expected e.g. '1 day', '12 hours' or '30 minutes'")
    return f"{kind}({expression})"


def _valid_rate(expression: str) -> bool:
    parts = expression.split()
    if len(parts) != 2 or not parts[0].isdigit() or int(parts[0]) < 1:
        return False
    unit = parts[1]
    singular = int(parts[0]) == 1
    return unit in (("minute", "hour", "day") if singular else ("minutes", "hours", "days"))


def schedule_request(
    config: PipelineConfig,
    expression: str,
    parameters: Mapping[str, str] | None = None,
    role_arn: str | None = None,
    now: datetime | None = None,
    enabled: bool = True,
) -> dict[str, Any]:
    """The CreateSchedule/UpdateSchedule request: a universal target calling StartPipelineExecution.

    The Input is that call's request (the API's PascalCase names); EventBridge Scheduler replaces its context
    attributes on every invocation, so DataVersion is the scheduled time (each execution is a new cache key for
    Preprocess and everything after it) and the idempotency token is one per pipeline and scheduled time (a retried
    invocation cannot start a second execution). ``parameters`` are fixed overrides, checked by the caller.
    """
    if DATA_VERSION in (parameters or {}):
        raise ParameterError(
            f"{DATA_VERSION} of a scheduled execution is its scheduled time; a fixed value would let every execution "
            "after the first reuse the first one's cached results"
        )
    pipeline_id = hashlib.sha256(config.pipeline_name.encode()).hexdigest()[:16]
    invocation = {
        "PipelineName": config.pipeline_name,
        "PipelineParameters": [
            *({"Name": name, "Value": str(value)} for name, value in (parameters or {}).items()),
            {"Name": DATA_VERSION, "Value": SCHEDULED_TIME},
        ],
        "PipelineExecutionDescription": f"Scheduled for {SCHEDULED_TIME} by {SCHEDULE_ARN}",
        "ClientRequestToken": f"llpipe-{pipeline_id}-{SCHEDULED_TIME}",
    }
    if config.mlflow_arn:  # each scheduled execution a run of the pipeline's experiment, as a started one
        invocation["MlflowExperimentName"] = config.experiment_name
    return {
        "Name": config.pipeline_name,
        "ScheduleExpression": expression,
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "Target": {
            "Arn": START_PIPELINE_EXECUTION_TARGET,
            "RoleArn": role_arn or config.role_arn,
            "Input": json.dumps(invocation),
        },
        "State": "ENABLED" if enabled else "DISABLED",
        "StartDate": now or datetime.now(timezone.utc),
    }


def put_schedule(
    config: PipelineConfig,
    expression: str,
    parameters: Mapping[str, str] | None = None,
    role_arn: str | None = None,
    session: Any = None,
    now: datetime | None = None,
    enabled: bool = True,
    declared: Mapping[str, dict[str, Any]] | None = None,
) -> str:
    """Create or update the EventBridge Scheduler schedule named after the pipeline (see :func:`schedule_request`).

    The overrides are checked against the deployed definition first (``declared``: its parameters, when already read
    with DescribePipeline), which must declare DataVersion (else every scheduled execution would fail on an unknown
    parameter): an older deployment needs ``llpipe upsert`` first.
    """
    session = session or aws.session(config)
    declared = declared or deployed_parameters(config, session)
    check_overrides(list(declared.values()), parameters or {})
    if DATA_VERSION not in declared:
        raise ParameterError(
            f"the deployed pipeline {config.pipeline_name} declares no {DATA_VERSION} parameter, which scheduled "
            "executions set to their scheduled time: deploy the current definition with llpipe upsert first"
        )
    request = schedule_request(config, expression, parameters, role_arn=role_arn, now=now, enabled=enabled)
    scheduler = session.client("scheduler")
    from botocore.exceptions import ClientError

    with aws.call(f"schedule {config.pipeline_name}"):
        try:
            return scheduler.update_schedule(**request)["ScheduleArn"]
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                raise
        return scheduler.create_schedule(**request)["ScheduleArn"]


def sized_for_schedule(
    config: PipelineConfig, declared: Mapping[str, dict[str, Any]], given: Mapping[str, str], session: Any
) -> dict[str, str]:
    """The counts and volumes the input under InputDataUrl needs now (ListObjectsV2), as fixed parameters of every
    scheduled execution: a snapshot, sized again by the next ``llpipe schedule``. A given volume too small for the data
    raises ``ParameterError``."""
    from pipeline.core.data_version import s3_listing

    url = given.get("InputDataUrl") or str(declared.get("InputDataUrl", {}).get("DefaultValue", ""))
    with aws.call(f"ListObjectsV2 {url} (to size the jobs)"):
        listing = s3_listing(session.client("s3"), url)
    return sized_from_listing(declared, given, listing)


def delete_schedule(config: PipelineConfig, session: Any = None) -> bool:
    """Delete the pipeline's schedule; False when there was none."""
    from botocore.exceptions import ClientError

    scheduler = (session or aws.session(config)).client("scheduler")
    with aws.call(f"DeleteSchedule {config.pipeline_name}"):
        try:
            scheduler.delete_schedule(Name=config.pipeline_name)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                return False
            raise
    return True
