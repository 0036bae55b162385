"""Two executions side by side: status, every parameter, the metrics (value ± standard deviation), the gate and
the registered model package, the test rows each was scored on, with a mark on the rows that differ, and a warning
when the test rows differ (the metrics are then not comparable). Local by default, or ``--sagemaker``.

``--from-mlflow``: A and B are MLflow runs (run ids, or execution ids: the parent runs' names), read from the
tracking store (``--tracking-uri``, else with ``--sagemaker`` the ``--mlflow-arn``, else the work dir's own): their
status, params (the pipeline parameters and Linear Learner's resolved hyperparameters), metrics and model package."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pipeline.api._shared import DEFAULT_WORKDIR
from pipeline.cli.render import safe_console


def configure(parser: argparse.ArgumentParser) -> None:
    """The two execution ids, where they are, and how to print."""
    from pipeline.cli.arguments import add_config_arguments

    parser.add_argument("first", metavar="A", help="an execution id (or ARN with --sagemaker)")
    parser.add_argument("second", metavar="B", help="another execution id (or ARN)")
    parser.add_argument("--sagemaker", action="store_true", help="compare executions on SageMaker")
    parser.add_argument(
        "--from-mlflow",
        action="store_true",
        help="A and B are MLflow run ids (or execution ids): compare their runs as the tracking store has them",
    )
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR, help="local work dir (.llpipe)")
    parser.add_argument("--all", action="store_true", help="also the rows where both are the same")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Print the side by side (:func:`pipeline.api.comparison.side_by_side`)."""
    from pipeline.api._shared import find_execution
    from pipeline.api.comparison import side_by_side

    config = None
    if args.sagemaker or args.from_mlflow:
        from pipeline.cli.arguments import config_from_args

        config = config_from_args(args)
    if args.from_mlflow:
        from pipeline.api._shared import compare_runs

        frame = compare_runs([args.first, args.second], args.sagemaker, args.workdir, config)
    else:
        first, second = (find_execution(item, args.workdir, config) for item in (args.first, args.second))
        frame = side_by_side(first, second)
    shown = frame if args.all else frame[frame["differs"] | frame.index.str.startswith("metric: ")]
    warning = frame.attrs.get("warning")
    if args.json:
        rows = {item: row.to_dict() for item, row in shown.iterrows()}
        print(json.dumps({**rows, "warning": warning} if warning else rows, indent=2, default=str))
        return 0
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=" vs ".join(str(column) for column in frame.columns[:-1]), title_justify="left")
    table.add_column("")
    for column in frame.columns[:-1]:
        table.add_column(str(column), overflow="fold")
    for item, row in shown.iterrows():
        style = "bold" if row["differs"] else ""
        table.add_row(str(item), *(str(value) for value in row.iloc[:-1]), style=style)
    console = safe_console()
    console.print(table)
    if warning:
        console.print(f"[bold red]warning:[/] {escape(warning)}")
    return 0
