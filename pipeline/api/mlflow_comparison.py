"""Executions side by side as MLflow has them: two (or more) parent runs read from a tracking store, their status,
params, metrics (``value ± standard deviation`` where the run has the deviation) and model package, in the shape
of :func:`pipeline.api.comparison.side_by_side`. What ``compare(..., from_mlflow=True)`` and
``llpipe compare --from-mlflow`` show: runs logged on another machine, forwarded from SageMaker, or whose local
record is gone, compare as well as the work dir's own executions.

A run is named by its MLflow run id or by its execution's id (the parent run's name, ``llpipe.execution_id``). Its
metrics are the parent run's (the report's, for a local run) and the Train child's final metrics
(``final/<name>``, which a run forwarded from SageMaker has where it has no report).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pipeline.core.errors import UsageError, opt
from pipeline.core.tracking import bounded_requests, probe

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RunView", "read_runs", "runs_side_by_side"]

DEVIATION = ".standard_deviation"  # a metric's bootstrap standard deviation, logged beside it
TRAIN = "Train"


@dataclass
class RunView:
    """What one parent run says: its id, name, status, params, metrics and tags (its Train child's ``final/``
    metrics among the metrics)."""

    run_id: str
    name: str
    status: str
    params: dict[str, str]
    metrics: dict[str, float]
    tags: dict[str, str] = field(default_factory=dict)


def read_runs(tracking_uri: str, references: list[str], experiment: str) -> list[RunView]:
    """Each run of ``references`` (run ids or execution ids, the latter looked up in ``experiment``) from the store
    at ``tracking_uri``; a reference that names no run is an error naming it."""
    probe(tracking_uri)
    with bounded_requests(tracking_uri):
        from mlflow import MlflowClient

        client = MlflowClient(tracking_uri=tracking_uri)
        return [_view(client, _parent(client, reference, experiment, tracking_uri)) for reference in references]


def _parent(client: Any, reference: str, experiment: str, tracking_uri: str) -> Any:
    """The run with id ``reference``, else the newest parent run of ``experiment`` named ``reference``."""
    from mlflow.exceptions import MlflowException

    try:
        return client.get_run(reference)
    except MlflowException:
        pass
    found = client.get_experiment_by_name(experiment)
    if found is not None and "'" not in reference:
        runs = client.search_runs(
            [found.experiment_id],
            filter_string=f"attributes.run_name = '{reference}'",
            order_by=["attributes.start_time DESC"],
        )
        parent = next((run for run in runs if "mlflow.parentRunId" not in run.data.tags), None)
        if parent is not None:
            return parent
    raise UsageError(
        f"no MLflow run {reference!r} in {tracking_uri}: give a run id, or an execution id of experiment "
        f"{experiment!r} ({opt('mlflow_experiment')} names another)"
    )


def _view(client: Any, run: Any) -> RunView:
    metrics = dict(run.data.metrics)
    children = client.search_runs(
        [run.info.experiment_id], filter_string=f"tags.`mlflow.parentRunId` = '{run.info.run_id}'"
    )
    for child in children:
        if child.info.run_name == TRAIN:
            metrics.update({name: value for name, value in child.data.metrics.items() if name.startswith("final/")})
    return RunView(
        run.info.run_id,
        run.info.run_name or run.info.run_id,
        run.info.status,
        dict(run.data.params),
        metrics,
        {key: value for key, value in run.data.tags.items() if not key.startswith("mlflow.")},
    )


def runs_side_by_side(runs: list[RunView]) -> pd.DataFrame:
    """A row per item (``status``, ``run``, ``parameter: <name>``, ``metric: <name>``, ``model package``), a
    column per run (headed by its name, the execution id) and ``differs``."""
    import pandas as pd

    if len(runs) < 2:
        raise UsageError(f"compare needs two runs or more, got {len(runs)}")
    names = [run.name for run in runs]
    columns = names if len(set(names)) == len(names) else [f"{name} ({index + 1})" for index, name in enumerate(names)]
    items: dict[str, list[Any]] = {}

    def add(label: str, values: list[Any]) -> None:
        items[label] = [*values, len({str(value) for value in values}) > 1]

    add("status", [run.status for run in runs])
    add("run", [run.run_id for run in runs])
    for name in sorted(set().union(*(run.params for run in runs))):
        add(f"parameter: {name}", [run.params.get(name, "") for run in runs])
    metric_names = sorted({name for run in runs for name in run.metrics if not name.endswith(DEVIATION)})
    for name in metric_names:
        add(f"metric: {name}", [_metric_text(run.metrics, name) for run in runs])
    add("model package", [run.tags.get("llpipe.model_package_arn", "") for run in runs])
    frame = pd.DataFrame.from_dict(items, orient="index", columns=[*columns, "differs"])
    frame.index.name = "item"
    return frame


def _metric_text(metrics: dict[str, float], name: str) -> str:
    if name not in metrics:
        return ""
    deviation = metrics.get(f"{name}{DEVIATION}")
    value = metrics[name]
    return f"{value:.4f}" if deviation is None else f"{value:.4f} ± {deviation:.4f}"
