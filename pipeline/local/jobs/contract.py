"""The contract between the interpreter and the local jobs: what a job runner receives and how it fails.

A ``JobRunner`` takes a ``Job`` (the planned step, its resolved request, where to keep its files) and returns the
step's properties, the fields SageMaker's Describe* call would return; ``StepFailed`` is a failure reason shown as is.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.local.executions import StepRecord
from pipeline.local.plan import StepSpec


class StepFailed(Exception):
    """A job failed for a reason worth showing as is (no traceback): the step's FailureReason.

    ``properties`` are what SageMaker's Describe*Job still returns for the failed job (its status, a processing job's
    ExitMessage): the step's record keeps them, as ListPipelineExecutionSteps links a failed step to its job."""

    def __init__(self, reason: str, properties: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.properties = properties or {}


@dataclass
class Job:
    """What a job runner receives: the step, its resolved request and where to keep its files."""

    step: StepSpec
    arguments: dict[str, Any]
    execution_id: str
    pipeline_name: str
    record: StepRecord
    folder: Path  # the step's folder in the execution record
    arn_prefix: str = "arn:aws:sagemaker:local:000000000000"
    report: Callable[[str], None] = field(default=lambda text: None)
    fields: dict[str, Any] = field(default_factory=dict)  # the step type's own top-level values, resolved
    stop: threading.Event = field(default_factory=threading.Event)  # set when the execution is being stopped

    @property
    def job_name(self) -> str:
        """The job name SageMaker Pipelines would give: ``pipelines-<execution id>-<step name>``, 63 chars max."""
        return f"pipelines-{self.execution_id}-{self.step.name}"[:63]

    def arn(self, resource: str) -> str:
        """The ARN of a resource this job creates, e.g. ``arn("training-job/name")``."""
        return f"{self.arn_prefix}:{resource}"

    @property
    def execution_arn(self) -> str:
        """The ARN of the execution running this job (what SageMaker records as a package's GeneratedBy)."""
        return self.arn(f"pipeline/{self.pipeline_name}/execution/{self.execution_id}")

    def add_log(self, path: Path) -> None:
        """Declare a log file (stdout/stderr of an instance) so the record lists it."""
        self.record.logs.append(str(path))

    def note(self, text: str) -> None:
        """Something the run must still show once the job ended (an approximate environment, a first-time build)."""
        self.record.notes.append(text)


JobRunner = Callable[[Job], dict[str, Any]]
