"""The end-of-run summary: status, steps, the report's metrics, the data-quality check, the gate's decision, the
registered model package or the failure reason, and where the model, the report and the plots are; as a dict
(``--json``) or for a terminal.

It renders the ``LocalExecution`` the API returned (its report, gate and model package), and reads the pipeline's
conventions from its record: the ``Train`` step's artifact (or the best tuning job's), Preprocess's summary, the
steps' timings and notes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.cli.render.data_quality import print_data_quality
from pipeline.cli.render.scaling import print_scaling
from pipeline.cli.render.tuning import best_artifact, is_tuning, objective, trials, tuning_summary
from pipeline.core.names import (
    AUTOMATIC_THRESHOLD,
    BASELINE_SUFFIX,
    CHAMPION,
    CHAMPION_FLOOR,
    DECISION,
    METRICS_SECTIONS,
    PREPROCESS,
    RAW_BASELINE,
    SKLEARN_BASELINE,
    TRAIN,
    StepStatus,
)

if TYPE_CHECKING:
    from pipeline.api.execution import LocalExecution
    from pipeline.local.executions import ExecutionRecord
    from pipeline.local.s3 import LocalS3

TUNING_PLOT = "tuning_objective.png"


def flat_metrics(report: dict[str, Any]) -> dict[str, Any]:
    """``{"auc": 0.99, ...}``: every metric of the report's model-quality section that has a scalar ``value``."""
    for section in METRICS_SECTIONS.values():
        if section in report:
            return {
                name: entry["value"]
                for name, entry in report[section].items()
                if isinstance(entry, dict) and isinstance(entry.get("value"), (int, float, str))
            }
    return {}


def summarise(execution: LocalExecution, render_plots: bool = True) -> dict[str, Any]:
    """The summary of a finished execution (what the API returned) as one JSON-ready dict."""
    record, s3 = execution.record, execution.s3
    summary: dict[str, Any] = {
        "execution_id": record.id,
        "status": record.status,
        "steps": {name: step.status for name, step in record.steps.items()},
        # step -> the earlier execution whose results it reused
        "cache_hits": {name: step.cache_hit_source for name, step in record.steps.items() if step.cache_hit_source},
        "metrics": {},
        "gate": None,
        "model_package": None,
        "tuning": None,
        "failure_reason": record.failure_reason,
        "notes": {name: list(step.notes) for name, step in record.steps.items() if step.notes},
        "paths": {"execution": str(record.folder), "model": None, "report": None, "plots": []},
        "per_class": None,
        "baseline": None,
        "data_quality": execution.data_quality,
        "warnings": preprocess_warnings(record, s3),
        "compute": _compute(record),
        "scaling": execution.scaling,
    }
    train = record.steps.get(TRAIN)
    artifact = (train.properties.get("ModelArtifacts") or {}).get("S3ModelArtifacts") if train else None
    tune = next((step for step in record.steps.values() if is_tuning(step.properties)), None)
    if tune:
        summary["tuning"] = tuning_summary(tune.properties)
        artifact = best_artifact(tune.properties)
        if render_plots:
            summary["paths"]["plots"] = _tuning_plot(tune.properties, record.folder / "plots")
    if artifact and s3.path(artifact).is_file():
        summary["paths"]["model"] = str(s3.path(artifact))
    report_path = execution.report_path
    if report_path is not None:
        report = json.loads(report_path.read_text())
        summary["paths"]["report"] = str(report_path)
        summary["metrics"] = flat_metrics(report)
        summary["baseline"] = baseline_summary(report)
        summary["per_class"] = report.get("per_class_metrics")
        summary["gate"] = {**execution.gate, **champion_comparison(report)}
        kept = report.get("tuning")
        if summary["tuning"] and isinstance(kept, dict):  # the kept model: tuned, or the untuned defaults'
            summary["tuning"]["kept"] = {key: kept.get(key) for key in ("kept", "model_data_url", "reason")}
            url = str(kept.get("model_data_url") or "")
            if url.startswith("s3://") and s3.path(url).is_file():
                summary["paths"]["model"] = str(s3.path(url))
        if render_plots:
            summary["paths"]["plots"] += _plots(report_path, record.folder / "plots")
    if render_plots:
        summary["paths"]["plots"] += [str(path) for path in execution.drift_plots()]
    summary["model_package"] = execution.model_package
    run = execution.mlflow_run
    summary["mlflow"] = run.to_dict() if run else None
    return summary


