"""A SageMaker execution in MLflow, forwarded from the service's own records after it ran: the built-in Linear
Learner runs no user code, so its metrics reach MLflow only this way (SDK v2's ``log_sagemaker_job_to_mlflow`` did it
for one job; v3 keeps the name and raises NotImplementedError).

One parent run per execution (named by its id) in the execution's experiment (DescribePipelineExecution's
``MLflowConfig``: the pipeline's default or the one ``start`` passed), a child run per step, and for every training
job (Train, each tuning trial) its hyperparameters, ``FinalMetricDataList`` as ``final/<name>`` and each metric's
series from sagemaker-metrics' BatchGetMetrics (step = iteration), as the local runs are logged
(:mod:`pipeline.api.tracking`). The store is the execution's tracking server or App ARN (the ``sagemaker-mlflow``
plugin's ``arn`` scheme, SigV4) unless another tracking URI is given.

Forwarding is idempotent: an execution forwarded again (``start --wait``, then ``execution show --to-mlflow``)
updates the run it was forwarded as (found by its ``llpipe.execution_arn`` tag), its children found by step name and
its tuning trials by training job name; params already there are kept (MLflow's are immutable), tags and states
updated, and metric points are stamped with the execution's creation time, so a point sent again is the same
``(key, timestamp, step, value)``, which MLflow stores once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pipeline.core.errors import ConfigError, opt
from pipeline.core.names import EVALUATE
from pipeline.core.tracking import (
    DEADLINE_SECONDS,
    METADATA_EXPERIMENT_ID,
    METADATA_RUN_ID,
    MlflowRun,
    RunWriter,
    bounded_requests,
    chunks,
    experiment_for,
    metric_key,
    probe,
    run_url,
    within_deadline,
)
from pipeline.definition.config import PipelineConfig
from pipeline.sagemaker import aws
from pipeline.sagemaker.inspect import execution_arn, execution_parameters
from pipeline.sagemaker.mlflow_evaluation import PlotRenderer, log_evaluation, read_evaluation
from pipeline.sagemaker.wait import execution_steps

SCHEDULED_BY = "Scheduled for "  # how a scheduled execution's description starts (pipeline.sagemaker.schedule)
MAX_QUERIES = 100  # BatchGetMetrics' MetricQueries per request
STATES = {"Succeeded": "FINISHED", "Executing": "RUNNING", "Starting": "RUNNING", "Stopping": "RUNNING"}


@dataclass
class TrainingJob:
    """One training job as the service recorded it: DescribeTrainingJob and its metric series."""

    described: dict[str, Any]
    series: list[tuple[str, float, int]] = field(default_factory=list)


def forward_execution(
    config: PipelineConfig,
    id_or_arn: str,
    session: Any = None,
    tracking_uri: str | None = None,
    plots: PlotRenderer | None = None,
) -> MlflowRun:
    """Read the execution, its steps, training jobs and report from the service, then write its MLflow runs to
    ``tracking_uri`` (default: the execution's MLflow ARN, else the configured ``mlflow_arn``); ``plots`` draws the
    report's plots for Evaluate's child (:mod:`pipeline.sagemaker.mlflow_evaluation`)."""
    session = session or aws.session(config)
    arn = execution_arn(config, id_or_arn, session)
    sagemaker = session.client("sagemaker")
    with aws.call(f"DescribePipelineExecution {arn}"):
        described = sagemaker.describe_pipeline_execution(PipelineExecutionArn=arn)
    settings = described.get("MLflowConfig") or {}
    uri = tracking_uri or settings.get("MlflowResourceArn") or config.mlflow_arn
    if not uri:
        raise ConfigError(
            f"execution {arn} names no MLflow tracking server and mlflow_arn is not set: give {opt('mlflow_arn')} "
            f"(a tracking server or App ARN) or {opt('tracking_uri')}"
        )
    probe(uri)  # a server that is down costs one request here, before the execution's records are read
    experiment = settings.get("MlflowExperimentName") or config.experiment_name
    parameters = execution_parameters(sagemaker, arn)
    steps = execution_steps(sagemaker, arn)
    metrics_client = session.client("sagemaker-metrics")
    jobs = {step["StepName"]: step_jobs(sagemaker, metrics_client, step) for step in steps}
    evaluation = read_evaluation(session, steps)
    with bounded_requests(uri):
        from mlflow import MlflowClient

        client = MlflowClient(tracking_uri=uri)
        experiment_id = experiment_for(client, experiment)
        run_id = _write(client, experiment_id, arn, described, parameters, steps, jobs)
        if evaluation is not None:
            runs = Existing(client, experiment_id)
            child = runs.children(run_id)[EVALUATE]
            log_evaluation(
                RunWriter(client, experiment_id, _timestamp(described)), child, evaluation, runs.new_params, plots
            )
    link_model_package(sagemaker, steps, run_id, experiment_id)
    url, command = run_url(uri, experiment_id, run_id)
    return MlflowRun(run_id, experiment_id, uri, url, command)


def forwarding_uri(config: PipelineConfig) -> str | None:
    """Where a finished execution is forwarded without being asked (``llpipe start --wait``, ``wait()``): the
    configured tracking URI, else the MLflow ARN; None when tracking is off or neither is configured."""
    if not config.mlflow_tracking:
        return None
    return config.mlflow_tracking_uri or config.mlflow_arn


def forward_finished(
    config: PipelineConfig,
    arn: str,
    session: Any,
    on_warning: Callable[[str], None],
    deadline: float = DEADLINE_SECONDS,
    plots: PlotRenderer | None = None,
) -> MlflowRun | None:
    """Forward a finished execution when MLflow is configured (:func:`forwarding_uri`); a failure (the store down,
    a request refused) is one warning line through ``on_warning``, and the caller waits at most ``deadline``
    seconds: tracking never changes an execution's outcome or exit code."""
    uri = forwarding_uri(config)
    if uri is None:
        return None
    return within_deadline(
        lambda: forward_execution(config, arn, session, tracking_uri=config.mlflow_tracking_uri, plots=plots),
        f"execution {arn.rsplit('/', 1)[-1]}",
        uri,
        on_warning,
        deadline,
    )


def find_run(
    config: PipelineConfig, arn: str, described: dict[str, Any], tracking_uri: str | None = None
) -> MlflowRun | None:
    """The parent run an execution was forwarded as (its ``llpipe.execution_arn`` tag; the oldest, should an older
    version of the forwarder have written it twice), in the store and experiment it is forwarded to; None when
    MLflow is not configured or it has none."""
    settings = described.get("MLflowConfig") or {}
    uri = tracking_uri or settings.get("MlflowResourceArn") or config.mlflow_arn
    if not uri:
        return None
    probe(uri)
    with bounded_requests(uri):
        from mlflow import MlflowClient

        client = MlflowClient(tracking_uri=uri)
        experiment = client.get_experiment_by_name(settings.get("MlflowExperimentName") or config.experiment_name)
        if experiment is None:
            return None
        parent = Existing(client, str(experiment.experiment_id)).parent(arn)
    if parent is None:
        return None
    url, command = run_url(uri, str(experiment.experiment_id), parent)
    return MlflowRun(parent, str(experiment.experiment_id), uri, url, command)


def link_model_package(sagemaker: Any, steps: list[dict[str, Any]], run_id: str, experiment_id: str) -> None:
    """The version the execution registered names its run: UpdateModelPackage's CustomerMetadataProperties
    ``mlflow:run-id`` and ``mlflow:experiment-id`` (the local registry gets the same, :mod:`pipeline.api.tracking`)."""
    for step in steps:
        package = ((step.get("Metadata") or {}).get("RegisterModel") or {}).get("Arn")
        if package and step.get("StepStatus") == "Succeeded":
            with aws.call(f"UpdateModelPackage {package}"):
                sagemaker.update_model_package(
                    ModelPackageArn=package,
                    CustomerMetadataProperties={METADATA_RUN_ID: run_id, METADATA_EXPERIMENT_ID: experiment_id},
                )


def step_jobs(sagemaker: Any, metrics: Any, step: dict[str, Any]) -> list[TrainingJob]:
    """The training jobs of a step: Train's one, or every trial of a Tuning step; none for other steps."""
    metadata = step.get("Metadata") or {}
    names: list[str] = []
    if (metadata.get("TrainingJob") or {}).get("Arn"):
        names = [metadata["TrainingJob"]["Arn"].rsplit("/", 1)[-1]]
    elif (metadata.get("TuningJob") or {}).get("Arn"):
        tuning = metadata["TuningJob"]["Arn"].rsplit("/", 1)[-1]
        request: dict[str, Any] = {"HyperParameterTuningJobName": tuning, "SortBy": "CreationTime"}
        with aws.call(f"ListTrainingJobsForHyperParameterTuningJob {tuning}"):
            while True:
                page = sagemaker.list_training_jobs_for_hyper_parameter_tuning_job(**request)
                names += [job["TrainingJobName"] for job in page.get("TrainingJobSummaries", [])]
                if not page.get("NextToken"):
                    break
                request["NextToken"] = page["NextToken"]
    jobs = []
    for name in names:
        with aws.call(f"DescribeTrainingJob {name}"):
            described = sagemaker.describe_training_job(TrainingJobName=name)
        jobs.append(TrainingJob(described, metric_series(metrics, described)))
    return jobs


def metric_series(metrics: Any, described: dict[str, Any]) -> list[tuple[str, float, int]]:
    """Every metric of the job (its definitions' and final metrics' names) by iteration, from BatchGetMetrics:
    ``(name, value, iteration)``; a metric whose query did not complete is left out."""
    names = sorted(
        {item["Name"] for item in (described.get("AlgorithmSpecification") or {}).get("MetricDefinitions", [])}
        | {item["MetricName"] for item in described.get("FinalMetricDataList", [])}
    )
    series: list[tuple[str, float, int]] = []
    for part in chunks(names, MAX_QUERIES):
        queries = [
            {
                "MetricName": name,
                "ResourceArn": described["TrainingJobArn"],
                "MetricStat": "Avg",
                "Period": "IterationNumber",
                "XAxisType": "IterationNumber",
            }
            for name in part
        ]
        with aws.call(f"BatchGetMetrics {described['TrainingJobName']}"):
            results = metrics.batch_get_metrics(MetricQueries=queries)["MetricQueryResults"]
        for name, result in zip(part, results, strict=True):
            if result.get("Status") == "Complete":
                x_values, values = result.get("XAxisValues", []), result.get("MetricValues", [])
                series += [(name, value, int(x)) for x, value in zip(x_values, values, strict=True)]
    return series


def _timestamp(described: dict[str, Any]) -> int:
    """Every metric point's timestamp: the execution's creation time, so that a point sent twice is stored once."""
    return _millis(described.get("CreationTime")) or 0


def _millis(value: Any) -> int | None:
    return int(value.timestamp() * 1000) if isinstance(value, datetime) else None


class Existing:
    """The runs an execution was forwarded as before, read from the store so that forwarding it again updates them:
    its parent run (by the ``llpipe.execution_arn`` tag), a run's children by name, a run's params."""

    def __init__(self, client: Any, experiment_id: str) -> None:
        self.client = client
        self.experiment_id = experiment_id
        self.params: dict[str, dict[str, str]] = {}  # run id -> its params, for the runs found here

    def parent(self, arn: str) -> str | None:
        """The oldest parent run tagged with the execution's ARN, or None when it was never forwarded."""
        runs = self._search(f"tags.`llpipe.execution_arn` = '{arn}'")
        parents = [run for run in runs if "mlflow.parentRunId" not in run.data.tags]
        return self._keep(min(parents, key=lambda run: run.info.start_time or 0)) if parents else None

    def children(self, run_id: str) -> dict[str, str]:
        """The runs nested under ``run_id`` by name (the oldest of a name)."""
        found: dict[str, Any] = {}
        runs = self._search(f"tags.`mlflow.parentRunId` = '{run_id}'")
        for run in sorted(runs, key=lambda run: run.info.start_time or 0):
            found.setdefault(run.info.run_name, run)
        return {name: self._keep(run) for name, run in found.items()}

    def new_params(self, run_id: str, params: dict[str, str]) -> dict[str, str]:
        """``params`` less those the run already has (MLflow refuses to change a param's value)."""
        logged = self.params.get(run_id, {})
        return {name: value for name, value in params.items() if metric_key(name) not in logged}

    def _keep(self, run: Any) -> str:
        self.params[run.info.run_id] = dict(run.data.params)
        return str(run.info.run_id)

    def _search(self, filter_string: str) -> list[Any]:
        runs: list[Any] = []
        token = None
        while True:
            page = self.client.search_runs(
                [self.experiment_id], filter_string=filter_string, max_results=1000, page_token=token
            )
            runs += list(page)
            token = page.token
            if not token:
                return runs


def _write(
    client: Any,
    experiment_id: str,
    arn: str,
    described: dict[str, Any],
    parameters: dict[str, str],
    steps: list[dict[str, Any]],
    jobs: dict[str, list[TrainingJob]],
) -> str:
    """The parent run and a child per step (and per trial of a Tuning step); returns the parent's id."""
    writer = RunWriter(client, experiment_id, _timestamp(described))
    description = described.get("PipelineExecutionDescription") or ""
    tags = {
        "llpipe.pipeline": arn.split(":pipeline/", 1)[1].split("/", 1)[0],
        "llpipe.execution_id": arn.rsplit("/", 1)[-1],
        "llpipe.execution_arn": arn,
        "llpipe.data_version": parameters.get("DataVersion", ""),
        "llpipe.source": "schedule" if description.startswith(SCHEDULED_BY) else "sagemaker",
        "llpipe.status": described.get("PipelineExecutionStatus", ""),
    }
    packages = [((step.get("Metadata") or {}).get("RegisterModel") or {}).get("Arn") for step in steps]
    if any(packages):  # as a local run's parent names its version (pipeline.api.tracking)
        tags["llpipe.model_package_arn"] = next(package for package in packages if package)
    runs = Existing(client, experiment_id)
    parent = runs.parent(arn)
    if parent is None:
        parent = writer.start(arn.rsplit("/", 1)[-1], _millis(described.get("CreationTime")), tags)
    else:
        writer.batch(parent, {}, {}, tags)
    hyperparameters = next((group[0].described.get("HyperParameters") or {} for group in jobs.values() if group), {})
    params = {**parameters, **{f"linear_learner.{name}": value for name, value in hyperparameters.items()}}
    writer.batch(parent, runs.new_params(parent, params), {})
    children = runs.children(parent)
    for step in steps:
        status = step.get("StepStatus", "")
        step_tags = {"llpipe.step_type": step.get("StepDisplayName") or step["StepName"], "llpipe.step_status": status}
        source = (step.get("CacheHitResult") or {}).get("SourcePipelineExecutionArn")
        if source:
            step_tags["llpipe.cached_from"] = source
        package = ((step.get("Metadata") or {}).get("RegisterModel") or {}).get("Arn")
        if package:
            step_tags["llpipe.model_package_arn"] = package
        if step.get("FailureReason"):
            step_tags["llpipe.failure_reason"] = step["FailureReason"]
        child = children.get(step["StepName"])
        if child is None:
            child = writer.start(step["StepName"], _millis(step.get("StartTime")), step_tags, parent)
        else:
            writer.batch(child, {}, {}, step_tags)
        group = jobs.get(step["StepName"]) or []
        if len(group) == 1 and "TrainingJob" in (step.get("Metadata") or {}):
            _training(writer, runs, child, group[0])
        else:
            trials = runs.children(child) if group else {}
            for job in group:  # a tuning job's trials, nested under its step
                trial = trials.get(job.described["TrainingJobName"]) or writer.start(
                    job.described["TrainingJobName"],
                    _millis(job.described.get("TrainingStartTime")),
                    {"llpipe.step_type": "TrainingJob"},
                    child,
                )
                _training(writer, runs, trial, job)
                writer.end(trial, STATES.get(_job_status(job), "FAILED"), _millis(job.described.get("TrainingEndTime")))
        writer.end(child, STATES.get(status, "FAILED"), _millis(step.get("EndTime")))
    writer.end(parent, STATES.get(described.get("PipelineExecutionStatus", ""), "FAILED"), writer.timestamp_ms)
    return parent


def _job_status(job: TrainingJob) -> str:
    return "Succeeded" if job.described.get("TrainingJobStatus") == "Completed" else "Failed"


def _training(writer: RunWriter, runs: Existing, run_id: str, job: TrainingJob) -> None:
    """A training job's hyperparameters, final metrics (``final/<name>``) and metric series (step = iteration)."""
    described = job.described
    final = [(f"final/{item['MetricName']}", item["Value"], 0) for item in described.get("FinalMetricDataList", [])]
    hyperparameters = {name: str(value) for name, value in (described.get("HyperParameters") or {}).items()}
    writer.batch(
        run_id,
        runs.new_params(run_id, hyperparameters),
        final + job.series,
        {"llpipe.training_job": described["TrainingJobName"], "llpipe.training_job_arn": described["TrainingJobArn"]},
    )
