"""What a run cost, in instance-seconds per job step and in total, with the instance type (no price table).

SageMaker bills training by ``BillableTimeInSeconds x InstanceCount`` and processing and transform jobs by their
run time times their instance count; a cached step ran no job for this execution and costs nothing. Local runs are
costed the same way from their step timings and the definition's instance counts and types (what the run would
have used on SageMaker).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pipeline.core.steps import walk_steps

JOB_STEP_TYPES = {
    "Processing": "ProcessingJob",
    "Training": "TrainingJob",
    "Transform": "TransformJob",
    "Tuning": "HyperParameterTuningJob",
    "QualityCheck": "ProcessingJob",  # Model Monitor's analyzer
}
_RESOURCES = {
    "Processing": ("ProcessingResources", "ClusterConfig"),
    "QualityCheck": ("ProcessingResources", "ClusterConfig"),
    "Training": ("ResourceConfig",),
    "Transform": ("TransformResources",),
    "Tuning": ("TrainingJobDefinition", "ResourceConfig"),  # every training job of the tuning job
}


@dataclass(frozen=True)
class JobCost:
    """One job step: ``seconds`` of wall (training: billable) time on ``instance_count`` instances."""

    step: str
    kind: str  # ProcessingJob, TrainingJob, TransformJob
    instance_type: str
    instance_count: int
    seconds: float | None  # None while the job runs
    cached: bool = False

    @property
    def instance_seconds(self) -> float | None:
        if self.cached:
            return 0.0
        return None if self.seconds is None else self.seconds * self.instance_count

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> JobCost:
        return cls(**{key: document[key] for key in cls.__dataclass_fields__})

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "kind": self.kind,
            "instance_type": self.instance_type,
            "instance_count": self.instance_count,
            "seconds": self.seconds,
            "cached": self.cached,
            "instance_seconds": self.instance_seconds,
        }


def total_instance_seconds(costs: list[JobCost]) -> float:
    """The sum over finished jobs (running ones are not counted yet)."""
    return sum(cost.instance_seconds or 0.0 for cost in costs)


def by_instance_type(costs: list[JobCost]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for cost in costs:
        if cost.instance_seconds:
            totals[cost.instance_type] = totals.get(cost.instance_type, 0.0) + cost.instance_seconds
    return totals


# ---------------------------------------------------------------- local runs


def local_costs(
    steps: Mapping[str, Any], definition: Mapping[str, Any], parameters: Mapping[str, Any]
) -> list[JobCost]:
    """Costs of a local execution's job steps: its step records' times and the definition's resources.

    ``steps`` are the record's StepRecords (name -> record with type, status, start/end ISO times, cache source);
    ``{"Get": "Parameters.X"}`` resources resolve to the execution's parameter values or their declared defaults.
    """
    declared = {p["Name"]: p.get("DefaultValue") for p in definition.get("Parameters", [])}
    values = {**declared, **parameters}
    resources = {step["Name"]: step for step, _ in walk_steps(definition.get("Steps", []))}
    costs = []
    for name, record in steps.items():
        if record.type not in JOB_STEP_TYPES or name not in resources or not record.start_time:
            continue
        config = resources[name].get("Arguments", {})
        for key in _RESOURCES[record.type]:
            config = config.get(key, {})
        start = datetime.fromisoformat(record.start_time)
        seconds = (datetime.fromisoformat(record.end_time) - start).total_seconds() if record.end_time else None
        if record.type == "Tuning" and record.end_time and not record.cache_hit_source:
            seconds = _training_seconds(record.properties)  # its jobs ran in parallel: their sum, not the wall time
        costs.append(
            JobCost(
                step=name,
                kind=JOB_STEP_TYPES[record.type],
                instance_type=str(_resolve(config.get("InstanceType"), values)),
                instance_count=int(_resolve(config.get("InstanceCount"), values) or 0),
                seconds=seconds,
                cached=bool(record.cache_hit_source),
            )
        )
    return costs


def _training_seconds(properties: Mapping[str, Any]) -> float:
    """The summed run time of a tuning job's training jobs."""
    total = 0.0
    for summary in properties.get("TrainingJobSummaries") or []:
        if summary.get("TrainingStartTime") and summary.get("TrainingEndTime"):
            end, start = summary["TrainingEndTime"], summary["TrainingStartTime"]
            total += (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    return total


def _resolve(value: Any, parameters: Mapping[str, Any]) -> Any:
    if isinstance(value, dict) and str(value.get("Get", "")).startswith("Parameters."):
        return parameters.get(value["Get"].split(".", 1)[1])
    return value
