"""The calls to AWS: upsert the pipeline, start and watch executions, schedule them, list them.

Each function takes a boto3 ``Session`` (default: one for the configured region) and sends the same requests the
SageMaker SDK v3 sends for ``Pipeline.upsert`` / ``start`` / ``delete_triggers``, with boto3 directly so that each
request is explicit and the SDK is not imported for them. Two differ on purpose, so that new data is never answered
from the cache: ``start`` adds DataVersion, the fingerprint of the objects under InputDataUrl, and the schedule
calls StartPipelineExecution as a universal target whose DataVersion is the scheduled time (``put_triggers`` uses
the templated SageMaker target, which cannot carry the scheduled time).
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlparse

from pipeline.core.data_version import PARAMETER as DATA_VERSION
from pipeline.core.data_version import SCHEDULED_TIME, s3_version
from pipeline.core.errors import AwsError, ParameterError, UsageError, one_line
from pipeline.core.names import StepStatus
from pipeline.core.steps import own_arguments, referenced_steps, walk_steps
from pipeline.definition.config import PipelineConfig
from pipeline.definition.parameters import check_overrides

START_PIPELINE_EXECUTION_TARGET = "arn:aws:scheduler:::aws-sdk:sagemaker:startPipelineExecution"  # universal target
SCHEDULE_ARN = "<aws.scheduler.schedule-arn>"  # a context attribute EventBridge Scheduler fills in, like the time

INLINE_DEFINITION_LIMIT = 100 * 1024  # larger definitions go through S3 (PipelineDefinitionS3Location), as the SDK does
TERMINAL_STATUSES = (StepStatus.SUCCEEDED, StepStatus.FAILED, StepStatus.STOPPED)
EXIT_SUCCEEDED, EXIT_FAILED, EXIT_QUALITY_GATE, EXIT_STOPPED = 0, 1, 3, 4
_ALREADY_EXISTS_CODES = ("ValidationException", "ResourceInUse")
_ALREADY_EXISTS_MESSAGES = ("already exists", "must be unique within an AWS account", "Cannot create already existing")


def aws_session(config: PipelineConfig) -> Any:
    """A boto3 session for the configured region (credentials from the usual chain)."""
    import boto3

    return boto3.Session(region_name=config.region)


@contextmanager
def aws_call(what: str) -> Iterator[None]:
    """Turn botocore's errors into one-line :class:`AwsError` messages naming the operation."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    try:
        yield
    except NoCredentialsError:
        raise AwsError(f"{what}: no AWS credentials found (configure a profile, SSO or environment keys)") from None
    except ClientError as error:
        info = error.response.get("Error", {})
        raise AwsError(f"{what}: {info.get('Code', 'error')}: {info.get('Message', error)}") from None
    except BotoCoreError as error:
        raise AwsError(f"{what}: {error}") from None


# ---------------------------------------------------------------- upsert


@dataclass(frozen=True)
class UpsertResult:
    """What ``upsert`` did."""

    pipeline_arn: str
    created: bool
    uploaded: tuple[str, ...]


def upsert(config: PipelineConfig, built: Any, session: Any = None, description: str | None = None) -> UpsertResult:
    """Upload the code bundles, then CreatePipeline, or UpdatePipeline + tags when the pipeline exists."""
    session = session or aws_session(config)
    s3 = session.client("s3")
    sagemaker = session.client("sagemaker")
    uploaded = tuple(_upload(s3, uri, content, config.kms_key_id) for uri, content in built.uploads.items())
    request: dict[str, Any] = {"PipelineName": config.pipeline_name, "RoleArn": config.role_arn}
    request.update(_definition_argument(s3, config, built.definition_json))
    if description:
        request["PipelineDescription"] = description
    tags = config.all_tags
    create = {**request, "ClientRequestToken": uuid.uuid4().hex, **({"Tags": tags} if tags else {})}
    from botocore.exceptions import ClientError

    with aws_call(f"CreatePipeline {config.pipeline_name}"):
        try:
            response = sagemaker.create_pipeline(**create)
            return UpsertResult(response["PipelineArn"], created=True, uploaded=uploaded)
        except ClientError as error:
            if not _already_exists(error):
                raise
    with aws_call(f"UpdatePipeline {config.pipeline_name}"):
        arn = sagemaker.update_pipeline(**request)["PipelineArn"]
    if tags:
        with aws_call(f"tagging {arn}"):
            existing = sagemaker.list_tags(ResourceArn=arn)["Tags"]
            merged = tags + [tag for tag in existing if tag["Key"] not in {t["Key"] for t in tags}]
            sagemaker.add_tags(ResourceArn=arn, Tags=merged)
    return UpsertResult(arn, created=False, uploaded=uploaded)


