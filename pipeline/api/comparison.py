"""Telling executions apart: one summary row per execution (data, the parameters that differ from the defaults,
the gate metric) and two executions side by side (parameters, metrics, gate, model package).

Used by ``pipeline.executions``/``pipeline.compare`` (the API) and by ``llpipe executions``/``llpipe compare``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.core.data_version import PARAMETER as DATA_VERSION
from pipeline.core.names import METRIC_THRESHOLD

if TYPE_CHECKING:
    import pandas as pd

    from pipeline.api.execution import Execution
    from pipeline.definition.config import PipelineConfig

__all__ = [
    "NotComparableWarning",
    "abandoned_reason",
    "baseline_label",
    "changed_parameters",
    "data_label",
    "gate_label",
    "local_defaults",
    "recent_executions",
    "scored_rows_label",
    "scored_rows_warning",
    "side_by_side",
    "summary_row",
]


class NotComparableWarning(UserWarning):
    """Two executions compared were scored on different test rows (or a report cannot say): their metrics are not
    comparable."""


SUMMARY_COLUMNS = ["id", "status", "start_time", "seconds", "data", "parameters", "gate", "failure_reason"]
# shown in the data column, not among the parameters
DATA_PARAMETERS = ("InputDataUrl", DATA_VERSION, "LabelColumn", "PredictorType")


def data_label(parameters: dict[str, Any]) -> str:
    """``breast-cancer-0a1b2c3d4e5f6a7b (label, binary_classifier)``: the input folder's name, which carries its
    data version, the label column and the predictor type."""
    url = str(parameters.get("InputDataUrl", ""))
    name = url.rstrip("/").rsplit("/", 1)[-1] or url
    described = ", ".join(str(parameters[key]) for key in ("LabelColumn", "PredictorType") if parameters.get(key))
    return f"{name} ({described})" if described else name


def changed_parameters(parameters: dict[str, Any], defaults: dict[str, Any]) -> dict[str, str]:
    """The parameters whose value differs from the definition's default (data parameters left out), as text."""
    changed = {}
    for name, value in parameters.items():
        if name in DATA_PARAMETERS:
            continue
        if name not in defaults or str(value) != str(defaults[name]):
            changed[name] = str(value)
    return changed


def gate_label(gate: dict[str, Any] | None) -> str:
    """``auc=0.9931`` (plus `` (failed)`` when the gate failed), or empty without a report."""
    if not gate or gate.get("value") is None:
        return ""
    value = gate["value"]
    text = f"{gate['metric']}={value:.4f}" if isinstance(value, float) else f"{gate['metric']}={value}"
    return text + (" (failed)" if gate.get("passed") is False else "")


def summary_row(
    execution: Execution, defaults: dict[str, Any], start_time: Any, end_time: Any, gate: bool = True
) -> dict[str, Any]:
    """One row of :data:`SUMMARY_COLUMNS` for an execution (``gate=False``: the gate column left empty)."""
    from pipeline.api.execution import seconds_between

    parameters = execution.parameters
    changed = changed_parameters(parameters, defaults)
    return {
        "id": execution.id,
        "status": execution.status,
        "start_time": start_time,
        "seconds": seconds_between(start_time, end_time),
        "data": data_label(parameters),
        "parameters": " ".join(f"{name}={value}" for name, value in changed.items()),
        "gate": gate_label(execution.gate) if gate else "",
        "failure_reason": execution.failure_reason,
    }


def local_defaults(folder: Any) -> dict[str, Any]:
    """Parameter defaults of the definition an execution ran (its ``definition.json``)."""
    path = folder / "definition.json"
    if not path.is_file():
        return {}
    definition = json.loads(path.read_text())
    return {item["Name"]: item.get("DefaultValue") for item in definition.get("Parameters", [])}


