"""A local hyperparameter tuning job: a seeded search (pipeline/local/search.py) over the step's ``ParameterRanges``,
each candidate a local Linear Learner training job (pipeline/local/jobs/training.py) on the definition's channels.

Up to ``MaxParallelTrainingJobs`` candidates train at once, round by round, until ``MaxNumberOfTrainingJobs``. The
step's properties are what SageMaker Pipelines exposes for a Tuning step (DescribeHyperParameterTuningJob plus
ListTrainingJobsForHyperParameterTuningJob): ``BestTrainingJob``, ``TrainingJobSummaries`` sorted best first,
``HyperParameterTuningJobStatus`` and the counters. Every candidate's artifact lands where a training job's does,
``<S3OutputPath>/<TrainingJobName>/output/model.tar.gz``, which is what ``get_top_model_s3_uri`` joins.
Strategy ``Random`` runs random search, ``Bayesian`` the Gaussian-process search, whose first candidate is Linear
Learner's own default configuration (so the search starts where an untuned run stands); ``Hyperband`` and ``Grid``
are not run locally, nor is early stopping of training jobs (``TrainingJobEarlyStoppingType`` Auto runs as Off).
"""

from __future__ import annotations

import hashlib
import json
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipeline.core.names import TRAINING_JOB_SETTINGS
from pipeline.local.executions import now
from pipeline.local.jobs.contract import Job, StepFailed
from pipeline.local.jobs.training import TrainingJobs
from pipeline.local.s3 import LocalS3
from pipeline.local.search import Observation, RangeError, Search, dimensions

if TYPE_CHECKING:
    from pipeline.core.forkserver import ForkServers

STRATEGIES = {"Random": "random", "Bayesian": "gp-ei"}
TUNING_JOB_NAME_MAX_LENGTH = 32


@dataclass(frozen=True)
class Trial:
    """One candidate training job and how it ended."""

    index: int
    name: str
    hyperparameters: dict[str, str]
    status: str  # Completed or Failed
    objective: float | None
    start_time: str
    end_time: str
    failure_reason: str | None = None


@dataclass(frozen=True)
class TuningJobs:
    """Runs Tuning steps against one local S3 folder."""

    s3: LocalS3
    fork_servers: ForkServers | None = None  # what starts the trials' processes (None: fresh processes)

    def __call__(self, job: Job) -> dict[str, Any]:
        arguments = job.arguments
        config = arguments.get("HyperParameterTuningJobConfig") or {}
        definition = arguments.get("TrainingJobDefinition")
        if definition is None:
            raise StepFailed("only a single TrainingJobDefinition is run locally (not TrainingJobDefinitions)")
        objective = config.get("HyperParameterTuningJobObjective") or {}
        metric, kind = objective.get("MetricName"), objective.get("Type")
        if not metric or kind not in ("Minimize", "Maximize"):
            raise StepFailed(f"the objective needs a MetricName and Type Minimize or Maximize, got {objective}")
        strategy = config.get("Strategy", "Bayesian")
        if strategy not in STRATEGIES:
            raise StepFailed(f"tuning strategy {strategy!r} is not run locally (supported: {', '.join(STRATEGIES)})")
        limits = config.get("ResourceLimits") or {}
        max_jobs = int(limits.get("MaxNumberOfTrainingJobs", 1))
        parallel = max(1, min(int(limits.get("MaxParallelTrainingJobs", 1)), max_jobs))
        try:
            space = dimensions(config.get("ParameterRanges") or {})
        except RangeError as error:
            raise StepFailed(str(error)) from None
        static = {str(k): str(v) for k, v in (definition.get("StaticHyperParameters") or {}).items()}
        clash = sorted(set(static) & {dimension.name for dimension in space})
        if clash:
            raise StepFailed(f"hyperparameter(s) both static and tuned: {', '.join(clash)}")

        tuning_name = job.job_name[:TUNING_JOB_NAME_MAX_LENGTH].rstrip("-")
        seed = int(config.get("RandomSeed", 0))
        defaults = algorithm_defaults(static)
        search = Search(STRATEGIES[strategy], space, seed, kind == "Minimize", max_jobs, defaults)
        created = now()
        trials: list[Trial] = []
        observations: list[Observation] = []
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            while len(trials) < max_jobs:
                points = search.propose(min(parallel, max_jobs - len(trials)), observations)
                candidates = []
                for point in points:
                    index = len(trials) + len(candidates) + 1
                    values = search.point_values(point)
                    candidates.append((index, _training_job_name(tuning_name, index, values), values))
                job.report(f"training jobs {len(trials) + 1}-{len(trials) + len(candidates)} of {max_jobs}")
                runs = [
                    pool.submit(self._train, job, definition, static, name, values, metric, max_jobs, index)
                    for index, name, values in candidates
                ]
                for point, run in zip(points, runs, strict=True):
                    trial = run.result()
                    trials.append(trial)
                    observations.append(Observation(point, trial.objective))
        return _properties(job, arguments, tuning_name, created, trials, metric, kind)

    def _train(
        self,
        job: Job,
        definition: dict[str, Any],
        static: dict[str, str],
        name: str,
        values: dict[str, str],
        metric: str,
        total: int,
        index: int,
    ) -> Trial:
        """One candidate: a training job request from the definition, run by the local training job runner."""
        request = {key: definition[key] for key in TRAINING_JOB_SETTINGS if key in definition}
        # the service tells a built-in algorithm it runs under tuning (Linear Learner then trains one model)
        hyperparameters = {**static, **values, "_tuning_objective_metric": metric}
        request.update(TrainingJobName=name, HyperParameters=hyperparameters)
        folder = job.folder / "training-jobs" / name
        folder.mkdir(parents=True, exist_ok=True)
        candidate = Job(
            step=job.step,
            arguments=request,
            execution_id=job.execution_id,
            pipeline_name=job.pipeline_name,
            record=job.record,
            folder=folder,
            arn_prefix=job.arn_prefix,
            report=lambda text: job.report(f"job {index}/{total} {text}"),
        )
        started = now()
        try:
            described = TrainingJobs(self.s3, self.fork_servers)(candidate)
        except StepFailed as error:
            return Trial(index, name, values, "Failed", None, started, now(), str(error))
        (folder / "training-job.json").write_text(json.dumps(described, indent=2, sort_keys=True, default=str))
        metrics = {item["MetricName"]: item["Value"] for item in described.get("FinalMetricDataList", [])}
        value = metrics.get(metric)
        if value is None or not math.isfinite(value):
            reason = f"the training job reported no {metric} (it reported {', '.join(sorted(metrics)) or 'nothing'})"
            return Trial(index, name, values, "Completed", None, started, now(), reason)
        return Trial(index, name, values, "Completed", float(value), started, now())


