"""Show one local execution: its parameters, every step's status, times, cache hits, failure reasons, logs, the
environment (image, Python, libraries, exact or approximate) each processing step ran in, and the data-quality
check: the baseline's features, the violations and a plot per violated feature. ``--dag`` draws the DAG with each
step's status (:mod:`pipeline.api.dag`): an SVG file, or the terminal form (:mod:`pipeline.cli.render.dag`).
``--to-mlflow`` logs the execution to MLflow (a local one from its record, a SageMaker one from the service's)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pipeline.api._shared import DEFAULT_WORKDIR
from pipeline.cli.render import safe_console
from pipeline.core.errors import UsageError


def configure(parser: argparse.ArgumentParser) -> None:
    """``show ID`` with the work dir, ``--json``, ``--logs`` and ``--dag``."""
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = sub.add_parser("show", help="show one execution's steps, timings, failure reasons and log files")
    show.add_argument("execution_id", metavar="ID", help="execution id (or ARN with --sagemaker)")
    show.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR, help="the run's work dir (.llpipe)")
    show.add_argument("--json", action="store_true", help="print the execution record as JSON")
    show.add_argument("--logs", action="store_true", help="also print every instance's log (SageMaker: failed steps')")
    show.add_argument("--sagemaker", action="store_true", help="ID|ARN is an execution on SageMaker")
    show.add_argument(
        "--dag",
        metavar="FILE.svg|-",
        help="the picture of the DAG, each step with its status, duration and cache source: FILE.svg writes it as "
        "SVG (then shows the execution as usual); '-' prints it in the terminal, layer by layer, and nothing else",
    )
    show.add_argument(
        "--scaling",
        action="store_true",
        help="SageMaker: also each training job's scaling (CloudWatch CPU per host, #throughput_metric log lines)",
    )
    show.add_argument(
        "--to-mlflow",
        action="store_true",
        help="log the execution to MLflow now: a local one to --tracking-uri (default the work dir's store); with "
        "--sagemaker, its steps and Linear Learner's metrics from the service to its MLflow ARN (or --mlflow-arn, "
        "--tracking-uri)",
    )
    show.set_defaults(command_name="execution show")
    from pipeline.cli.arguments import add_config_arguments

    add_config_arguments(show)


def run(args: argparse.Namespace) -> int:
    """Print the record; exit 2 when the id is unknown."""
    if args.dag is not None and _show_dag(args):
        return 0
    if args.to_mlflow:
        return _to_mlflow(args)
    if args.sagemaker:
        from pipeline.cli.execution_sagemaker import show

        return show(args)

    from rich.markup import escape

    from pipeline.api._shared import find_execution
    from pipeline.api.execution import NoResultsError
    from pipeline.cli.render.coefficients import coefficients_table
    from pipeline.cli.render.data_quality import print_data_quality
    from pipeline.cli.render.progress import step_table
    from pipeline.cli.render.scaling import print_scaling
    from pipeline.cli.render.summary import baseline_summary, flat_metrics, print_baseline, print_metrics
    from pipeline.cli.render.tuning import is_tuning, trials_table

    try:
        execution = find_execution(args.execution_id, args.workdir)
        record = execution.record
    except NoResultsError as error:  # an unknown id is a usage error here (exit 2), as the id is what was asked
        raise UsageError(str(error)) from None
    if args.json:
        document = {
            **record.to_json(),
            "abandoned": record.abandoned,
            "data_quality": execution.data_quality,
            "scaling": execution.scaling,
        }
        document["baseline"] = execution.baseline
        document["coefficients"] = (execution.report or {}).get("coefficients")
        for step in document["steps"]:
            environment = record.folder / "steps" / step["name"] / "environment.json"
            if environment.is_file():
                step["environment"] = json.loads(environment.read_text())
        print(json.dumps(document, indent=2, default=str))
        return 0
    console = safe_console()
    console.print(f"[bold]Execution {record.id}[/bold] of {record.pipeline_name}: {record.status}")
    if record.abandoned:
        owner = record.owner
        console.print(
            f"[red]Abandoned:[/red] process {owner.get('pid')} on {owner.get('host')} ended without finishing this "
            "execution (killed?); nothing is running it"
        )
    console.print(f"Started {record.start_time}, ended {record.end_time or '-'}")
    console.print("Parameters: " + ", ".join(f"{name}={value}" for name, value in record.parameters.items()))
    console.print(step_table(record))
    for step in record.steps.values():
        if is_tuning(step.properties):
            console.print(trials_table(step.properties, f"{step.name}: training jobs"))
    if record.failure_reason:
        console.print(f"[red]Failure:[/red] {escape(record.failure_reason)}")
    report = execution.report or {}
    metrics, baseline = flat_metrics(report), baseline_summary(report)
    kept = report.get("tuning")
    if isinstance(kept, dict):  # a tuned run: the metrics below are the kept model's (tuned, or the defaults')
        console.print(f"Kept the {kept.get('kept')} model: {escape(str(kept.get('reason')))}", soft_wrap=True)
    if metrics:
        print_metrics(metrics, console, (baseline or {}).get("metrics"))
    print_baseline(baseline, console)
    coefficients = coefficients_table(report)
    if coefficients is not None:
        console.print(coefficients)
    print_data_quality(execution.data_quality, console, features=True)
    print_scaling(execution.scaling, console)
    for plot in execution.drift_plots():
        console.print(f"Data-quality plot: {plot}", soft_wrap=True)
    for step in record.steps.values():
        if step.cache_hit_source:
            console.print(f"{step.name}: cache hit, outputs of execution {step.cache_hit_source}")
        environment = record.folder / "steps" / step.name / "environment.json"
        if environment.is_file() and not step.cache_hit_source:
            console.print(f"{step.name} environment: {_environment_line(json.loads(environment.read_text()))}")
        for note in step.notes:
            console.print(f"{step.name}: {note}", markup=False)
        for log in step.logs:
            missing = "" if Path(log).is_file() else " (missing: removed from the record folder)"
            console.print(f"{step.name} log: {log}{missing}", markup=False)
            if args.logs and not missing:
                console.print(Path(log).read_text(errors="replace"), markup=False, highlight=False)
    console.print(f"Record folder: {record.folder}")
    return 0


def _to_mlflow(args: argparse.Namespace) -> int:
    """Log one execution to MLflow and print its run: a SageMaker one forwarded from the service's records
    (:mod:`pipeline.sagemaker.mlflow_metrics`), a local one from its record (:mod:`pipeline.api.tracking`)."""
    from pipeline.cli.arguments import config_from_args

    config = config_from_args(args)
    if args.sagemaker:
        from pipeline.api.plots import render_plots
        from pipeline.sagemaker.mlflow_metrics import forward_execution

        uri = config.mlflow_tracking_uri
        run = forward_execution(config, args.execution_id, tracking_uri=uri, plots=render_plots)
    else:
        from pipeline.api._shared import find_execution, open_workdir
        from pipeline.api.execution import NoResultsError
        from pipeline.api.tracking import default_tracking_uri, log_execution

        workdir = open_workdir(args.workdir)
        try:
            execution = find_execution(args.execution_id, args.workdir)
        except NoResultsError as error:
            raise UsageError(str(error)) from None
        uri = config.mlflow_tracking_uri or default_tracking_uri(workdir)
        run = log_execution(execution, config, workdir, uri)  # type: ignore[arg-type]
    served = f"  (after: {run.ui_command})" if run.ui_command else ""
    print(f"MLflow run {run.run_id}: {run.url}{served}")
    return 0


def _show_dag(args: argparse.Namespace) -> bool:
    """``--dag``: write the SVG picture (False: the usual output follows) or print the terminal form (True: done)."""

    from pipeline.api.execution import NoResultsError

    if args.dag == "-" and args.json:
        raise UsageError("--dag - prints the DAG in the terminal; with --json give a file: --dag FILE.svg")
    if args.sagemaker:
        from pipeline.api.sagemaker_execution import SageMakerExecution
        from pipeline.cli.arguments import config_from_args

        execution = SageMakerExecution.find(config_from_args(args), args.execution_id)
    else:
        from pipeline.api._shared import find_execution

        try:
            execution = find_execution(args.execution_id, args.workdir)
        except NoResultsError as error:
            raise UsageError(str(error)) from None
    dag = execution.dag
    if args.dag == "-":
        from pipeline.cli.render.dag import dag_table

        safe_console().print(dag_table(dag))
        return True
    written = dag.write(args.dag)
    safe_console(stderr=True).print(f"wrote the DAG picture {written}", soft_wrap=True, highlight=False, markup=False)
    return False


def _environment_line(environment: dict) -> str:
    """``sklearn-1.2-1: Python 3.9.18, numpy 1.24.1, ... (exact)`` from a step's environment.json."""
    libraries = ", ".join(f"{name} {version}" for name, version in environment.get("libraries", {}).items())
    verdict = "exact" if environment.get("exact") else f"approximate: {environment.get('reason', '')}"
    image = environment.get("image") or environment.get("image_uri")
    return f"{image}: Python {environment.get('python')}, {libraries} ({verdict})"
