"""Every local execution in MLflow: one parent run per execution, a child run per step, written AFTER the execution
from its record (``executions/<id>/``) and the local S3 folder, so tracking can never change an execution's outcome.

The parent run is named by the execution id and carries the pipeline parameters, the Linear Learner hyperparameters
as the algorithm resolved them (``linear_learner.<name>``), the report's metrics and tags (pipeline, execution ARN,
data version, source, code version). Children: Preprocess (rows per split, columns and their encoding), Train
(per-epoch ``train:objective_loss`` / ``validation:objective_loss`` series with step=epoch, the final metrics as
``final/<the service's name>``, the scaling record as ``scaling.*``), a Tuning step's trials (nested under it),
Evaluate (every report metric, the baselines', the decision, ``evaluation.json`` and the plots), DataQuality
(violations), Register (the model package, whose customer metadata names the parent run back: ``mlflow:run-id``),
and the others by status. A cached step's child run is tagged ``llpipe.cached_from``. The run's link is kept in
``executions/<id>/mlflow.json``.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.core.names import (
    DATA_QUALITY,
    EVALUATE,
    PREPROCESS,
    REGISTER,
    StepStatus,
)
from pipeline.core.tracking import (
    DEADLINE_SECONDS,
    METADATA_EXPERIMENT_ID,
    METADATA_RUN_ID,
    MlflowRun,
    RunWriter,
    bounded_requests,
    decision_fields,
    experiment_for,
    is_http,
    probe,
    report_metrics,
    run_url,
    within_deadline,
)

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from pipeline.api.execution import LocalExecution
    from pipeline.definition.config import PipelineConfig
    from pipeline.local.executions import StepRecord
    from pipeline.local.workdir import Workdir

RUN_FILE = "mlflow.json"  # executions/<id>/mlflow.json: the execution's run, once logged
_EPOCH_LOSS = re.compile(r"#quality_metric: host=(\S+), epoch=(\d+), (train|validation) \S+ <loss>=(\S+)")
_FINAL_CONFIGURATION = "Final configuration: "
# a step's status as an MLflow run's state (a skipped branch, a stopped step: KILLED)
MLFLOW_STATES = {
    StepStatus.SUCCEEDED: "FINISHED",
    StepStatus.EXECUTING: "RUNNING",
    StepStatus.SKIPPED: "KILLED",
    StepStatus.STOPPED: "KILLED",
}


def default_tracking_uri(workdir: Workdir) -> str:
    """The work dir's own SQLite store (MLflow's default backend since 3.7; its file store is deprecated)."""
    return f"sqlite:///{workdir.root / 'mlflow.db'}"


def tracking_uri_of(config: PipelineConfig, workdir: Workdir) -> str | None:
    """Where local executions are logged: the configured URI (``--tracking-uri``, ``MLFLOW_TRACKING_URI``, the
    config file), else the work dir's SQLite store; None when tracking is off."""
    if not config.mlflow_tracking:
        return None
    return config.mlflow_tracking_uri or default_tracking_uri(workdir)


def logged_run(folder: Path) -> MlflowRun | None:
    """The run an execution was logged as (``mlflow.json`` in its folder), None when it was not. A work dir's own
    SQLite store named by the absolute path it had when the run was logged is named where the work dir is now (a
    copied or moved work dir reads its own store, as its records read their own logs)."""
    path = folder / RUN_FILE
    if not path.is_file():
        return None
    document = json.loads(path.read_text())
    uri = str(document.get("tracking_uri") or "")
    root = folder.parent.parent  # <workdir>/executions/<id>
    if uri.startswith("sqlite:///"):
        stored = Path(uri.removeprefix("sqlite:///"))
        moved = root / stored.name
        original = not stored.is_file() or (stored.parent / "executions" / folder.name).is_dir()  # its old work dir
        if stored.parent != root and moved.is_file() and original:
            document = {
                key: value.replace(str(stored), str(moved)) if isinstance(value, str) else value
                for key, value in document.items()
            }
    return MlflowRun(**document)


def track(
    execution: LocalExecution,
    config: PipelineConfig,
    workdir: Workdir,
    on_warning: Callable[[str], None],
    deadline: float = DEADLINE_SECONDS,
) -> MlflowRun | None:
    """Log ``execution`` unless tracking is off; any failure (a store down, a request refused) is one warning
    through ``on_warning`` and None, and the caller waits at most ``deadline`` seconds."""
    uri = tracking_uri_of(config, workdir)
    if uri is None:
        return None
    return within_deadline(
        lambda: log_execution(execution, config, workdir, uri), f"execution {execution.id}", uri, on_warning, deadline
    )


