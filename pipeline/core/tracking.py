"""What every MLflow writer of the project shares: a bounded client, a quick reachability probe, chunked batches and
the link to a run, so that a tracking store that is down costs an execution a one-line warning and a few seconds,
never its outcome (the local logger, :mod:`pipeline.api.tracking`; the SageMaker forwarder,
:mod:`pipeline.sagemaker.mlflow_metrics`)."""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from pipeline.core.errors import LlpipeError
from pipeline.core.names import METRICS_SECTIONS, RAW_BASELINE, SKLEARN_BASELINE

REQUEST_TIMEOUT_SECONDS = 5  # one HTTP request to the tracking server, MLflow's own default is 120
PROBE_TIMEOUT_SECONDS = 3
METADATA_RUN_ID = "mlflow:run-id"  # a model package's customer metadata naming the run that made it
METADATA_EXPERIMENT_ID = "mlflow:experiment-id"
LOCAL_UI = "http://127.0.0.1:5000"  # where `mlflow ui` serves a store that is not a server itself
# the MLflow limits of one log_batch request
MAX_PARAMS_PER_BATCH = 100
MAX_METRICS_PER_BATCH = 1000
DEADLINE_SECONDS = 120.0  # the longest an execution (or ``start --wait``) waits for its logging before going on
_T = TypeVar("_T")


class TrackingUnavailable(LlpipeError):
    """The tracking store cannot be reached or refused a request; the message names the store and why."""


@dataclass(frozen=True)
class MlflowRun:
    """Where an execution's MLflow run is: its id, experiment, store and a link (``ui_command`` serves a store that
    has no UI of its own, e.g. SQLite)."""

    run_id: str
    experiment_id: str
    tracking_uri: str
    url: str
    ui_command: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def is_http(uri: str) -> bool:
    return uri.startswith(("http://", "https://"))


def run_url(tracking_uri: str, experiment_id: str, run_id: str) -> tuple[str, str | None]:
    """(the run's page, the command that serves it or None): a server's own page, else ``mlflow ui``'s."""
    base = tracking_uri.rstrip("/") if is_http(tracking_uri) else LOCAL_UI
    command = None if is_http(tracking_uri) else f"mlflow ui --backend-store-uri {tracking_uri}"
    return f"{base}/#/experiments/{experiment_id}/runs/{run_id}", command


