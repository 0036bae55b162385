"""Inspect one SageMaker pipeline execution: parameters, steps, their jobs, logs, the model-quality report and cost.

Requests: DescribePipelineExecution, ListPipelineParametersForExecution, ListPipelineExecutionSteps, then per job
step Describe{Processing,Training,Transform}Job and CloudWatch Logs DescribeLogStreams (the job's streams are
``<job-name>/<host>-<epoch>`` in ``/aws/sagemaker/<Kind>Jobs``), and GetObject of the Evaluate step's
``evaluation.json``. Cost is in instance-seconds, as the service bills them: BillableTimeInSeconds x instance count
for training, (end - start) x instance count for processing and transform; a cached step cost this execution nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from containerlib.s3_uri import split_s3_uri
from pipeline.core.cost import JobCost
from pipeline.core.errors import LlpipeError, UsageError
from pipeline.core.names import EVALUATE, REPORT_NAME, StepStatus
from pipeline.definition.config import DEFAULT_ROLE_ARN, PipelineConfig
from pipeline.sagemaker import aws
from pipeline.sagemaker.wait import execution_steps

EVALUATION_OUTPUT = "evaluation"  # the Evaluate step's ProcessingOutput name; the report is evaluation.json in it


@dataclass(frozen=True)
class JobKind:
    """How one kind of SageMaker job is described, logged and linked to."""

    metadata_key: str  # key in PipelineExecutionStep.Metadata
    describe: str  # boto3 method
    name_key: str
    log_group: str
    console_path: str  # SageMaker console fragment: #/<path>/<job-name>
    arn_key: str = "Arn"  # the job's ARN in the metadata entry


JOB_KINDS = {
    kind.metadata_key: kind
    for kind in (
        JobKind(
            "ProcessingJob",
            "describe_processing_job",
            "ProcessingJobName",
            "/aws/sagemaker/ProcessingJobs",
            "processing-jobs",
        ),
        JobKind("TrainingJob", "describe_training_job", "TrainingJobName", "/aws/sagemaker/TrainingJobs", "jobs"),
        JobKind(  # a QualityCheck step's analyzer job
            "QualityCheck",
            "describe_processing_job",
            "ProcessingJobName",
            "/aws/sagemaker/ProcessingJobs",
            "processing-jobs",
            arn_key="CheckJobArn",
        ),
        JobKind(
            "TransformJob",
            "describe_transform_job",
            "TransformJobName",
            "/aws/sagemaker/TransformJobs",
            "transform-jobs",
        ),
    )
}


@dataclass
class JobView:
    """One SageMaker job of a step: identity, where its logs are, and its cost."""

    kind: str
    name: str
    arn: str
    status: str | None = None
    failure_reason: str | None = None
    exit_message: str | None = None  # a processing job's: the end of the failing script's stderr
    log_group: str = ""
    log_streams: list[str] = field(default_factory=list)
    console_url: str = ""
    logs_url: str = ""
    cost: JobCost | None = None
    report_uri: str | None = None  # the Evaluate job's evaluation.json

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "arn": self.arn,
            "status": self.status,
            "failure_reason": self.failure_reason,
            "exit_message": self.exit_message,
            "log_group": self.log_group,
            "log_streams": self.log_streams,
            "console_url": self.console_url,
            "logs_url": self.logs_url,
            "cost": self.cost.to_json() if self.cost else None,
        }


@dataclass
class StepView:
    """One step of the execution as ListPipelineExecutionSteps reports it, with its job described."""

    name: str
    status: str
    start_time: datetime | None
    end_time: datetime | None
    attempts: int | None
    cache_source: str | None
    failure_reason: str | None
    outcome: str | None  # a Condition's outcome, a Fail step's message, a model or package ARN
    job: JobView | None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "start_time": self.start_time,
            "end_time": self.end_time,
            "attempts": self.attempts,
            "cache_hit_source": self.cache_source,
            "failure_reason": self.failure_reason,
            "outcome": self.outcome,
            "job": self.job.to_json() if self.job else None,
        }


@dataclass
class ExecutionView:
    """Everything ``llpipe execution show --sagemaker`` prints."""

    arn: str
    status: str
    display_name: str | None
    failure_reason: str | None
    start_time: datetime | None
    last_modified: datetime | None
    parameters: dict[str, str]
    steps: list[StepView]
    report: dict[str, Any] | None = None  # the Evaluate step's evaluation.json, when it succeeded
    report_uri: str | None = None
    selective_source: str | None = None
    max_parallel: int | None = None

    @property
    def id(self) -> str:
        return self.arn.rsplit("/", 1)[-1]

    @property
    def costs(self) -> list[JobCost]:
        return [step.job.cost for step in self.steps if step.job and step.job.cost]

    @property
    def failed_steps(self) -> list[StepView]:
        return [step for step in self.steps if step.status == StepStatus.FAILED]

    def to_json(self) -> dict[str, Any]:
        from pipeline.core.cost import total_instance_seconds

        return {
            "id": self.id,
            "arn": self.arn,
            "status": self.status,
            "display_name": self.display_name,
            "failure_reason": self.failure_reason,
            "start_time": self.start_time,
            "last_modified_time": self.last_modified,
            "parameters": self.parameters,
            "selective_execution_source": self.selective_source,
            "max_parallel_steps": self.max_parallel,
            "steps": [step.to_json() for step in self.steps],
            "report_uri": self.report_uri,
            "report": self.report,
            "instance_seconds": total_instance_seconds(self.costs),
        }


# ---------------------------------------------------------------- naming


def execution_arn(config: PipelineConfig, id_or_arn: str, session: Any = None) -> str:
    """An execution ARN as given, or built from an id with the configured region, pipeline and account.

    The account is the pipeline role's; with the placeholder role of the defaults, STS GetCallerIdentity names it.
    """
    if id_or_arn.startswith("arn:"):
        if ":pipeline/" not in id_or_arn or "/execution/" not in id_or_arn:
            raise UsageError(f"{id_or_arn!r} is not a pipeline execution ARN (…:pipeline/NAME/execution/ID)")
        return id_or_arn
    if not id_or_arn or "/" in id_or_arn or ":" in id_or_arn:
        raise UsageError(f"{id_or_arn!r} is neither an execution id nor an execution ARN")
    partition, account = config.role_arn.split(":")[1], config.role_arn.split(":")[4]
    if config.role_arn == DEFAULT_ROLE_ARN:
        session = session or aws.session(config)
        with aws.call("GetCallerIdentity (the account of the execution)"):
            caller = session.client("sts").get_caller_identity()
        partition, account = caller["Arn"].split(":")[1], caller["Account"]
    pipeline = config.pipeline_name.lower()  # SageMaker lower-cases the pipeline name in ARNs
    return f"arn:{partition}:sagemaker:{config.region}:{account}:pipeline/{pipeline}/execution/{id_or_arn}"


def console_url(region: str, kind: JobKind, name: str) -> str:
    return f"https://{region}.console.aws.amazon.com/sagemaker/home?region={region}#/{kind.console_path}/{name}"


def logs_console_url(region: str, log_group: str, name: str) -> str:
    """The CloudWatch console's view of every stream of the job (streams are prefixed ``<job-name>/``)."""
    return (
        f"https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}"
        f"#logStream:group={log_group};prefix={name}/;streamFilter=typeLogStreamPrefix"
    )