def log_execution(execution: LocalExecution, config: PipelineConfig, workdir: Workdir, uri: str) -> MlflowRun:
    """Write the execution's parent run and its children to the store at ``uri``, link the registered version, and
    record the run in the execution's folder; raises ``TrackingUnavailable`` (:mod:`pipeline.core.tracking`) or
    MLflow's own error on failure."""
    probe(uri)
    with bounded_requests(uri):
        from mlflow import MlflowClient

        seed_sqlite_store(uri)
        client = MlflowClient(tracking_uri=uri)
        experiment_id = experiment_for(client, config.experiment_name, artifact_root(uri, workdir))
        run = _Logger(client, experiment_id, execution, config).log()
    url, command = run_url(uri, experiment_id, run)
    logged = MlflowRun(run, experiment_id, uri, url, command)
    (execution.record.folder / RUN_FILE).write_text(json.dumps(logged.to_dict(), indent=2) + "\n")
    link_model_package(execution, workdir, logged)
    return logged


def seed_sqlite_store(uri: str) -> None:
    """A SQLite store that does not exist yet starts as a copy of an empty one kept in the user cache
    (``mlflow/empty-<MLflow version>.db``: MLflow's tables at its schema's head revision and no experiment) instead
    of MLflow creating its tables and running its migrations in every fresh work dir (about 1.3 CPU-s). The copy is
    what MLflow's SQLAlchemy store builds itself (``_initialize_tables``, the function it calls on an empty
    database); on first use it checks the schema's revision and adds its Default experiment, as it does to a new
    database. Any failure leaves the store to MLflow, as before."""
    if not uri.startswith("sqlite:///"):
        return
    target = Path(uri[len("sqlite:///") :])
    if target.exists() or not target.parent.is_dir():
        return
    copy = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    try:
        shutil.copyfile(_empty_store(), copy)
        os.link(copy, target)  # never over a store another process has just made
    except Exception:  # noqa: BLE001, S110 - a template that cannot be made or copied: MLflow makes the store
        pass
    finally:
        with contextlib.suppress(OSError):
            copy.unlink(missing_ok=True)


def _empty_store() -> Path:
    """The user cache's empty store for this MLflow version, made once (atomically: concurrent makers each write
    their own file and the last rename wins, all of them equal)."""
    from mlflow.store.db.utils import _initialize_tables, create_sqlalchemy_engine
    from mlflow.version import VERSION

    from pipeline.core.files import atomic_path, user_cache_dir

    template = user_cache_dir() / "mlflow" / f"empty-{VERSION}.db"
    if template.is_file():
        return template
    with atomic_path(template) as building:
        engine = create_sqlalchemy_engine(f"sqlite:///{building}")
        try:
            _initialize_tables(engine)
        finally:
            engine.dispose()
    return template


def artifact_root(uri: str, workdir: Workdir) -> str | None:
    """Where a new experiment keeps its artifacts: beside a SQLite store (MLflow's default is ``./mlruns`` of the
    current directory, wherever that is); a server decides for itself (None)."""
    if uri.startswith("sqlite:///"):
        database = Path(uri[len("sqlite:///") :])
        return (database.parent / "mlartifacts").resolve().as_uri()
    return None if is_http(uri) else (workdir.root / "mlartifacts").as_uri()


def link_model_package(execution: LocalExecution, workdir: Workdir, run: MlflowRun) -> None:
    """The registered version names its run back: customer metadata ``mlflow:run-id`` and ``mlflow:experiment-id``
    (UpdateModelPackage's CustomerMetadataProperties on SageMaker)."""
    package = execution.model_package
    if not package or not package.get("arn"):
        return
    from pipeline.local.registry import LocalRegistry

    LocalRegistry(workdir.registry_db).update_customer_metadata(
        package["arn"], {METADATA_RUN_ID: run.run_id, METADATA_EXPERIMENT_ID: run.experiment_id}
    )


def code_version() -> str:
    """``git describe`` of the source tree this package runs from, else the installed package's version."""
    source = Path(__file__).resolve().parents[2]
    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--tags"],
            cwd=source,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        if described:
            return f"git:{described}"
    except (OSError, subprocess.SubprocessError):
        pass
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"llpipe {version('llpipe')}"
    except PackageNotFoundError:
        return "unknown"


def _millis(timestamp: str | None) -> int | None:
    return int(datetime.fromisoformat(timestamp).timestamp() * 1000) if timestamp else None


