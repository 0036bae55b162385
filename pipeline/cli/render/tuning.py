"""What a finished Tuning step shows: its trials (hyperparameters, objective, status), its best training job and
the artifact of that job, read from the step's properties (the service's DescribeHyperParameterTuningJob shape)."""

from __future__ import annotations

from typing import Any


def is_tuning(properties: dict[str, Any]) -> bool:
    """Whether a step's properties are a tuning job's."""
    return "TrainingJobSummaries" in properties and "HyperParameterTuningJobConfig" in properties


def objective(properties: dict[str, Any]) -> tuple[str, str]:
    """(metric name, Minimize|Maximize) of the tuning job."""
    spec = properties["HyperParameterTuningJobConfig"]["HyperParameterTuningJobObjective"]
    return spec["MetricName"], spec["Type"]


def trials(properties: dict[str, Any]) -> list[dict[str, Any]]:
    """The training jobs in the order they ran (the summaries are sorted by objective): number, name, status,
    objective value (None when the job gave none), hyperparameters, failure reason."""
    rows = []
    for summary in properties["TrainingJobSummaries"]:
        name = summary["TrainingJobName"]
        rows.append(
            {
                "number": int(name.rsplit("-", 2)[-2]),
                "name": name,
                "status": summary["TrainingJobStatus"],
                "objective": (summary.get("FinalHyperParameterTuningJobObjectiveMetric") or {}).get("Value"),
                "hyperparameters": summary.get("TunedHyperParameters", {}),
                "failure_reason": summary.get("FailureReason"),
            }
        )
    return sorted(rows, key=lambda row: row["number"])


def best_artifact(properties: dict[str, Any]) -> str:
    """The best training job's model artifact: ``<S3OutputPath>/<TrainingJobName>/output/model.tar.gz``."""
    output = properties["TrainingJobDefinition"]["OutputDataConfig"]["S3OutputPath"].rstrip("/")
    return f"{output}/{properties['BestTrainingJob']['TrainingJobName']}/output/model.tar.gz"


def tuning_summary(properties: dict[str, Any]) -> dict[str, Any]:
    """The run summary's tuning section: objective, best job, its value and hyperparameters, trial counts."""
    metric, kind = objective(properties)
    best = properties["BestTrainingJob"]
    rows = trials(properties)
    return {
        "objective": metric,
        "type": kind,
        "best_training_job": best["TrainingJobName"],
        "best_value": best["FinalHyperParameterTuningJobObjectiveMetric"]["Value"],
        "best_hyperparameters": best.get("TunedHyperParameters", {}),
        "training_jobs": len(rows),
        "failed": sum(1 for row in rows if row["objective"] is None),
    }


def trials_table(properties: dict[str, Any], title: str) -> Any:
    """A rich table of the trials in the order they ran, the best marked; the hyperparameters as name=value."""
    from rich.table import Table

    metric, kind = objective(properties)
    best = properties["BestTrainingJob"]["TrainingJobName"]
    rows = trials(properties)
    table = Table(title=f"{title}: {metric} ({kind.lower()}d), best marked *", title_justify="left")
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("objective", justify="right", no_wrap=True)
    table.add_column("hyperparameters", ratio=1)
    for row in rows:
        value = "-" if row["objective"] is None else f"{row['objective']:.4g}"
        marker = "*" if row["name"] == best else ""
        status = {"Completed": "done", "Failed": "failed"}.get(row["status"], row["status"])
        if row["objective"] is None and row["status"] != "Failed":
            status = "no objective"
        settings = " ".join(f"{name}={_short(text)}" for name, text in sorted(row["hyperparameters"].items()))
        table.add_row(f"{marker}{row['number']}", status, value, settings)
    return table


def _short(value: str) -> str:
    """A number in at most 3 significant digits (the full value is in ``--json``); anything else as it is."""
    try:
        number = float(value)
    except ValueError:
        return value
    return value if value.isdigit() else f"{number:.3g}"
