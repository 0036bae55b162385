"""Evaluate's own MLflow run, logged from inside its job when the step is given a tracking URI and the execution's
parent run (``--mlflow-tracking-uri``, ``--mlflow-parent-run-id``): the report's metrics as the local logger names
them (pipeline/api/tracking.py), the gate and the decision, where the report is, and ``evaluation.json`` itself as an
artifact (the image has no matplotlib: the plots are drawn from it where llpipe runs). Never fails the job
(containerlib/mlflow_rest.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from containerlib.mlflow_rest import log_child_run
from containerlib.names import DECISION, METRICS_SECTIONS, REPORT_NAME, SKLEARN_BASELINE

RUN_NAME = "Evaluate"  # the step's name: the child run the post-execution logger would write


def report_metrics(report: dict[str, Any]) -> dict[str, float]:
    """Every model-quality scalar of the report with its standard deviation (``<m>.standard_deviation``), the
    scikit-learn baseline's (``sklearn_baseline.<m>``) and the gate value (``gate.<metric>``)."""
    metrics: dict[str, float] = {}
    section = next((report[name] for name in METRICS_SECTIONS.values() if name in report), {})
    for name, entry in section.items():
        if isinstance(entry, dict) and "value" in entry:
            metrics[name] = entry["value"]
            if entry.get("standard_deviation") is not None:
                metrics[f"{name}.standard_deviation"] = entry["standard_deviation"]
    baseline = report.get(SKLEARN_BASELINE) or {}
    baseline_section = next((baseline[name] for name in METRICS_SECTIONS.values() if name in baseline), {})
    for name, entry in baseline_section.items():
        if isinstance(entry, dict) and "value" in entry:
            metrics[f"sklearn_baseline.{name}"] = entry["value"]
    gate = report.get("gate") or {}
    if gate.get("metric"):
        metrics[f"gate.{gate['metric']}"] = gate.get("value")
    return metrics


def log_evaluation(tracking_uri: str, parent_run_id: str, report: dict[str, Any], output_dir: Path) -> str | None:
    """The Evaluate child run of ``parent_run_id`` with the report as its artifact ``evaluation.json``; its id, or
    None after one warning line on stderr."""
    decision = report.get(DECISION) or {}
    params = {f"decision.{key}": value for key, value in decision.items() if key != "promote"}
    tags = {
        "llpipe.step_type": "Processing",
        "llpipe.logged_from": "job",
        "llpipe.report": str(output_dir / REPORT_NAME),
        "llpipe.gate_metric": str((report.get("gate") or {}).get("metric")),
    }
    if "promote" in decision:
        tags["llpipe.promote"] = "true" if decision["promote"] else "false"

    def warn(message: str) -> None:
        print(f"evaluate: warning: {message}", file=sys.stderr, flush=True)

    artifacts = {REPORT_NAME: output_dir / REPORT_NAME}
    metrics = report_metrics(report)
    return log_child_run(tracking_uri, parent_run_id, RUN_NAME, params, metrics, tags, warn, artifacts=artifacts)
