"""How many training instances pay: one Preprocess output trained at several instance counts, locally.

llpipe scaling [--instances 1,2,4] [--repeats N] [--execution ID] [--within 0.1] [--floor 0.7] [--json]

Without ``--execution`` the bundled example runs first with TrainingInstanceCount set to the largest count (so
Preprocess writes enough train shards). Prints the table (epochs, records, seconds per epoch, records/s, S(n) and
E(n) from records/s, training time as run, time to the same validation loss, instance-seconds, sync share, global
batch, validation objective, test metric), what S(n) compares, why any E(n) passed 100%, and the recommendation,
and writes the plot and the JSON beside the execution (or into ``--output``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pipeline.api._shared import DEFAULT_WORKDIR
from pipeline.cli.render import safe_console
from pipeline.core.errors import UsageError


def _counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of instance counts") from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: instance counts are whole numbers of at least 1")
    return counts


def configure(parser: argparse.ArgumentParser) -> None:
    """The counts, repeats, which execution's Preprocess output, the recommendation's thresholds, the output."""
    from pipeline.api.scaling import DEFAULT_FLOOR, DEFAULT_WITHIN

    parser.add_argument("--instances", type=_counts, default=[1, 2], help="instance counts (default 1,2)")
    parser.add_argument("--repeats", type=int, default=1, help="training jobs per count (default 1)")
    parser.add_argument("--execution", help="a local execution whose Preprocess output and Train request to use")
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR, help="local work dir (.llpipe)")
    parser.add_argument(
        "--within", type=float, default=DEFAULT_WITHIN, help="recommend within this share of the fastest"
    )
    parser.add_argument(
        "--floor", type=float, default=DEFAULT_FLOOR, help="efficiency below which instances stop paying"
    )
    parser.add_argument("--output", type=Path, help="folder for scaling-study.json and .png (default: the execution's)")
    parser.add_argument("--json", action="store_true", help="print the study as JSON")
    parser.add_argument(
        "--sagemaker", action="store_true", help="train on SageMaker: --execution is an execution id or ARN there"
    )
    parser.add_argument("--poll-seconds", type=float, default=30.0, help="SageMaker: seconds between job checks")
    from pipeline.cli.arguments import add_config_arguments

    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Run the study and print it."""
    from pipeline.api import run_local
    from pipeline.api._shared import find_execution
    from pipeline.api.scaling import scaling_study
    from pipeline.cli.arguments import config_from_args

    if args.repeats < 1:
        raise UsageError("--repeats must be at least 1")
    config = config_from_args(args)  # a bad setting is refused before anything runs
    progress = sys.stderr
    announce = lambda count, repeat, name: print(f"training {name} ({count} instance(s))", file=progress)  # noqa: E731
    options = {"repeats": args.repeats, "within": args.within, "floor": args.floor, "output": args.output}
    if args.sagemaker:
        from pipeline.api.scaling import sagemaker_scaling_study

        if not args.execution:
            raise UsageError("--sagemaker needs --execution ID|ARN: the execution whose Train job to repeat")
        execution = find_execution(args.execution, args.workdir, config)
        study = sagemaker_scaling_study(
            execution, args.instances, poll_seconds=args.poll_seconds, on_job=announce, **options
        )
        return _print(study, args.json)
    if args.execution:
        execution = find_execution(args.execution, args.workdir)
    else:
        print(f"running the bundled example with TrainingInstanceCount={max(args.instances)}", file=progress)
        execution = run_local(
            workdir=args.workdir, progress=False, config=args.config, TrainingInstanceCount=max(args.instances)
        )
        if not execution.succeeded:
            print(f"llpipe scaling: execution {execution.id} failed: {execution.failure_reason}", file=sys.stderr)
            return 1
    return _print(scaling_study(execution, args.instances, on_job=announce, **options), args.json)


def _print(study: Any, as_json: bool) -> int:
    """The study as JSON, or its table, what S(n) and E(n) compare, the time to the same loss, the
    recommendation, plot and JSON paths."""
    from rich.table import Table

    from pipeline.cli.render.scaling import study_notes

    if as_json:
        print(json.dumps(study.to_dict(), indent=2))
        return 0
    table = Table(title=f"Scaling of execution {study.execution_id} ({study.train_shards} train shards)")
    columns = ["instances", "runs", "epochs", "records", "s/epoch", "records/s", "S(n)", "E(n)", "train s"]
    columns += ["to loss s", "instance-s", "sync", "global batch", "validation objective", study.test_metric_name]
    for column in columns:
        table.add_column(column, justify="right")
    for row in study.rows:
        table.add_row(
            str(row.instances),
            str(row.runs),
            ",".join("-" if epochs is None else str(epochs) for epochs in row.epochs),
            "-" if row.records is None else f"{row.records:,}",
            "-" if row.seconds_per_epoch is None else f"{row.seconds_per_epoch:.3f}",
            f"{row.throughput:,.0f}",
            f"{row.speedup:.2f}x",
            f"{row.efficiency:.0%}" + ("*" if row.efficiency_note else ""),
            f"{row.min_seconds:.3f}",
            "-" if row.time_to_loss is None else f"{row.time_to_loss:.3f}",
            f"{row.instance_seconds:.1f}",
            "-" if row.sync_share is None else f"{row.sync_share:.0%}",
            f"{row.global_batch:,}",
            "" if row.validation_objective is None else f"{row.validation_objective:.5g}",
            "" if row.test_metric is None else f"{row.test_metric:.5g}",
        )
    console = safe_console(highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, 180)  # the table's fifteen columns, unabbreviated, in a log or a pipe
    console.print(table)
    for line in study_notes(study):
        console.print(line, soft_wrap=True)
    console.print(f"Recommendation: {study.recommendation}", soft_wrap=True)
    console.print(f"Plot: {study.plot}\nJSON: {study.json_path}", soft_wrap=True)
    return 0