def recent_executions(
    workdir: str | Path,
    max_results: int,
    config: PipelineConfig | None = None,
    session: Any = None,
    gate: bool = False,
    on_damaged: Any = None,
) -> list[dict[str, Any]]:
    """Summary rows, newest first: the executions of the work dir at ``workdir``, or the pipeline's on SageMaker
    when ``config``.

    On SageMaker the gate costs three calls per execution (ListPipelineExecutionSteps, DescribeProcessingJob,
    GetObject of the report): it is read only with ``gate=True``; locally it is always read."""
    if config is not None:
        return _sagemaker_rows(config, max_results, session, gate)
    from pipeline.api.execution import LocalExecution
    from pipeline.local.executions import ExecutionStore
    from pipeline.local.reaper import reap_quietly
    from pipeline.local.workdir import Workdir

    rows = []
    where = Workdir.at(Path(workdir))
    reap_quietly(where)
    store = ExecutionStore(where.executions)
    for record in store.list(on_damaged=on_damaged)[:max_results]:
        execution = LocalExecution.in_workdir(record, where)
        row = summary_row(execution, local_defaults(record.folder), record.start_time, record.end_time)
        row["abandoned"] = record.abandoned
        row["failure_reason"] = row["failure_reason"] or abandoned_reason(record)
        rows.append(row)
    return rows


def abandoned_reason(record: Any) -> str | None:
    """Why an execution recorded as running is not: the process that ran it ended without finishing the record."""
    if not record.abandoned:
        return None
    owner = record.owner
    return f"process {owner.get('pid')} on {owner.get('host')} ended without finishing it (killed?)"


def _sagemaker_rows(config: PipelineConfig, max_results: int, session: Any, gate: bool) -> list[dict[str, Any]]:
    from pipeline.api.sagemaker_execution import SageMakerExecution
    from pipeline.sagemaker import aws
    from pipeline.sagemaker.start import deployed_parameters
    from pipeline.sagemaker.wait import TERMINAL_STATUSES, list_executions

    session = session or aws.session(config)
    summaries = list_executions(config, max_results, session=session)[:max_results]
    if not summaries:
        return []
    defaults = {name: item.get("DefaultValue") for name, item in deployed_parameters(config, session).items()}
    rows = []
    for summary in summaries:
        execution = SageMakerExecution(config, summary["PipelineExecutionArn"], session=session)
        finished = summary.get("PipelineExecutionStatus") in TERMINAL_STATUSES
        end_time = summary.get("LastModifiedTime") if finished else None
        row = summary_row(execution, defaults, summary.get("StartTime"), end_time, gate=gate)
        row["arn"] = summary["PipelineExecutionArn"]
        rows.append(row)
    return rows


def side_by_side(first: Execution, second: Execution) -> pd.DataFrame:
    """A row per item (``status``, ``parameter: <name>``, ``metric: <name>``, ``gate``, ``model package``), a
    column per execution (headed by its id) and ``differs``. Metrics read ``value ± standard deviation``."""
    import pandas as pd

    columns = [first.id, second.id] if first.id != second.id else [f"{first.id} (a)", f"{second.id} (b)"]
    items: dict[str, list[Any]] = {}

    def add(label: str, values: tuple[Any, Any]) -> None:
        items[label] = [*values, str(values[0]) != str(values[1])]

    add("status", (first.status, second.status))
    first_parameters, second_parameters = first.parameters, second.parameters
    for name in sorted(set(first_parameters) | set(second_parameters)):
        add(f"parameter: {name}", (first_parameters.get(name, ""), second_parameters.get(name, "")))
    first_metrics, second_metrics = first.metrics, second.metrics
    for name in list(dict.fromkeys([*first_metrics.index, *second_metrics.index])):
        add(f"metric: {name}", (_metric_text(first_metrics, name), _metric_text(second_metrics, name)))
    first_gate, second_gate = first.gate, second.gate
    add(
        f"gate ({METRIC_THRESHOLD} {first.parameters.get(METRIC_THRESHOLD, '')})",
        (_gate_outcome(first_gate), _gate_outcome(second_gate)),
    )
    first_baseline, second_baseline = first.baseline, second.baseline
    if first_baseline or second_baseline:
        add("scikit-learn baseline", (baseline_label(first_baseline), baseline_label(second_baseline)))
    add("model package", (_package_text(first.model_package), _package_text(second.model_package)))
    first_report, second_report = first.report, second.report
    first_rows, second_rows = _test_rows(first_report), _test_rows(second_report)
    if first_rows or second_rows:
        add("test rows", (scored_rows_label(first_rows), scored_rows_label(second_rows)))
    frame = pd.DataFrame.from_dict(items, orient="index", columns=[*columns, "differs"])
    frame.index.name = "item"
    both_scored = isinstance(first_report, dict) and isinstance(second_report, dict)  # else no metrics to compare
    frame.attrs["warning"] = scored_rows_warning(first.id, first_rows, second.id, second_rows) if both_scored else None
    return frame