def preprocess_warnings(record: ExecutionRecord, s3: LocalS3) -> list[str]:
    """Warnings from Preprocess's summary: hashed values sharing buckets, rows dropped, values outside a vocabulary."""
    from preprocessing.summary import load_summary

    step = record.steps.get(PREPROCESS)
    outputs = (step.properties.get("ProcessingOutputConfig") or {}).get("Outputs", []) if step else []
    uri = next((item["S3Output"]["S3Uri"] for item in outputs if item.get("OutputName") == "summary"), None)
    if not uri or not s3.path(uri).is_dir():
        return []
    try:
        preprocessed = load_summary(s3.path(uri))
    except (OSError, ValueError):
        return []
    categorical = preprocessed.get("categorical") or {}
    encodings = categorical.get("encodings") or {}
    warnings = []
    for column, seen in (preprocessed.get("categorical_stats") or {}).items():
        buckets = (encodings.get(column) or {}).get("buckets") or categorical.get("hash_buckets")
        if seen.get("values_in_shared_buckets"):
            warnings.append(
                f"categorical column {column!r}: {seen['distinct_values']} distinct value(s) in "
                f"{seen['buckets_used']} of {buckets} hash buckets, {seen['values_in_shared_buckets']} sharing a "
                "bucket (the model cannot tell those apart); raise --param HashBuckets"
            )
    warnings.extend(dropped_rows(preprocessed))
    for column, count in (preprocessed.get("unseen_values") or {}).items():
        warnings.append(
            f"categorical column {column!r}: {count:,} row(s) held a value the schema inference sample did not, "
            f"trained as {column}=(other); a larger sample (--sample-rows) would give them their own feature"
        )
    return warnings


def dropped_rows(preprocessed: dict[str, Any]) -> list[str]:
    """How many rows Preprocess dropped and why (MissingValues=drop: any missing value; impute: no label)."""
    dropped, read = int(preprocessed.get("rows_dropped") or 0), int(preprocessed.get("rows_read") or 0)
    if not dropped:
        return []
    policy = preprocessed.get("missing_policy")
    why = "a missing label" if policy == "impute" else "a missing value"
    share = f" ({dropped / read:.1%})" if read else ""
    fix = "" if policy == "impute" else "; --param MissingValues=impute keeps them (median and a missing feature)"
    return [f"MissingValues={policy} removed {dropped:,} of {read:,} row(s){share} with {why}{fix}"]


def baseline_summary(report: dict[str, Any]) -> dict[str, Any] | None:
    """Evaluate's scikit-learn baseline beside Linear Learner (:func:`pipeline.api.execution.baseline_view`) and its
    flat metrics; None for a report without one."""
    from pipeline.api.execution import baseline_view

    view, raw = baseline_view(report), baseline_view(report, RAW_BASELINE)
    if view is None and raw is None:
        return None
    summary = {**view, "metrics": flat_metrics(report[SKLEARN_BASELINE])} if view else {"metrics": {}}
    summary["raw_columns"] = {**raw, "metrics": flat_metrics(report[RAW_BASELINE])} if raw else None
    return summary


def print_baseline(baseline: dict[str, Any] | None, console: Any) -> None:
    """The baseline lines (on the encoded features, then on the raw columns); in yellow, saying so, when Linear
    Learner is below one."""
    from pipeline.api.html import baseline_sentence

    for view in (baseline or {}, (baseline or {}).get("raw_columns") or {}):
        if view.get("value") is None or view.get("linear_learner_value") is None:
            continue
        colour = "yellow" if view["below_baseline"] else "dim"
        console.print(f"[{colour}]{baseline_sentence(view)}[/{colour}]", soft_wrap=True, highlight=False)