# ---------------------------------------------------------------- inspection


def inspect_execution(config: PipelineConfig, arn: str, session: Any = None) -> ExecutionView:
    """Describe the execution, its parameters and steps, each step's job, and read the Evaluate report."""
    session = session or aws.session(config)
    sagemaker = session.client("sagemaker")
    region = arn.split(":")[3]
    with aws.call(f"DescribePipelineExecution {arn}"):
        described = sagemaker.describe_pipeline_execution(PipelineExecutionArn=arn)
    parameters = execution_parameters(sagemaker, arn)
    logs = session.client("logs")
    steps = [_step_view(sagemaker, logs, region, step) for step in execution_steps(sagemaker, arn)]
    view = ExecutionView(
        arn=arn,
        status=described["PipelineExecutionStatus"],
        display_name=described.get("PipelineExecutionDisplayName"),
        failure_reason=described.get("FailureReason"),
        start_time=described.get("CreationTime"),
        last_modified=described.get("LastModifiedTime"),
        parameters=parameters,
        steps=steps,
        selective_source=(described.get("SelectiveExecutionConfig") or {}).get("SourcePipelineExecutionArn"),
        max_parallel=(described.get("ParallelismConfiguration") or {}).get("MaxParallelExecutionSteps"),
    )
    evaluate = next((s.job for s in steps if s.name == EVALUATE and s.status == StepStatus.SUCCEEDED and s.job), None)
    if evaluate and evaluate.report_uri:
        _read_report(session.client("s3"), view, evaluate.report_uri)
    return view


