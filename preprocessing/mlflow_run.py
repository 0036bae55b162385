"""Preprocess's own MLflow run, logged from inside its job when the step is given a tracking URI and the
execution's parent run (``--mlflow-tracking-uri``, ``--mlflow-parent-run-id``): this host's rows per split, the
columns and their encoding, as the local logger names them (pipeline/api/tracking.py). Each host logs its own part
(``Preprocess``, or ``Preprocess <host>`` when there are several); never fails the job
(containerlib/mlflow_rest.py)."""

from __future__ import annotations

import sys
from typing import Any

from containerlib.mlflow_rest import log_child_run

RUN_NAME = "Preprocess"  # the step's name: the child run the post-execution logger would write


def summary_metrics(summary: dict[str, Any]) -> dict[str, float]:
    """``rows.<split>``, ``rows_read`` and ``rows_dropped`` of this host's summary part."""
    metrics = {f"rows.{split}": rows for split, rows in (summary.get("rows") or {}).items()}
    metrics.update({name: summary.get(name) or 0 for name in ("rows_read", "rows_dropped")})
    return metrics


def summary_params(summary: dict[str, Any]) -> dict[str, str]:
    """The label column, the columns in feature order, the categorical ones and their hashing, the missing policy."""
    categorical = summary.get("categorical") or {}
    return {
        "label_column": str(summary.get("label_column")),
        "feature_dim": str(summary.get("feature_dim")),
        "columns": ", ".join(summary.get("feature_names") or []),
        "categorical_columns": ", ".join(categorical.get("columns") or []),
        "hash_buckets": str(categorical.get("hash_buckets")),
        "missing_policy": str(summary.get("missing_policy")),
        "data_version": str(summary.get("data_version")),
    }


def log_preprocess(tracking_uri: str, parent_run_id: str, summary: dict[str, Any]) -> str | None:
    """This host's Preprocess child run of ``parent_run_id``; its id, or None after one warning line on stderr."""
    hosts = summary.get("hosts") or []
    name = RUN_NAME if len(hosts) <= 1 else f"{RUN_NAME} {summary.get('host')}"
    tags = {"llpipe.step_type": "Processing", "llpipe.logged_from": "job", "llpipe.host": str(summary.get("host"))}

    def warn(message: str) -> None:
        print(f"preprocess: warning: {message}", file=sys.stderr, flush=True)

    return log_child_run(
        tracking_uri, parent_run_id, name, summary_params(summary), summary_metrics(summary), tags, warn
    )