def probe(tracking_uri: str) -> None:
    """Raise :class:`TrackingUnavailable` when an HTTP tracking server does not answer ``/health`` within
    :data:`PROBE_TIMEOUT_SECONDS`; other stores (a database, an ARN) are checked by their first request."""
    if not is_http(tracking_uri):
        return
    try:
        with urllib.request.urlopen(f"{tracking_uri.rstrip('/')}/health", timeout=PROBE_TIMEOUT_SECONDS):
            pass
    except urllib.error.HTTPError as error:
        raise TrackingUnavailable(f"MLflow tracking server {tracking_uri}: /health answered {error.code}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise TrackingUnavailable(f"MLflow tracking server {tracking_uri} cannot be reached ({reason})") from None


@contextmanager
def bounded_requests(tracking_uri: str) -> Iterator[None]:
    """For the duration of the block: MLflow's HTTP client without retries and with a short timeout (its defaults
    retry for minutes), its chatter silenced (database migrations, "View run" lines, the sagemaker-mlflow plugin's
    header warnings for a store that is not an ARN) and, for an ARN, the global tracking URI set to it (the plugin
    signs requests for ``mlflow.get_tracking_uri()``, whatever the client's URI); everything comes back after."""
    settings = {
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
        "MLFLOW_HTTP_REQUEST_TIMEOUT": str(REQUEST_TIMEOUT_SECONDS),
        "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
    }
    saved = {name: os.environ.get(name) for name in settings}
    loggers = [logging.getLogger(name) for name in ("mlflow", "alembic")]
    levels = [logger.level for logger in loggers]
    os.environ.update(settings)
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    previous_uri = None
    if tracking_uri.startswith("arn:"):
        import mlflow

        previous_uri = mlflow.get_tracking_uri()
        mlflow.set_tracking_uri(tracking_uri)
    try:
        yield
    finally:
        if previous_uri is not None:
            import mlflow

            mlflow.set_tracking_uri(previous_uri)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def within_deadline(
    work: Callable[[], _T], what: str, uri: str, on_warning: Callable[[str], None], deadline: float = DEADLINE_SECONDS
) -> _T | None:
    """``work()`` in a thread waited on for at most ``deadline`` seconds: its result, or None and one warning line
    through ``on_warning`` when it failed (a store down, a request refused) or outlived the deadline (then it is left
    to finish on its own, a daemon thread). ``what`` ("execution X") and ``uri`` name it in the warning."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = work()
        except Exception as error:  # noqa: BLE001 - tracking must never fail what it tracks
            outcome["error"] = error

    thread = threading.Thread(target=run, name=f"mlflow-{what}", daemon=True)
    thread.start()
    thread.join(deadline)
    if thread.is_alive():
        on_warning(f"MLflow: logging {what} to {uri} took over {deadline:g} s; not waiting for it")
        return None
    error = outcome.get("error")
    if error is not None:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        on_warning(f"MLflow: {what} not logged to {uri}: {reason}")
        return None
    return outcome["result"]


def chunks(items: Sequence[Any], size: int) -> Iterator[list[Any]]:
    """``items`` in lists of at most ``size`` (MLflow caps a batch's params and metrics)."""
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def metric_key(name: str) -> str:
    """A metric or param name as MLflow accepts it (letters, digits, ``_-. :/`` and spaces): others become ``_``."""
    return "".join(ch if ch.isalnum() or ch in "_-. :/" else "_" for ch in name)


def finite(value: Any) -> float | None:
    """A metric value MLflow stores as is: finite numbers only (a report writes an undefined value as "NaN")."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


class RunWriter:
    """Runs of one experiment through an ``MlflowClient``: parent and child runs, and params, metrics (name ->
    value, or ``(name, value, step)`` series) and tags in MLflow's batch limits; non-finite values are left out."""

    def __init__(self, client: Any, experiment_id: str, timestamp_ms: int) -> None:
        self.client = client
        self.experiment_id = experiment_id
        self.timestamp_ms = timestamp_ms

    def start(self, name: str, start_ms: int | None, tags: dict[str, str], parent: str | None = None) -> str:
        """A new run named ``name``, nested under ``parent`` when given; returns its id."""
        if parent is not None:
            tags = {**tags, "mlflow.parentRunId": parent}
        run = self.client.create_run(self.experiment_id, start_time=start_ms, tags=tags, run_name=name)
        return str(run.info.run_id)

    def end(self, run_id: str, state: str, end_ms: int | None) -> None:
        """``state``: FINISHED, FAILED, KILLED or RUNNING."""
        self.client.set_terminated(run_id, state, end_time=end_ms)

    def batch(
        self,
        run_id: str,
        params: Mapping[str, str],
        metrics: Mapping[str, Any] | Iterable[tuple[str, Any, int]],
        tags: Mapping[str, str] | None = None,
    ) -> None:
        from mlflow.entities import Metric, Param, RunTag

        series = metrics.items() if isinstance(metrics, Mapping) else metrics
        entries = [
            Metric(metric_key(item[0]), float(item[1]), self.timestamp_ms, item[2] if len(item) > 2 else 0)
            for item in series
            if finite(item[1]) is not None
        ]
        items = [Param(metric_key(name), str(value)[:6000]) for name, value in params.items()]
        for part in chunks(items, MAX_PARAMS_PER_BATCH):
            self.client.log_batch(run_id, params=part)
        for part in chunks(entries, MAX_METRICS_PER_BATCH):
            self.client.log_batch(run_id, metrics=part)
        if tags:
            self.client.log_batch(run_id, tags=[RunTag(key, str(value)[:5000]) for key, value in tags.items()])


def experiment_for(client: Any, name: str, artifact_location: str | None = None) -> str:
    """The id of the experiment ``name``, created when missing (one per pipeline unless configured otherwise)."""
    experiment = client.get_experiment_by_name(name)
    if experiment is not None:
        return str(experiment.experiment_id)
    return str(client.create_experiment(name, artifact_location=artifact_location))


def report_metrics(report: dict[str, Any]) -> dict[str, float]:
    """The report's model-quality scalars by name, their standard deviations, the best constant classifier's
    (``<m>_best_constant_classifier``, as the report names it) and the scikit-learn baselines'
    (``sklearn_baseline.<m>``, ``sklearn_raw_columns.<m>``); the gate value as ``gate.<metric>``: the Evaluate child's
    metrics, logged locally or forwarded from SageMaker."""
    metrics: dict[str, Any] = {}
    section = next((report[name] for name in METRICS_SECTIONS.values() if name in report), {})
    for name, entry in section.items():
        if isinstance(entry, dict) and "value" in entry:
            metrics[name] = entry["value"]
            metrics[f"{name}.standard_deviation"] = entry.get("standard_deviation")
    for key, prefix in ((SKLEARN_BASELINE, "sklearn_baseline"), (RAW_BASELINE, "sklearn_raw_columns")):
        baseline = report.get(key) or {}
        baseline_section = next((baseline[name] for name in METRICS_SECTIONS.values() if name in baseline), {})
        for name, entry in baseline_section.items():
            if isinstance(entry, dict) and "value" in entry:
                metrics[f"{prefix}.{name}"] = entry["value"]
    gate = report.get("gate") or {}
    if gate.get("metric"):
        metrics[f"gate.{gate['metric']}"] = gate.get("value")
    return {name: float(value) for name, value in metrics.items() if finite(value) is not None}


def decision_fields(report: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """The Evaluate child's params (``decision.<key>``) and tags (``llpipe.promote``, ``llpipe.gate_metric``)."""

    def text(value: Any) -> str:
        return value if isinstance(value, str) else json.dumps(value, default=str)

    decision = report.get("decision") or {}
    params = {f"decision.{key}": text(value) for key, value in decision.items() if key != "promote"}
    tags = {
        "llpipe.promote": text(decision.get("promote")),
        "llpipe.gate_metric": text((report.get("gate") or {}).get("metric")),
    }
    return params, tags