def execution_parameters(sagemaker: Any, arn: str) -> dict[str, str]:
    """Every page of ListPipelineParametersForExecution: the values this execution ran with."""
    parameters: dict[str, str] = {}
    request: dict[str, Any] = {"PipelineExecutionArn": arn}
    with aws.call(f"ListPipelineParametersForExecution {arn}"):
        while True:
            page = sagemaker.list_pipeline_parameters_for_execution(**request)
            parameters.update({p["Name"]: p["Value"] for p in page.get("PipelineParameters", [])})
            if not page.get("NextToken"):
                return parameters
            request["NextToken"] = page["NextToken"]


def _step_view(sagemaker: Any, logs: Any, region: str, step: dict[str, Any]) -> StepView:
    metadata = step.get("Metadata", {})
    cache_source = (step.get("CacheHitResult") or {}).get("SourcePipelineExecutionArn")
    job = None
    for key, kind in JOB_KINDS.items():
        if key in metadata and metadata[key].get(kind.arn_key):
            job = describe_job(
                sagemaker, logs, region, kind, metadata[key][kind.arn_key], step["StepName"], cached=bool(cache_source)
            )
    return StepView(
        name=step["StepName"],
        status=step.get("StepStatus", ""),
        start_time=step.get("StartTime"),
        end_time=step.get("EndTime"),
        attempts=step.get("AttemptCount"),
        cache_source=cache_source,
        failure_reason=step.get("FailureReason"),
        outcome=_outcome(metadata),
        job=job,
    )


def _outcome(metadata: dict[str, Any]) -> str | None:
    if "Condition" in metadata:
        return f"condition {metadata['Condition'].get('Outcome')}"
    if "Fail" in metadata:
        return metadata["Fail"].get("ErrorMessage")
    for key in ("RegisterModel", "Model"):
        if key in metadata:
            return metadata[key].get("Arn")
    return None


def describe_job(
    sagemaker: Any, logs: Any, region: str, kind: JobKind, arn: str, step_name: str, cached: bool = False
) -> JobView:
    """Describe{Processing,Training,Transform}Job, its cost and (with a logs client) its log streams."""
    arn_name = arn.rsplit("/", 1)[-1]  # lower-cased in the ARN; Describe*Job does not mind, log streams do
    with aws.call(f"{kind.describe} {arn_name}"):
        described = getattr(sagemaker, kind.describe)(**{kind.name_key: arn_name})
    name = described.get(kind.name_key, arn_name)
    job = JobView(
        kind=kind.metadata_key,
        name=name,
        arn=arn,
        status=described.get(f"{kind.metadata_key}Status"),
        failure_reason=described.get("FailureReason"),
        exit_message=described.get("ExitMessage"),
        log_group=kind.log_group,
        console_url=console_url(region, kind, name),
        logs_url=logs_console_url(region, kind.log_group, name),
        cost=job_cost(step_name, kind.metadata_key, described, cached),
    )
    if kind.metadata_key == "ProcessingJob":
        for output in (described.get("ProcessingOutputConfig") or {}).get("Outputs", []):
            if output.get("OutputName") == EVALUATION_OUTPUT and "S3Output" in output:
                job.report_uri = output["S3Output"]["S3Uri"].rstrip("/") + "/" + REPORT_NAME
    if logs is not None:
        job.log_streams = log_streams(logs, kind.log_group, name)
    return job


