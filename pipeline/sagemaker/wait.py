"""Watch executions: poll one until it finishes, its exit code and summary, its steps as table rows; list them."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from pipeline.core.errors import one_line
from pipeline.core.names import StepStatus
from pipeline.definition.config import PipelineConfig
from pipeline.sagemaker import aws

TERMINAL_STATUSES = (StepStatus.SUCCEEDED, StepStatus.FAILED, StepStatus.STOPPED)
EXIT_SUCCEEDED, EXIT_FAILED, EXIT_QUALITY_GATE, EXIT_STOPPED = 0, 1, 3, 4


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
    with aws.call(f"DescribePipelineExecution {arn}"):
        described = sagemaker.describe_pipeline_execution(PipelineExecutionArn=arn)
    return ExecutionState(
        arn, described["PipelineExecutionStatus"], described.get("FailureReason"), execution_steps(sagemaker, arn)
    )


def execution_steps(sagemaker: Any, arn: str) -> list[dict[str, Any]]:
    """Every page of ListPipelineExecutionSteps, oldest step first."""
    steps: list[dict[str, Any]] = []
    request: dict[str, Any] = {"PipelineExecutionArn": arn, "SortOrder": "Ascending"}
    with aws.call(f"ListPipelineExecutionSteps {arn}"):
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
    sagemaker = (session or aws.session(config)).client("sagemaker")
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


def list_executions(config: PipelineConfig, max_results: int = 10, session: Any = None) -> list[dict[str, Any]]:
    """The newest executions (ListPipelineExecutions summaries, newest first)."""
    session = session or aws.session(config)
    with aws.call(f"ListPipelineExecutions {config.pipeline_name}"):
        response = session.client("sagemaker").list_pipeline_executions(
            PipelineName=config.pipeline_name,
            SortBy="CreationTime",
            SortOrder="Descending",
            MaxResults=max_results,
        )
    return list(response.get("PipelineExecutionSummaries", []))
