"""Start an execution on SageMaker with parameter overrides; with --wait, watch its steps until it finishes.

Unless ``--param DataVersion=...`` is given, DataVersion is the fingerprint of the objects under InputDataUrl, so
new data re-runs Preprocess and everything after it instead of coming from the cache. Unless ``--no-infer``, the
schema is inferred first from the start of the first objects under InputDataUrl (ListObjectsV2, ranged GetObject),
uploaded to its content-addressed key and passed as SchemaUrl with the short decisions (never replacing a
``--param``). ``--dry-run`` prints the StartPipelineExecution request after the same reads (DescribePipeline,
ListObjectsV2, GetObject) and uploads and starts nothing. Before starting it warns, as ``llpipe run`` does, when
TrainingInstanceCount exceeds the train shards Preprocess will write or MiniBatchSize the train records one host
will see (from what the inference read; nothing with ``--no-infer``).

Exit codes with --wait: 0 succeeded, 1 a step failed, 3 the quality gate failed (QualityGateFailed ran),
4 stopped; 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pipeline.cli.arguments import (
    add_config_arguments,
    add_inference_arguments,
    add_max_parallel_argument,
    config_from_args,
    parse_overrides,
)
from pipeline.cli.render import safe_console
from pipeline.definition.config import PipelineConfig

if TYPE_CHECKING:
    from rich.console import Console

    from pipeline.sagemaker.wait import ExecutionState


def configure(parser: argparse.ArgumentParser) -> None:
    """``--param Name=Value`` (repeat), ``--wait``, ``--poll-seconds``, shared configuration."""
    parser.add_argument(
        "--param", action="append", default=[], metavar="NAME=VALUE", help="override a pipeline parameter (repeat)"
    )
    parser.add_argument("--display-name", help="execution display name")
    parser.add_argument(
        "--from-step", metavar="STEP", help="run only STEP and the steps downstream of it (selective execution)"
    )
    parser.add_argument(
        "--source", metavar="ID|ARN", help="with --from-step: the execution whose outputs the other steps reuse"
    )
    add_max_parallel_argument(parser)
    parser.add_argument("--wait", action="store_true", help="watch the steps until the execution finishes")
    parser.add_argument("--poll-seconds", type=float, default=30.0, help="seconds between polls with --wait (30)")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the StartPipelineExecution request as JSON (reads the pipeline and the input only)",
    )
    add_inference_arguments(parser, s3=True)
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Start; print the ARN; with --wait, a live step table, the compute used and the final status's exit code."""
    from pipeline.cli.schema_inference import infer_for_execution
    from pipeline.core.errors import UsageError
    from pipeline.core.names import PREPROCESS
    from pipeline.sagemaker import aws
    from pipeline.sagemaker.deploy import put_object
    from pipeline.sagemaker.inspect import execution_arn
    from pipeline.sagemaker.start import (
        declared_parameters,
        deployed_definition,
        missing_data_version,
        scaling_warnings,
        start,
        start_request,
    )

    config = config_from_args(args)
    if bool(args.from_step) != bool(args.source):
        raise UsageError("--from-step and --source go together (the source execution provides the other steps)")
    session = aws.session(config)
    given = parse_overrides(args.param)
    # a selective execution from a later step reuses the source execution's Preprocess output: no schema to decide
    needed = args.from_step in (None, PREPROCESS)
    stream = sys.stderr if args.dry_run else sys.stdout
    definition = deployed_definition(config, session)  # read once: for the inference and the request
    inferred = infer_for_execution(config, given, session, args, stream, declared_parameters(definition), needed)
    request = start_request(
        config,
        {**given, **(inferred.parameters if inferred else {})},
        session,
        display_name=args.display_name,
        from_step=args.from_step,
        source_arn=execution_arn(config, args.source) if args.source else None,
        max_parallel=args.max_parallel,
        definition=definition,
        uploads_schema=inferred is not None,
    )
    if missing_data_version(request):
        print(
            f"llpipe start: warning: the deployed {config.pipeline_name} has no DataVersion parameter, so cached "
            "steps may reuse results computed on older data; run llpipe upsert to deploy the current definition",
            file=sys.stderr,
        )
    for warning in scaling_warnings(definition, request, inferred.sample if inferred else None):
        print(f"llpipe start: warning: {warning}", file=sys.stderr)
    if args.dry_run:
        print(json.dumps(request, indent=2))
        print(
            "dry run: read DescribePipeline, the ListObjectsV2 listing of InputDataUrl and the sampled objects only; "
            "nothing was uploaded or started (the JSON fits aws sagemaker start-pipeline-execution --cli-input-json)",
            file=sys.stderr,
        )
        return 0
    if inferred is not None:
        put_object(config, inferred.uri, inferred.body, session)
    arn = start(config, session=session, request=request)
    print(f"started {arn}")
    if not args.wait:
        return 0
    return wait_and_report(config, arn, args.poll_seconds, session=session)


def wait_and_report(
    config: PipelineConfig,
    arn: str,
    poll_seconds: float,
    console: Console | None = None,
    session: Any = None,
    sleep: Callable[[float], None] | None = None,
) -> int:
    """Watch until the execution finishes, print the compute its jobs used, return the final status's exit code; a
    failed processing job's ExitMessage (why its script failed) joins the summary. With MLflow configured (an ARN
    or a tracking URI, tracking on) the execution is then forwarded to it and its run printed; a store that cannot
    be reached is one warning line and changes nothing else."""

    from pipeline.cli.render.cost import cost_table
    from pipeline.sagemaker import aws
    from pipeline.sagemaker.inspect import step_jobs
    from pipeline.sagemaker.mlflow_metrics import forward_finished
    from pipeline.sagemaker.wait import outcome

    console = console or safe_console()
    session = session or aws.session(config)
    state = watch(config, arn, poll_seconds, console=console, session=session, sleep=sleep)
    jobs = step_jobs(config, state.steps, session=session)
    costs = [job.cost for job in jobs.values() if job.cost]
    if costs:
        console.print(cost_table(costs))
    code, summary = outcome(state, {name: job.exit_message for name, job in jobs.items() if job.exit_message})
    print(summary, file=sys.stderr if code else sys.stdout)
    from pipeline.api.plots import render_plots

    run = forward_finished(
        config,
        arn,
        session,
        lambda message: print(f"llpipe start: warning: {message}", file=sys.stderr),
        plots=render_plots,
    )
    if run is not None:
        served = f"  (after: {run.ui_command})" if run.ui_command else ""
        print(f"MLflow run {run.run_id}: {run.url}{served}")
    return code


def watch(
    config: PipelineConfig,
    arn: str,
    poll_seconds: float,
    console: Console | None = None,
    session: Any = None,
    sleep: Callable[[float], None] | None = None,
) -> ExecutionState:
    """Poll the execution with a live rich table of its steps; returns the final state."""
    import time

    from rich.live import Live
    from rich.table import Table

    from pipeline.sagemaker.wait import step_rows, wait_for_execution

    console = console or safe_console()

    def table(state: ExecutionState) -> Table:
        view = Table(title=f"{arn.rsplit('/', 1)[-1]}: {state.status}", title_justify="left")
        for column in ("step", "status", "started", "duration", "detail"):
            view.add_column(column, overflow="fold")
        for row in step_rows(state):
            view.add_row(*row)
        return view

    with Live(console=console, auto_refresh=False, transient=False) as live:
        return wait_for_execution(
            config,
            arn,
            session=session,
            poll_seconds=poll_seconds,
            on_poll=lambda state: live.update(table(state), refresh=True),
            sleep=sleep or time.sleep,
        )