def algorithm_defaults(static: dict[str, str]) -> dict[str, str]:
    """The value Linear Learner gives every hyperparameter when it is not tuned ("auto" resolved as the algorithm
    resolves it for a single model), as strings; empty when the static hyperparameters are themselves invalid."""
    from dataclasses import asdict

    from pipeline.linear_learner.hyperparameters import HyperparameterError, parse_hyperparameters

    try:
        resolved = parse_hyperparameters({**static, "num_models": "1"})
    except HyperparameterError:
        return {}
    values = asdict(resolved).items()
    return {name: str(value).lower() if isinstance(value, bool) else str(value) for name, value in values}


def _training_job_name(tuning_name: str, index: int, values: dict[str, str]) -> str:
    """``<tuning job>-<NNN>-<8 hex>``, the service's pattern; the suffix is a digest of the candidate."""
    digest = hashlib.sha256(json.dumps([tuning_name, index, values], sort_keys=True).encode()).hexdigest()[:8]
    return f"{tuning_name}-{index:03d}-{digest}"


def _summary(job: Job, trial: Trial, metric: str, kind: str) -> dict[str, Any]:
    """A HyperParameterTrainingJobSummary."""
    summary: dict[str, Any] = {
        "TrainingJobName": trial.name,
        "TrainingJobArn": job.arn(f"training-job/{trial.name.lower()}"),
        "CreationTime": trial.start_time,
        "TrainingStartTime": trial.start_time,
        "TrainingEndTime": trial.end_time,
        "TrainingJobStatus": trial.status,
        "TunedHyperParameters": dict(trial.hyperparameters),
        "ObjectiveStatus": "Succeeded" if trial.objective is not None else "Failed",
    }
    if trial.objective is not None:
        summary["FinalHyperParameterTuningJobObjectiveMetric"] = {
            "Type": kind,
            "MetricName": metric,
            "Value": trial.objective,
        }
    if trial.failure_reason:
        summary["FailureReason"] = trial.failure_reason
    return summary


def _properties(
    job: Job,
    arguments: dict[str, Any],
    tuning_name: str,
    created: str,
    trials: list[Trial],
    metric: str,
    kind: str,
) -> dict[str, Any]:
    scored = [trial for trial in trials if trial.objective is not None]
    if not scored:
        reasons = sorted({trial.failure_reason or "" for trial in trials})
        raise StepFailed(f"none of the {len(trials)} training jobs reported {metric}: {'; '.join(reasons)}")
    sign = 1.0 if kind == "Minimize" else -1.0
    # best first, ties to the earlier job; jobs without an objective last, in the order they ran
    ordered = sorted(scored, key=lambda trial: (sign * trial.objective, trial.index)) + [
        trial for trial in trials if trial.objective is None
    ]
    summaries = [_summary(job, trial, metric, kind) for trial in ordered]
    statuses = [trial.status for trial in trials]
    return {
        **arguments,
        "HyperParameterTuningJobName": tuning_name,
        "HyperParameterTuningJobArn": job.arn(f"hyper-parameter-tuning-job/{tuning_name.lower()}"),
        "HyperParameterTuningJobStatus": "Completed",
        "CreationTime": created,
        "HyperParameterTuningEndTime": now(),
        "BestTrainingJob": summaries[0],
        "TrainingJobSummaries": summaries,
        "TrainingJobStatusCounters": {
            "Completed": statuses.count("Completed"),
            "InProgress": 0,
            "RetryableError": 0,
            "NonRetryableError": statuses.count("Failed"),
            "Stopped": 0,
        },
        "ObjectiveStatusCounters": {"Succeeded": len(scored), "Pending": 0, "Failed": len(trials) - len(scored)},
    }