def _test_rows(report: dict[str, Any] | None) -> dict[str, Any] | None:
    """The report's fingerprint of the test rows it was scored on (None: no report, or one from before row ids)."""
    rows = report.get("test_rows") if isinstance(report, dict) else None
    return rows if isinstance(rows, dict) and rows.get("fingerprint") else None


def scored_rows_label(rows: dict[str, Any] | None) -> str:
    """``460 rows, fingerprint 619985008875f6b9``, or empty when unknown."""
    return f"{rows['count']} rows, fingerprint {rows['fingerprint']}" if rows else ""


def scored_rows_warning(
    first_id: str, first: dict[str, Any] | None, second_id: str, second: dict[str, Any] | None
) -> str | None:
    """What to say when two executions' metrics were not computed on the same test rows (None: they were, or
    neither report says): the test split is decided from each raw row, so only other data, another SplitSeed or
    other fractions change it."""
    if first is None and second is None:
        return None
    if first is None or second is None:
        unknown = first_id if first is None else second_id
        return (
            f"cannot tell whether {first_id} and {second_id} were scored on the same test rows: the report of "
            f"{unknown} records no test rows (one from before row ids); compare their metrics with care"
        )
    if (first["count"], first["fingerprint"]) == (second["count"], second["fingerprint"]):
        return None
    return (
        f"scored on different test rows: {first_id} on {scored_rows_label(first)}, {second_id} on "
        f"{scored_rows_label(second)} (other data, SplitSeed or split fractions, or rows MissingValues=drop removed); "
        "their metrics are not comparable"
    )


def _metric_text(metrics: pd.DataFrame, name: str) -> str:
    if name not in metrics.index:
        return ""
    value, deviation = metrics.loc[name, "value"], metrics.loc[name, "standard_deviation"]
    if deviation is None or deviation != deviation:  # missing or NaN
        return f"{value:.4f}"
    return f"{value:.4f} ± {deviation:.4f}"


def _gate_outcome(gate: dict[str, Any] | None) -> str:
    if not gate:
        return ""
    verdict = {True: "passed", False: "failed", None: "not evaluated"}[gate.get("passed")]
    return f"{gate_label({**gate, 'passed': None})} {verdict}"


def baseline_label(baseline: dict[str, Any] | None) -> str:
    """``auc=0.7350 (Linear Learner -0.0123, below)``: the scikit-learn baseline on the same test split and the gap."""
    if not baseline or baseline.get("value") is None:
        return ""
    text = f"{baseline['metric']}={baseline['value']:.4f}"
    if baseline.get("difference") is not None:
        text += f" (Linear Learner {baseline['difference']:+.4f}{', below' if baseline['below_baseline'] else ''})"
    return text


def _package_text(package: dict[str, Any] | None) -> str:
    if not package:
        return ""
    if package.get("version") is not None:
        return f"{package.get('group')} v{package['version']} ({package.get('approval_status')})"
    return str(package.get("arn"))
