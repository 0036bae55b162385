"""``llpipe execution show ID|ARN --sagemaker``: one SageMaker execution as an operator needs it.

Parameters, each step with its status, times, attempts, cache hit, job (name, ARN, console link, log group and
streams) and failure reason, the model-quality metrics of the Evaluate report, and the compute used; ``--logs``
adds the failed steps' log events, ``--json`` prints it all for scripts.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timezone
from typing import Any

from pipeline.cli.arguments import config_from_args
from pipeline.cli.render import safe_console
from pipeline.cli.render.summary import baseline_summary, flat_metrics, print_baseline, print_metrics
from pipeline.core.errors import one_line


def show(args: argparse.Namespace, console: Any = None) -> int:
    """Inspect and print (errors are raised: a bad id is a usage error, a refusal by AWS a failure)."""

    from pipeline.sagemaker.inspect import execution_arn, inspect_execution, job_log_events

    config = config_from_args(args)
    view = inspect_execution(config, execution_arn(config, args.execution_id))
    scaling = None
    if getattr(args, "scaling", False):
        from pipeline.sagemaker import aws
        from pipeline.sagemaker.scaling import jobs_scaling

        training = [(s.name, s.job.name) for s in view.steps if s.job and s.job.kind == "TrainingJob"]
        scaling = jobs_scaling(aws.session(config), training)
    logs = {}
    if args.logs:
        for step in view.failed_steps:
            if step.job:
                logs[step.name] = job_log_events(config, step.job)
    if args.json:
        document = view.to_json()
        document["metrics"] = flat_metrics(view.report or {})
        if scaling is not None:
            document["scaling"] = scaling
        document["baseline"] = baseline_summary(view.report or {})
        if args.logs:
            document["logs"] = {name: [event.__dict__ for event in events] for name, events in logs.items()}
        print(json.dumps(document, indent=2, default=str))
        return 0
    console = console or safe_console(highlight=False)
    render(view, console)
    if scaling:
        from pipeline.cli.render.scaling import print_scaling

        print_scaling(scaling, console)
    for name, events in logs.items():
        console.print(f"\n[bold]{name} log[/bold] ({len(events)} events)")
        for event in events:
            stream = event.stream.split("/", 1)[-1]
            console.print(f"{_time_ms(event.timestamp)} {stream} {event.message}", markup=False, soft_wrap=True)
    return 0


def render(view: Any, console: Any) -> None:
    """The human-readable view on a rich console."""
    from rich.table import Table

    from pipeline.cli.render.cost import cost_table

    colour = {"Succeeded": "green", "Failed": "red", "Stopped": "yellow"}.get(view.status, "cyan")
    name = f" ({view.display_name})" if view.display_name else ""
    console.print(f"[bold]Execution {view.id}[/bold]{name}: [{colour}]{view.status}[/{colour}]")
    console.print(f"ARN {view.arn}", soft_wrap=True)
    console.print(f"Started {_time(view.start_time)}, last changed {_time(view.last_modified)}")
    if view.selective_source:
        console.print(f"Selective execution; other steps' outputs from {view.selective_source}", soft_wrap=True)
    if view.max_parallel:
        console.print(f"At most {view.max_parallel} steps in parallel")
    console.print("Parameters: " + ", ".join(f"{key}={value}" for key, value in sorted(view.parameters.items())))
    table = Table(title="Steps", title_justify="left")
    for column in ("step", "status", "started", "duration", "job / outcome"):
        table.add_column(column, overflow="fold")
    for step in view.steps:
        detail = step.job.name if step.job else (step.outcome or "")
        if step.cache_source:
            detail = f"cache hit from {step.cache_source.rsplit('/', 1)[-1]}" + (f": {detail}" if detail else "")
        if step.attempts and step.attempts > 1:
            detail += f" (attempt {step.attempts})"
        status_colour = {"Succeeded": "green", "Failed": "red", "Stopped": "yellow"}.get(step.status, "cyan")
        table.add_row(
            step.name,
            f"[{status_colour}]{step.status}[/{status_colour}]",
            _time(step.start_time, clock_only=True),
            _duration(step.start_time, step.end_time),
            detail,
        )
    console.print(table)
    if view.failure_reason:
        console.print(f"[red]Failure:[/red] {view.failure_reason}", soft_wrap=True)
    for step in view.steps:
        if step.failure_reason:
            console.print(f"[red]{step.name} failed:[/red] {step.failure_reason}", soft_wrap=True)
    for step in view.steps:
        if not step.job:
            continue
        job = step.job
        console.print(f"\n[bold]{step.name}[/bold] {job.kind} {job.name} ({job.status})", soft_wrap=True)
        console.print(f"  ARN      {job.arn}", soft_wrap=True)
        if step.cache_source:
            console.print(f"  cached   outputs of {step.cache_source}", soft_wrap=True)
        if job.failure_reason:
            console.print(f"  [red]failure[/red]  {job.failure_reason}", soft_wrap=True)
        if job.exit_message:
            # every instance's message (SageMaker concatenates them), one line as the local failure reason shows it
            console.print(f"  exit     {one_line(job.exit_message)}", soft_wrap=True, markup=False)
        console.print(f"  console  {job.console_url}", soft_wrap=True)
        console.print(f"  logs     {job.log_group}  {job.logs_url}", soft_wrap=True)
        for index, stream in enumerate(job.log_streams or ["(none yet)"]):
            console.print(f"  {'streams' if index == 0 else '':8} {stream}", soft_wrap=True)
    metrics = flat_metrics(view.report or {})
    baseline = baseline_summary(view.report or {})
    if metrics:
        print_metrics(metrics, console, (baseline or {}).get("metrics"))
    print_baseline(baseline, console)
    gate = (view.report or {}).get("gate")
    if gate:
        console.print(f"Quality gate: {gate.get('metric')} = {gate.get('value')}")
    if view.report_uri:
        console.print(f"Report: {view.report_uri}", soft_wrap=True)
    if view.costs:
        console.print(cost_table(view.costs))


def _time(value: datetime | None, clock_only: bool = False) -> str:
    if value is None:
        return "-"
    value = value.astimezone(timezone.utc)
    return value.strftime("%H:%M:%S") if clock_only else value.strftime("%Y-%m-%d %H:%M:%S UTC")


def _time_ms(milliseconds: int) -> str:
    return datetime.fromtimestamp(milliseconds / 1000, timezone.utc).strftime("%H:%M:%S")


def _duration(start: datetime | None, end: datetime | None) -> str:
    if start is None or end is None:
        return "-"
    seconds = (end - start).total_seconds()
    return f"{seconds:.0f}s" if seconds < 60 else f"{int(seconds // 60)}m{int(seconds % 60):02d}s"
