"""An execution as HTML, what Jupyter shows for it: status, steps, the DAG with each step's status (inline SVG),
metrics, gate, model package or failure, and the plots inline as PNG. It reads an execution and imports none (so
``Execution._repr_html_`` can use it)."""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.api.execution import Execution

__all__ = ["baseline_sentence", "execution_html", "scaling_html", "steps_html"]


def _table(frame: Any, float_format: str = "{:.4f}") -> str:
    return frame.to_html(na_rep="", float_format=float_format.format, border=0, classes="llpipe")


def _image(path: Path) -> str:
    encoded = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    title = html.escape(Path(path).stem.replace("_", " "))
    return (
        f'<figure style="display:inline-block;margin:4px"><img src="data:image/png;base64,{encoded}" '
        f'alt="{title}" width="320"/><figcaption>{title}</figcaption></figure>'
    )


def baseline_sentence(baseline: dict[str, Any]) -> str:
    """One sentence: Linear Learner beside the scikit-learn baseline on the gate metric (same test split)."""
    metric, value, ours = baseline["metric"], baseline["value"], baseline["linear_learner_value"]
    text = (
        f"{baseline.get('name', 'Baseline')} ({baseline['model']}, {baseline['train_records']} train records): "
        f"{metric} = {value:.4f}; Linear Learner {ours:.4f}"
    )
    if baseline["below_baseline"]:
        return text + f": BELOW the baseline by {-baseline['difference']:.4f}"
    return text + ": at or above the baseline"


def steps_html(title: str, steps: Any) -> str:
    """A title line and the steps table."""
    return f"<p><b>{html.escape(title)}</b></p>{_table(steps, '{:.1f}')}"


def scaling_html(records: list[dict[str, Any]]) -> list[str]:
    """Each training job's scaling line and its hosts' table."""
    import pandas as pd

    from pipeline.core.scaling import HOST_COLUMNS, ScalingRecord, host_rows, summary_line

    parts = []
    for data in records:
        record = ScalingRecord.from_dict(data)
        parts.append(f"<p><b>Scaling of {html.escape(record.job)}</b>: {html.escape(summary_line(record))}</p>")
        parts.append(_table(pd.DataFrame(host_rows(record), columns=HOST_COLUMNS)))
    return parts


def _dag(execution: Execution) -> str:
    """The DAG picture as inline SVG; a line saying why when it cannot be drawn (the rest of the view still shows)."""
    from pipeline.core.errors import LlpipeError

    try:
        return f"<div>{execution.dag.svg()}</div>"
    except LlpipeError as error:
        return f"<p>The DAG is not drawn: {html.escape(str(error))}</p>"


def execution_html(execution: Execution) -> str:
    """The execution as HTML: status, steps, the DAG, metrics, gate, the largest coefficients, model package, its
    MLflow run's link, or the failure, and the plots as PNGs."""
    colour = "green" if execution.succeeded else ("red" if execution.status in ("Failed", "Stopped") else "orange")
    parts = [
        f"<h4>Execution {html.escape(execution.id)} ({execution.backend}): "
        f'<span style="color:{colour}">{html.escape(execution.status)}</span></h4>',
        _table(execution.steps, "{:.1f}"),
        _dag(execution),
    ]
    metrics = execution.metrics
    if not metrics.empty:
        parts += ["<p><b>Model quality on the test split</b></p>", _table(metrics)]
    gate = execution.gate
    if gate:
        verdict = {True: "passed", False: "failed", None: "not evaluated"}[gate["passed"]]
        parts.append(
            f"<p>Quality gate: {html.escape(str(gate['metric']))} = {gate['value']} vs threshold "
            f"{gate['threshold']}: <b>{verdict}</b></p>"
        )
    baseline = execution.baseline
    if baseline:
        parts.append(f"<p>{html.escape(baseline_sentence(baseline))}</p>")
    coefficients = execution.coefficients()
    if not coefficients.empty:  # the largest 10 and the bias; coefficients() has them all
        shown = coefficients.iloc[[*range(min(10, len(coefficients) - 1)), len(coefficients) - 1]]
        parts += ["<p><b>Coefficients</b> (largest standardised weights, and the bias)</p>", _table(shown)]
    package = execution.model_package
    if package:
        parts.append(f"<p>Registered: {html.escape(str(package.get('arn')))}</p>")
    run = execution.mlflow_run
    if run is not None:
        served = f" (after <code>{html.escape(run.ui_command)}</code>)" if run.ui_command else ""
        parts.append(
            f'<p>MLflow run: <a href="{html.escape(run.url)}" target="_blank">{html.escape(run.run_id)}</a>{served}</p>'
        )
    if execution.backend == "local":  # on SageMaker the record costs four more services' calls: .scaling asks
        parts += scaling_html(execution.scaling)
    if execution.failure_reason:
        parts.append(f'<p style="color:red">Failure: {html.escape(execution.failure_reason)}</p>')
    plots = execution.plots
    if plots:
        parts.append("<div>" + "".join(_image(path) for path in plots) + "</div>")
    return "\n".join(parts)