def _automatic(gate: dict[str, Any]) -> str:
    """Words after the threshold when it is the automatic floor (MetricThreshold -1), not the parameter."""
    parameter = gate.get("metric_threshold")
    try:
        automatic = float(parameter) == AUTOMATIC_THRESHOLD and gate.get("threshold") != parameter
    except (TypeError, ValueError):
        automatic = False
    return " (automatic: above the best constant predictor and near the baseline, beyond 2 sd)" if automatic else ""


def champion_comparison(report: dict[str, Any]) -> dict[str, Any]:
    """The gate's comparison with the approved champion on the same test split (empty for an older report)."""
    decision = report.get(DECISION)
    if not isinstance(decision, dict):
        return {}
    champion = report.get(CHAMPION) or {}
    return {
        "champion": {
            "model_package_arn": champion.get("model_package_arn"),
            "version": champion.get("version"),
            "value": (champion.get("gate") or {}).get("value"),
        }
        if champion
        else None,
        "tolerance": decision.get("champion_tolerance"),
        "floor": decision.get(CHAMPION_FLOOR),
        "promote": decision.get("promote"),
        "reason": decision.get("reason"),
        "raw_columns_note": decision.get("raw_columns_note") or "",
    }


def _compute(record: ExecutionRecord) -> list[dict[str, Any]]:
    """Instance-seconds per job step, as SageMaker would count them (pipeline.core.cost)."""
    from pipeline.core.cost import local_costs

    definition_file = record.folder / "definition.json"
    definition = json.loads(definition_file.read_text()) if definition_file.is_file() else {}
    return [cost.to_json() for cost in local_costs(record.steps, definition, record.parameters)]


def _plots(report_path: Path, folder: Path) -> list[str]:
    """PNG plots of the report in the execution's folder, as the MLflow logger shows them
    (:func:`pipeline.api._plots_cache.execution_plots`: rendered once per report content and plotting code)."""
    from pipeline.api._plots_cache import execution_plots

    return [str(path) for path in execution_plots(report_path, folder) if path.name != TUNING_PLOT]


def _tuning_plot(properties: dict[str, Any], folder: Path) -> list[str]:
    """The objective of every training job of the tuning step, rendered once."""
    from pipeline.api.plots import render_tuning_plot

    target = folder / TUNING_PLOT
    if not target.is_file():
        metric, kind = objective(properties)
        render_tuning_plot(trials(properties), metric, kind, target)
    return [str(target)]