def _in_feature_order(encodings: dict[str, Any], summary: dict[str, Any]) -> dict[str, Any]:
    """The summary's encodings (written with sorted keys) in the model's column order: by each column's first
    feature name's place in ``feature_names``."""
    from containerlib.encoding import ColumnEncoding

    names = {name: index for index, name in enumerate(summary.get("feature_names") or [])}

    def place(column: str) -> int:
        return names.get(ColumnEncoding.from_json(column, encodings[column]).feature_names()[0], len(names))

    return {column: encodings[column] for column in sorted(encodings, key=place)}


def _encoding_text(encoding: dict[str, Any]) -> str:
    """A column's encoding in words (the summary's ``categorical.encodings`` entry)."""
    kind = encoding.get("kind")
    if kind == "one_hot":
        text = f"categorical, one-hot: {len(encoding.get('values') or [])} values and (other)"
    elif kind == "hashed":
        text = f"categorical, hashed into {encoding.get('buckets')} buckets"
    else:
        text = "numeric"
    if encoding.get("fill") is not None:
        text += f", gaps filled with {encoding['fill']:g}"
    return text + (", a (missing) feature" if encoding.get("indicator") else "")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


class _Logger:
    """Writes one execution: the parent run, then a child per step."""

    def __init__(
        self, client: MlflowClient, experiment_id: str, execution: LocalExecution, config: PipelineConfig
    ) -> None:
        self.client = client
        self.writer = RunWriter(client, experiment_id, _millis(execution.record.end_time) or 0)
        self.execution = execution
        self.record = execution.record
        self.config = config

    def log(self) -> str:
        record = self.record
        account = self.config.role_arn.split(":")[4]
        arn = f"arn:aws:sagemaker:{self.config.region}:{account}:pipeline/{record.pipeline_name}/execution/{record.id}"
        tags = {
            "llpipe.pipeline": record.pipeline_name,
            "llpipe.execution_id": record.id,
            "llpipe.execution_arn": arn,
            "llpipe.data_version": str(record.parameters.get("DataVersion") or ""),
            "llpipe.source": "local",
            "llpipe.code_version": code_version(),
            "llpipe.status": str(record.status),
        }
        if record.failure_reason:
            tags["llpipe.failure_reason"] = record.failure_reason[:5000]
        package = self.execution.model_package
        if package and package.get("arn"):
            tags["llpipe.model_package_arn"] = str(package["arn"])
        parent = self._start(record.id, record.start_time, tags)
        params = {name: _text(value) for name, value in record.parameters.items()}
        params.update({f"linear_learner.{name}": value for name, value in self._resolved_hyperparameters().items()})
        metrics = self._report_metrics()
        self._batch(parent, params, metrics)
        for step in record.steps.values():
            self._step(parent, step)
        self._end(parent, record.status, record.end_time)
        return parent

    def _start(self, name: str, start_time: str | None, tags: dict[str, str], parent: str | None = None) -> str:
        return self.writer.start(name, _millis(start_time), tags, parent)

    def _end(self, run_id: str, status: str, end_time: str | None) -> None:
        self.writer.end(run_id, MLFLOW_STATES.get(status, "FAILED"), _millis(end_time))

    def _batch(
        self,
        run_id: str,
        params: dict[str, str],
        metrics: dict[str, Any] | list[tuple[str, Any, int]],
        tags: dict[str, str] | None = None,
    ) -> None:
        self.writer.batch(run_id, params, metrics, tags)

    # ------------------------------------------------------------------------------------------------------- steps

    def _step(self, parent: str, step: StepRecord) -> None:
        tags = {"llpipe.step_type": step.type, "llpipe.step_status": str(step.status)}
        if step.cache_hit_source:
            tags["llpipe.cached_from"] = step.cache_hit_source
        if step.failure_reason:
            tags["llpipe.failure_reason"] = step.failure_reason[:5000]
        if step.detail:
            tags["llpipe.detail"] = step.detail[:5000]
        child = self._start(step.name, step.start_time, tags, parent)
        if step.status == StepStatus.SUCCEEDED:
            if step.name == PREPROCESS:
                self._preprocess(child, step)
            elif step.name == EVALUATE:
                self._evaluate(child)
            elif step.name == DATA_QUALITY:
                self._data_quality(child)
            elif step.name == REGISTER:
                self._register(child, step)
            elif "TrainingJobSummaries" in step.properties:
                self._tuning(child, step)
            elif step.type == "Training":
                self._training(child, step.properties, self._logs(step), self._scaling(step))
        self._end(child, step.status, step.end_time)

    def _preprocess(self, run_id: str, step: StepRecord) -> None:
        """Rows per split summed over the hosts' summaries, and every column with its encoding."""
        outputs = (step.properties.get("ProcessingOutputConfig") or {}).get("Outputs") or []
        uri = next((o["S3Output"]["S3Uri"] for o in outputs if o.get("OutputName") == "summary"), None)
        folder = self.execution.s3.path(uri) if uri else None
        # one part per host (summary-<host>.json); a single host writes the merged summary.json beside its part
        summaries = [json.loads(p.read_text()) for p in sorted(folder.glob("summary-*.json"))] if folder else []
        if not summaries:
            return
        metrics: dict[str, float] = {}
        for summary in summaries:
            for split, rows in (summary.get("rows") or {}).items():
                metrics[f"rows.{split}"] = metrics.get(f"rows.{split}", 0) + rows
            for name in ("rows_read", "rows_dropped"):
                metrics[name] = metrics.get(name, 0) + (summary.get(name) or 0)
        first = summaries[0]
        categorical = (first.get("categorical") or {}).get("columns") or []
        hashing = (first.get("categorical") or {}).get("hash_buckets")
        encodings = _in_feature_order((first.get("categorical") or {}).get("encodings") or {}, first)
        columns = {column: _encoding_text(encoding) for column, encoding in encodings.items()} or {
            name: f"categorical, hashed into {hashing} buckets" if name in categorical else "numeric"
            for name in first.get("feature_names") or []
        }
        params = {
            "label_column": _text(first.get("label_column")),
            "feature_dim": _text(first.get("feature_dim")),
            "columns": ", ".join(columns),
            "categorical_columns": ", ".join(categorical),
            "missing_policy": _text(first.get("missing_policy")),
            "data_version": _text(first.get("data_version")),
        }
        self._batch(run_id, params, metrics)
        self.client.log_dict(run_id, {"columns": columns, "label_mapping": first.get("label_mapping")}, "columns.json")
        for path in sorted(folder.glob("*.json")) if folder else []:
            self.client.log_artifact(run_id, str(path), "summary")

    def _training(
        self, run_id: str, properties: dict[str, Any], logs: list[Path], scaling: list[dict[str, Any]]
    ) -> None:
        """Hyperparameters, the per-epoch losses (step=epoch), the final metrics and the scaling record."""
        params = {name: str(value) for name, value in (properties.get("HyperParameters") or {}).items()}
        final = {item["MetricName"]: item["Value"] for item in properties.get("FinalMetricDataList") or []}
        series = [(f"final/{name}", value, 0) for name, value in final.items()]
        series += epoch_losses(logs)
        for job in scaling:
            series += [
                (f"scaling.{key}", job[key], 0) for key in ("throughput", "sync_share", "imbalance", "instances")
            ]
            for host in job.get("hosts") or []:
                for key in ("records_per_second", "sync_seconds", "records"):
                    series.append((f"scaling.{host['host']}.{key}", host.get(key), 0))
        self._batch(run_id, params, series, {"llpipe.training_job": str(properties.get("TrainingJobName", ""))})
        if scaling:
            self.client.log_dict(run_id, scaling, "scaling.json")

    def _tuning(self, run_id: str, step: StepRecord) -> None:
        """The tuning job's objective, then a child run per trial (its training job, as Train's child is logged)."""
        objective = step.properties["HyperParameterTuningJobConfig"]["HyperParameterTuningJobObjective"]
        best = step.properties.get("BestTrainingJob") or {}
        self._batch(
            run_id,
            {"objective": objective["MetricName"], "objective_type": objective["Type"]},
            {"best_objective": (best.get("FinalHyperParameterTuningJobObjectiveMetric") or {}).get("Value")},
            {"llpipe.best_training_job": str(best.get("TrainingJobName", ""))},
        )
        folder = self.record.folder / "steps" / step.name / "training-jobs"
        scaling = {record.get("job"): record for record in step.scaling}
        for summary in step.properties.get("TrainingJobSummaries") or []:
            name = summary["TrainingJobName"]
            tags = {"llpipe.step_type": "TrainingJob", "llpipe.trial_status": summary.get("TrainingJobStatus", "")}
            if summary.get("FailureReason"):
                tags["llpipe.failure_reason"] = summary["FailureReason"][:5000]
            trial = self._start(name, summary.get("TrainingStartTime"), tags, run_id)
            described_path = folder / name / "training-job.json"
            described = json.loads(described_path.read_text()) if described_path.is_file() else {}
            logs = sorted((folder / name / "logs").glob("*.log"))
            job_scaling = [scaling[name]] if name in scaling else []
            self._training(
                trial, described or {"HyperParameters": summary.get("TunedHyperParameters")}, logs, job_scaling
            )
            self._batch(trial, {}, {}, {"llpipe.tuned": json.dumps(summary.get("TunedHyperParameters") or {})})
            status = StepStatus.SUCCEEDED if summary.get("TrainingJobStatus") == "Completed" else StepStatus.FAILED
            self._end(trial, status, summary.get("TrainingEndTime"))

    def _evaluate(self, run_id: str) -> None:
        """Every metric of the report, the baselines' (``best_constant_classifier.<m>``, ``sklearn_baseline.<m>``),
        the gate and decision; ``evaluation.json`` and the plots as artifacts."""
        report = self.execution.report
        if report is None:
            return
        params, tags = decision_fields(report)
        self._batch(run_id, params, self._report_metrics(), tags)
        path = self.execution.report_path
        if path is not None:
            self.client.log_artifact(run_id, str(path))
        for plot in self.execution.plots:
            self.client.log_artifact(run_id, str(plot), "plots")

    def _data_quality(self, run_id: str) -> None:
        view = self.execution.data_quality
        if not view:
            return
        violations = view.get("violations")
        metrics = {"item_count": view.get("item_count"), "features": len(view.get("features") or [])}
        if violations is not None:
            metrics["violations"] = len(violations)
            self.client.log_dict(run_id, violations, "violations.json")
        tags = {
            "llpipe.check_skipped": _text(view.get("skipped")),
            "llpipe.checked_against": _text(view.get("checked_against")),
        }
        self._batch(run_id, {}, metrics, tags)

    def _register(self, run_id: str, step: StepRecord) -> None:
        package = self.execution.model_package or {}
        params = {f"model_package.{key}": _text(value) for key, value in package.items()}
        self._batch(run_id, params, {}, {"llpipe.model_package_arn": _text(package.get("arn"))})

    # ------------------------------------------------------------------------------------------------------- reads

    def _report_metrics(self) -> dict[str, float]:
        return report_metrics(self.execution.report or {})

    def _logs(self, step: StepRecord) -> list[Path]:
        """The step's host logs; for a cached step, those of the execution it came from."""
        logs = [Path(path) for path in step.logs if Path(path).is_file()]
        if logs or not step.cache_hit_source:
            return logs
        source = step.cache_hit_source.rsplit("/", 1)[-1]
        folder = self.record.folder.parent / source / "steps" / step.name / "logs"
        return sorted(folder.glob("*.log"))

    def _scaling(self, step: StepRecord) -> list[dict[str, Any]]:
        """The step's scaling records; for a cached step, those of the execution that ran its job."""
        if step.scaling or not step.cache_hit_source:
            return step.scaling
        source = self.record.folder.parent / step.cache_hit_source.rsplit("/", 1)[-1] / "execution.json"
        if not source.is_file():
            return []
        steps = json.loads(source.read_text()).get("steps", [])
        return next((item.get("scaling") or [] for item in steps if item.get("name") == step.name), [])

    def _resolved_hyperparameters(self) -> dict[str, str]:
        """The Linear Learner hyperparameters as the algorithm resolved them (its ``Final configuration`` line)."""
        for step in self.record.steps.values():
            if step.type != "Training":
                continue
            for path in self._logs(step)[:1]:
                for line in path.read_text(errors="replace").splitlines():
                    if _FINAL_CONFIGURATION in line:
                        resolved = ast.literal_eval(line.split(_FINAL_CONFIGURATION, 1)[1])
                        return {str(name): str(value) for name, value in resolved.items()}
        return {}


def epoch_losses(logs: list[Path]) -> list[tuple[str, float, int]]:
    """``(train:objective_loss | validation:objective_loss, value, epoch)`` from the first host's
    ``#quality_metric`` lines (the hosts train one model in step, so every host logs the same losses)."""
    series: list[tuple[str, float, int]] = []
    for path in sorted(logs)[:1]:
        for line in path.read_text(errors="replace").splitlines():
            match = _EPOCH_LOSS.search(line)
            if match:
                _, epoch, channel, value = match.groups()
                series.append((f"{channel}:objective_loss", float(value), int(epoch)))
    return series


__all__ = ["default_tracking_uri", "epoch_losses", "log_execution", "logged_run", "track", "tracking_uri_of"]