def _already_exists(error: Any) -> bool:
    info = error.response.get("Error", {})
    message = info.get("Message", "")
    return info.get("Code") in _ALREADY_EXISTS_CODES and any(text in message for text in _ALREADY_EXISTS_MESSAGES)


def _upload(s3: Any, uri: str, content: bytes, kms_key_id: str | None) -> str:
    """PutObject one code file (SSE-KMS with the configured key, if any)."""
    parsed = urlparse(uri)
    request: dict[str, Any] = {"Bucket": parsed.netloc, "Key": parsed.path.lstrip("/"), "Body": content}
    if kms_key_id:
        request.update(ServerSideEncryption="aws:kms", SSEKMSKeyId=kms_key_id)
    with aws_call(f"uploading {uri}"):
        s3.put_object(**request)
    return uri


def put_object(config: PipelineConfig, uri: str, content: bytes, session: Any = None) -> str:
    """PutObject one object (e.g. a decided schema), encrypted with the configured key like the code bundles."""
    return _upload((session or aws_session(config)).client("s3"), uri, content, config.kms_key_id)


def _definition_argument(s3: Any, config: PipelineConfig, definition_json: str) -> dict[str, Any]:
    """Inline below 100 KB; above, upload to s3://<bucket>/<pipeline>/definitions/<sha256>.json and point at it."""
    body = definition_json.encode("utf-8")
    if len(body) < INLINE_DEFINITION_LIMIT:
        return {"PipelineDefinition": definition_json}
    key = f"{config.pipeline_name}/definitions/{hashlib.sha256(body).hexdigest()}.json"
    _upload(s3, f"s3://{config.bucket}/{key}", body, config.kms_key_id)
    return {"PipelineDefinitionS3Location": {"Bucket": config.bucket, "ObjectKey": key}}


# ---------------------------------------------------------------- start


def deployed_definition(config: PipelineConfig, session: Any = None) -> dict[str, Any]:
    """The pipeline definition as deployed (DescribePipeline)."""
    session = session or aws_session(config)
    with aws_call(f"DescribePipeline {config.pipeline_name}"):
        response = session.client("sagemaker").describe_pipeline(PipelineName=config.pipeline_name)
    return json.loads(response["PipelineDefinition"])


def deployed_parameters(config: PipelineConfig, session: Any = None) -> dict[str, dict[str, Any]]:
    """The parameters of the pipeline as deployed (DescribePipeline): name -> declaration."""
    return declared_parameters(deployed_definition(config, session))