def print_summary(summary: dict[str, Any], console: Any) -> None:
    """The human-readable summary on a rich console."""
    succeeded = summary["status"] == StepStatus.SUCCEEDED
    colour = "green" if succeeded else "red"
    console.print(f"\n[bold]Execution {summary['execution_id']}[/bold]: [{colour}]{summary['status']}[/{colour}]")
    reused: dict[str, list[str]] = {}
    for step, source in summary["cache_hits"].items():
        reused.setdefault(source, []).append(step)
    for source, steps in reused.items():
        console.print(f"Cache hits: {', '.join(steps)} reused from execution {source}", soft_wrap=True)
    for step, notes in summary.get("notes", {}).items():
        for note in notes:
            colour = "yellow" if note.startswith("approximate") else "dim"
            console.print(f"[{colour}]{step}: {note}[/{colour}]", soft_wrap=True)
    if summary["metrics"]:
        print_metrics(summary["metrics"], console, (summary.get("baseline") or {}).get("metrics"))
    print_baseline(summary.get("baseline"), console)
    if summary.get("per_class"):
        from rich.table import Table

        table = Table(title="Per class", title_justify="left")
        for column in ("class", "precision", "recall", "f1", "support"):
            table.add_column(column, justify="left" if column == "class" else "right")
        for name, values in summary["per_class"].items():
            table.add_row(name, *(_number(values[key]) for key in ("precision", "recall", "f1", "support")))
        console.print(table)
    print_data_quality(summary.get("data_quality"), console)
    scaling = summary.get("scaling") or []
    print_scaling(scaling, console, hosts=len(scaling) == 1)  # a tuning step's trials: one line each
    for warning in summary.get("warnings") or []:
        console.print(f"[yellow]Warning:[/yellow] {warning}", soft_wrap=True)
    gate = summary["gate"]
    if gate:
        verdict = {True: "[green]passed[/green]", False: "[red]failed[/red]", None: "not evaluated"}[gate["passed"]]
        console.print(
            f"Quality gate: {gate['metric']} = {_number(gate['value'])} vs threshold "
            f"{_number(gate['threshold'])}{_automatic(gate)}: {verdict}"
        )
        if "reason" in gate:
            champion = gate["champion"]
            if champion:
                console.print(
                    f"Champion: version {champion['version']}, {gate['metric']} = {_number(champion['value'])} on the "
                    f"same test split; tolerance {_number(gate['tolerance'])}, floor {_number(gate['floor'])}"
                    f"\n  {champion['model_package_arn']}",
                    soft_wrap=True,
                )
            verdict = "promote" if gate["promote"] else "do not promote"
            console.print(f"Decision: {verdict}: {gate['reason']}", soft_wrap=True)  # one line: the reason can be long
            if gate.get("raw_columns_note"):
                console.print(f"[yellow]Note:[/yellow] {gate['raw_columns_note']}", soft_wrap=True)
    tuning = summary.get("tuning")
    if tuning:
        settings = ", ".join(f"{name}={value}" for name, value in sorted(tuning["best_hyperparameters"].items()))
        failed = f", {tuning['failed']} without an objective" if tuning["failed"] else ""
        console.print(
            f"Tuning: best of {tuning['training_jobs']} training jobs{failed} is {tuning['best_training_job']}, "
            f"{tuning['objective']} = {_number(tuning['best_value'])} ({tuning['type'].lower()}d)\n  {settings}",
            soft_wrap=True,
        )
        kept = tuning.get("kept")
        if kept:
            colour = "yellow" if kept["kept"] == "defaults" else "green"
            console.print(f"[{colour}]Kept the {kept['kept']} model:[/{colour}] {kept['reason']}", soft_wrap=True)
    package = summary["model_package"]
    if package:
        console.print(
            f"Registered: {package['group']} version {package['version']} ({package['approval_status']})"
            f"\n  {package['arn']}"
        )
    elif not succeeded:
        console.print(f"[red]Failure:[/red] {summary['failure_reason']}")
    if summary.get("compute"):
        from pipeline.cli.render.cost import cost_table
        from pipeline.core.cost import JobCost

        console.print(cost_table([JobCost.from_json(cost) for cost in summary["compute"]]))
    paths = summary["paths"]
    for label in ("model", "report"):
        if paths[label]:
            console.print(f"{label.capitalize()}: {paths[label]}", soft_wrap=True)
    if paths["plots"]:
        console.print(f"Plots: {', '.join(paths['plots'])}", soft_wrap=True)
    console.print(f"Record: {paths['execution']}  (llpipe execution show {summary['execution_id']})", soft_wrap=True)
    run = summary.get("mlflow")
    if run:
        served = f"  (after: {run['ui_command']})" if run.get("ui_command") else ""
        console.print(f"MLflow run {run['run_id']}: {run['url']}{served}", soft_wrap=True)


def print_metrics(metrics: dict[str, Any], console: Any, sklearn: dict[str, Any] | None = None) -> None:
    """The report's metrics as a table, each beside the scikit-learn baseline's (``sklearn``, when the report has
    one) and the best-constant-classifier baseline (when the report has one)."""
    from rich.table import Table

    table = Table(title="Model quality on the test split", title_justify="left")
    baselines = any(name.endswith(BASELINE_SUFFIX) for name in metrics)
    table.add_column("metric")
    table.add_column("Linear Learner" if sklearn else "value", justify="right")
    if sklearn:
        table.add_column("scikit-learn baseline", justify="right")
    if baselines:
        table.add_column("best constant classifier", justify="right")
    for name, value in metrics.items():
        if name.endswith(BASELINE_SUFFIX):
            continue
        row = [name, _number(value)]
        if sklearn:
            row.append(_number(sklearn[name]) if name in sklearn else "")
        if baselines:
            baseline = metrics.get(name + BASELINE_SUFFIX)
            row.append("" if baseline is None else _number(baseline))
        table.add_row(*row)
    console.print(table)


def _number(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)
