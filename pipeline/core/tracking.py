"""What every MLflow writer of the project shares: a bounded client, a quick reachability probe, chunked batches and
the link to a run, so that a tracking store that is down costs an execution a one-line warning and a few seconds,
never its outcome (the local logger, :mod:`pipeline.api.tracking`; the SageMaker forwarder,
:mod:`pipeline.sagemaker.mlflow_metrics`)."""

from __future__ import annotations

import logging
import os
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

REQUEST_TIMEOUT_SECONDS = 5  # one HTTP request to the tracking server, MLflow's own default is 120
PROBE_TIMEOUT_SECONDS = 3
LOCAL_UI = "http://127.0.0.1:5000"  # where `mlflow ui` serves a store that is not a server itself
# the MLflow limits of one log_batch request
MAX_PARAMS_PER_BATCH = 100
MAX_METRICS_PER_BATCH = 1000


class TrackingUnavailable(Exception):
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
def bounded_requests() -> Iterator[None]:
    """MLflow's HTTP client without retries and with a short timeout (its defaults retry for minutes), and its
    INFO chatter (database migrations) silenced, for the duration of the block; the previous values come back."""
    settings = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": str(REQUEST_TIMEOUT_SECONDS)}
    saved = {name: os.environ.get(name) for name in settings}
    loggers = [logging.getLogger(name) for name in ("mlflow", "alembic")]
    levels = [logger.level for logger in loggers]
    os.environ.update(settings)
    for logger in loggers:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def chunks(items: Sequence[Any], size: int) -> Iterator[list[Any]]:
    """``items`` in lists of at most ``size`` (MLflow caps a batch's params and metrics)."""
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def metric_key(name: str) -> str:
    """A metric or param name as MLflow accepts it (letters, digits, ``_-. :/`` and spaces): others become ``_``."""
    return "".join(ch if ch.isalnum() or ch in "_-. :/" else "_" for ch in name)