def declared_parameters(definition: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {parameter["Name"]: parameter for parameter in definition.get("Parameters", [])}


def steps_from(definition: Mapping[str, Any], first: str) -> list[str]:
    """``first`` and every step downstream of it, in definition order: what a selective execution from it runs.

    A step depends on the steps in its ``DependsOn``, the steps whose properties it reads (``{"Get": "Steps.X..."}``,
    property files included) and, inside a Condition's branches, on the Condition.
    """
    dependencies = {
        step["Name"]: set(step.get("DependsOn", []))
        | referenced_steps(own_arguments(step))
        | ({branch[0]} if branch else set())
        for step, branch in walk_steps(list(definition.get("Steps", [])))
    }
    if first not in dependencies:
        raise ParameterError(f"--from-step {first!r}: the pipeline has no such step; it has {', '.join(dependencies)}")
    selected = {first}
    changed = True
    while changed:
        changed = False
        for name, needs in dependencies.items():
            if name not in selected and needs & selected:
                selected.add(name)
                changed = True
    return [name for name in dependencies if name in selected]


def start_request(
    config: PipelineConfig,
    parameters: Mapping[str, str] | None = None,
    session: Any = None,
    display_name: str | None = None,
    from_step: str | None = None,
    source_arn: str | None = None,
    max_parallel: int | None = None,
    definition: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The StartPipelineExecution request, built with reads only: DescribePipeline (unless ``definition``, the
    deployed one, was read already), then ListObjectsV2.

    Overrides are checked against the deployed definition. Unless ``DataVersion`` is given, it is the fingerprint
    of the objects under ``InputDataUrl`` (the override, else the deployed default), so new data is a new cache key.
    A pipeline deployed before DataVersion existed gets no DataVersion (see :func:`missing_data_version`).
    ``from_step`` with ``source_arn``: a selective execution running that step and everything downstream of it,
    the other steps' outputs taken from the source execution. ``max_parallel``: ParallelismConfiguration.
    """
    session = session or aws_session(config)
    definition = definition or deployed_definition(config, session)
    declared = declared_parameters(definition)
    parameters = dict(parameters or {})
    check_overrides(list(declared.values()), parameters)
    if DATA_VERSION in declared and DATA_VERSION not in parameters:
        url = parameters.get("InputDataUrl") or str(declared.get("InputDataUrl", {}).get("DefaultValue", ""))
        with aws_call(f"ListObjectsV2 {url} (for DataVersion; or pass --param {DATA_VERSION}=...)"):
            parameters[DATA_VERSION] = s3_version(session.client("s3"), url)
    request: dict[str, Any] = {"PipelineName": config.pipeline_name}
    if parameters:
        request["PipelineParameters"] = [{"Name": name, "Value": str(value)} for name, value in parameters.items()]
    if display_name:
        request["PipelineExecutionDisplayName"] = display_name
    if from_step:
        request["SelectiveExecutionConfig"] = {
            "SourcePipelineExecutionArn": source_arn,
            "SelectedSteps": [{"StepName": name} for name in steps_from(definition, from_step)],
        }
    if max_parallel is not None:
        request["ParallelismConfiguration"] = {"MaxParallelExecutionSteps": max_parallel}
    return request


def missing_data_version(request: Mapping[str, Any]) -> bool:
    """True when a StartPipelineExecution request sets no DataVersion (the deployed pipeline predates it)."""
    return all(parameter["Name"] != DATA_VERSION for parameter in request.get("PipelineParameters", []))


def start(
    config: PipelineConfig,
    parameters: Mapping[str, str] | None = None,
    session: Any = None,
    display_name: str | None = None,
    request: Mapping[str, Any] | None = None,
) -> str:
    """StartPipelineExecution of :func:`start_request` (or of ``request``, already built); returns the ARN."""
    session = session or aws_session(config)
    request = request or start_request(config, parameters, session, display_name)
    with aws_call(f"StartPipelineExecution {config.pipeline_name}"):
        return session.client("sagemaker").start_pipeline_execution(**request)["PipelineExecutionArn"]


def retry(config: PipelineConfig, arn: str, max_parallel: int | None = None, session: Any = None) -> str:
    """RetryPipelineExecution: re-run the failed steps of a failed execution (same ARN, succeeded steps kept)."""
    request: dict[str, Any] = {"PipelineExecutionArn": arn}
    if max_parallel is not None:
        request["ParallelismConfiguration"] = {"MaxParallelExecutionSteps": max_parallel}
    with aws_call(f"RetryPipelineExecution {arn}"):
        return (
            (session or aws_session(config))
            .client("sagemaker")
            .retry_pipeline_execution(**request)["PipelineExecutionArn"]
        )


def stop(config: PipelineConfig, arn: str, session: Any = None) -> str:
    """StopPipelineExecution: the running steps' jobs are stopped, the execution ends Stopped."""
    with aws_call(f"StopPipelineExecution {arn}"):
        return (
            (session or aws_session(config))
            .client("sagemaker")
            .stop_pipeline_execution(PipelineExecutionArn=arn)["PipelineExecutionArn"]
        )


@dataclass
class ExecutionState:
    """One poll of an execution: its description and its steps (oldest first)."""

    arn: str
    status: str
    failure_reason: str | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.status in TERMINAL_STATUSES


def poll_execution(sagemaker: Any, arn: str) -> ExecutionState:
    """DescribePipelineExecution + every page of ListPipelineExecutionSteps."""
    with aws_call(f"DescribePipelineExecution {arn}"):
        described = sagemaker.describe_pipeline_execution(PipelineExecutionArn=arn)
    return ExecutionState(
        arn, described["PipelineExecutionStatus"], described.get("FailureReason"), execution_steps(sagemaker, arn)
    )


def execution_steps(sagemaker: Any, arn: str) -> list[dict[str, Any]]:
    """Every page of ListPipelineExecutionSteps, oldest step first."""
    steps: list[dict[str, Any]] = []
    request: dict[str, Any] = {"PipelineExecutionArn": arn, "SortOrder": "Ascending"}
    with aws_call(f"ListPipelineExecutionSteps {arn}"):
        while True:
            page = sagemaker.list_pipeline_execution_steps(**request)
            steps.extend(page.get("PipelineExecutionSteps", []))
            if not page.get("NextToken"):
                return steps
            request["NextToken"] = page["NextToken"]


def wait_for_execution(
    config: PipelineConfig,
    arn: str,
    session: Any = None,
    poll_seconds: float = 30.0,
    on_poll: Callable[[ExecutionState], None] = lambda state: None,
    sleep: Callable[[float], None] = time.sleep,
) -> ExecutionState:
    """Poll until the execution reaches Succeeded, Failed or Stopped; ``on_poll`` sees every state."""
    sagemaker = (session or aws_session(config)).client("sagemaker")
    while True:
        state = poll_execution(sagemaker, arn)
        on_poll(state)
        if state.finished:
            return state
        sleep(poll_seconds)


def outcome(state: ExecutionState, exit_messages: Mapping[str, str] | None = None) -> tuple[int, str]:
    """Exit code and one-line summary of a finished execution: 0 Succeeded, 3 quality gate, 1 Failed, 4 Stopped.

    ``exit_messages`` (step name -> its processing job's ExitMessage) say why a failed step's script failed, where
    the step's own FailureReason says only "AlgorithmError: See job logs"."""
    if state.status == StepStatus.SUCCEEDED:
        return EXIT_SUCCEEDED, "execution succeeded"
    if state.status == StepStatus.STOPPED:
        return EXIT_STOPPED, "execution was stopped"
    for step in state.steps:
        fail = step.get("Metadata", {}).get("Fail")
        if fail is not None:
            message = fail.get("ErrorMessage") or step.get("FailureReason") or "no message"
            return EXIT_QUALITY_GATE, f"step {step['StepName']} failed the execution: {message}"
    failed = [step for step in state.steps if step.get("StepStatus") == StepStatus.FAILED]
    reasons = []
    for step in failed:
        reason = f"step {step['StepName']}: {step.get('FailureReason', 'no reason given')}"
        message = (exit_messages or {}).get(step["StepName"])
        reasons.append(f"{reason}; ExitMessage: {one_line(message)}" if message else reason)
    reason = "; ".join(reasons) or state.failure_reason or "no reason given"
    return EXIT_FAILED, f"execution {state.status.lower()}: {reason}"


def step_rows(state: ExecutionState) -> list[tuple[str, str, str, str, str]]:
    """Table rows: step, status, started, duration, detail (job, cache hit, condition outcome or failure)."""
    rows = []
    now = datetime.now(timezone.utc)
    for step in state.steps:
        started = step.get("StartTime")
        ended = step.get("EndTime") or (now if started else None)
        duration = f"{(ended - started).total_seconds():.0f}s" if started and ended else ""
        rows.append(
            (
                step["StepName"],
                step.get("StepStatus", ""),
                started.strftime("%H:%M:%S") if started else "",
                duration,
                _step_detail(step),
            )
        )
    return rows


def _step_detail(step: dict[str, Any]) -> str:
    if step.get("FailureReason"):
        return step["FailureReason"]
    if step.get("CacheHitResult"):
        return f"cache hit from {step['CacheHitResult'].get('SourcePipelineExecutionArn', '?').rsplit('/', 1)[-1]}"
    metadata = step.get("Metadata", {})
    if "Condition" in metadata:
        return f"outcome {metadata['Condition'].get('Outcome')}"
    for kind, value in metadata.items():
        if isinstance(value, dict) and "Arn" in value:
            return f"{kind} {value['Arn'].rsplit('/', 1)[-1]}"
    return ""


# ---------------------------------------------------------------- executions


def list_executions(config: PipelineConfig, max_results: int = 10, session: Any = None) -> list[dict[str, Any]]:
    """The newest executions (ListPipelineExecutions summaries, newest first)."""
    session = session or aws_session(config)
    with aws_call(f"ListPipelineExecutions {config.pipeline_name}"):
        response = session.client("sagemaker").list_pipeline_executions(
            PipelineName=config.pipeline_name,
            SortBy="CreationTime",
            SortOrder="Descending",
            MaxResults=max_results,
        )
    return list(response.get("PipelineExecutionSummaries", []))


# ---------------------------------------------------------------- schedule


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
    session = session or aws_session(config)
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

    with aws_call(f"schedule {config.pipeline_name}"):
        try:
            return scheduler.update_schedule(**request)["ScheduleArn"]
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                raise
        return scheduler.create_schedule(**request)["ScheduleArn"]


def delete_schedule(config: PipelineConfig, session: Any = None) -> bool:
    """Delete the pipeline's schedule; False when there was none."""
    from botocore.exceptions import ClientError

    scheduler = (session or aws_session(config)).client("scheduler")
    with aws_call(f"DeleteSchedule {config.pipeline_name}"):
        try:
            scheduler.delete_schedule(Name=config.pipeline_name)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                return False
            raise
    return True


# ---------------------------------------------------------------- failure alerts

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
    session = session or aws_session(config)
    with aws_call(f"DescribePipeline {config.pipeline_name}"):
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
    with aws_call(f"PutRule {name}"):
        rule_arn = events.put_rule(**rule)["RuleArn"]
    with aws_call(f"PutTargets {name}"):
        response = events.put_targets(Rule=name, Targets=[target])
    if response.get("FailedEntryCount"):
        failed = response["FailedEntries"][0]
        raise AwsError(f"PutTargets {name}: {failed.get('ErrorCode')}: {failed.get('ErrorMessage')}")
    return rule_arn


def delete_failure_alert(config: PipelineConfig, session: Any = None) -> bool:
    """RemoveTargets then DeleteRule; False when there was no rule."""
    from botocore.exceptions import ClientError

    events = (session or aws_session(config)).client("events")
    name = alert_rule_name(config)
    with aws_call(f"deleting rule {name}"):
        try:
            events.remove_targets(Rule=name, Ids=[ALERT_TARGET_ID])
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                return False
            raise
        events.delete_rule(Name=name)
    return True