def job_cost(step_name: str, kind: str, described: dict[str, Any], cached: bool) -> JobCost:
    """Instance-seconds of one described job (None while it runs); zero for a cache hit."""
    if kind == "TrainingJob":
        resources = described.get("ResourceConfig") or {}
        groups = resources.get("InstanceGroups") or []
        count = sum(g["InstanceCount"] for g in groups) or resources.get("InstanceCount") or 0
        instance_type = "+".join(sorted({g["InstanceType"] for g in groups})) or resources.get("InstanceType", "")
        billable = described.get("BillableTimeInSeconds")
        seconds = float(billable) if billable is not None else None
    else:
        if kind == "ProcessingJob":
            cluster = (described.get("ProcessingResources") or {}).get("ClusterConfig") or {}
            start, end = described.get("ProcessingStartTime"), described.get("ProcessingEndTime")
        else:
            cluster = described.get("TransformResources") or {}
            start, end = described.get("TransformStartTime"), described.get("TransformEndTime")
        count, instance_type = cluster.get("InstanceCount", 0), cluster.get("InstanceType", "?")
        seconds = (end - start).total_seconds() if start and end else None
    return JobCost(step_name, kind, instance_type, count, seconds, cached=cached)


def step_jobs(config: PipelineConfig, steps: list[dict[str, Any]], session: Any = None) -> dict[str, JobView]:
    """The job of every job step of ListPipelineExecutionSteps output (one Describe*Job each, no log requests):
    step name -> its cost, status and a processing job's ExitMessage."""
    sagemaker = (session or aws.session(config)).client("sagemaker")
    jobs = {}
    for step in steps:
        for key, kind in JOB_KINDS.items():
            arn = step.get("Metadata", {}).get(key, {}).get(kind.arn_key)
            if arn:
                cached = bool(step.get("CacheHitResult"))
                name = step["StepName"]
                jobs[name] = describe_job(sagemaker, None, arn.split(":")[3], kind, arn, name, cached=cached)
    return jobs


def log_streams(logs: Any, log_group: str, job_name: str) -> list[str]:
    """DescribeLogStreams with the job's prefix; none when the job never got to log (no group yet)."""
    from botocore.exceptions import ClientError

    streams: list[str] = []
    request: dict[str, Any] = {"logGroupName": log_group, "logStreamNamePrefix": f"{job_name}/"}
    with aws.call(f"DescribeLogStreams {log_group} {job_name}/"):
        while True:
            try:
                page = logs.describe_log_streams(**request)
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                    return streams
                raise
            streams.extend(stream["logStreamName"] for stream in page.get("logStreams", []))
            if not page.get("nextToken"):
                return streams
            request["nextToken"] = page["nextToken"]


def _read_report(s3: Any, view: ExecutionView, uri: str) -> None:
    """GetObject of evaluation.json (model-quality sections and the gate's)."""
    import json

    bucket, key = split_s3_uri(uri)
    with aws.call(f"reading the evaluation report {uri}"):
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    try:
        report = json.loads(body)
    except ValueError as error:
        raise LlpipeError(f"{uri}: not a JSON evaluation report: {error}") from None
    view.report_uri = uri
    view.report = report


@dataclass(frozen=True)
class LogEvent:
    stream: str
    timestamp: int  # milliseconds since the epoch, as CloudWatch Logs gives it
    message: str


def job_log_events(config: PipelineConfig, job: JobView, session: Any = None) -> list[LogEvent]:
    """Every event of the job's log streams (FilterLogEvents with the job's prefix, all pages, oldest first)."""
    from botocore.exceptions import ClientError

    logs = (session or aws.session(config)).client("logs")
    events: list[LogEvent] = []
    request: dict[str, Any] = {"logGroupName": job.log_group, "logStreamNamePrefix": f"{job.name}/"}
    with aws.call(f"FilterLogEvents {job.log_group} {job.name}/"):
        while True:
            try:
                page = logs.filter_log_events(**request)
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                    return events
                raise
            events.extend(LogEvent(e["logStreamName"], e["timestamp"], e["message"]) for e in page.get("events", []))
            if not page.get("nextToken"):
                return events
            request["nextToken"] = page["nextToken"]
