"""List recent pipeline executions: the local ones in the work dir, or with ``--sagemaker`` the ones on SageMaker.

Each row says what tells the executions apart: the data (input folder with its version, label column, predictor
type), the parameters that differ from the definition's defaults, and the gate metric.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from pipeline.api._shared import DEFAULT_WORKDIR
from pipeline.cli.render import safe_console


def configure(parser: argparse.ArgumentParser) -> None:
    """Where to look, how many, and how to print."""
    from pipeline.cli.arguments import add_config_arguments, positive_int

    parser.add_argument("--sagemaker", action="store_true", help="list the pipeline's executions on SageMaker")
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR, help="local work dir (.llpipe)")
    parser.add_argument("--max-results", type=positive_int, default=20, metavar="N", help="at most N executions (20)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--gate", action="store_true", help="with --sagemaker, read each execution's gate metric (3 calls each)"
    )
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Print the executions, newest first, with what tells them apart: data, changed parameters, gate metric."""
    from pipeline.api.comparison import recent_executions

    config = None
    if args.sagemaker:
        from pipeline.cli.arguments import config_from_args

        config = config_from_args(args)
    rows = recent_executions(args.workdir, args.max_results, config, gate=args.gate, on_damaged=_skipped)
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    from rich.table import Table

    console = safe_console()
    if console.width < TABLE_MIN_WIDTH:
        _print_blocks(console, rows)
        return _said_when_empty(rows, args)
    table = Table(title="Executions (newest first)", title_justify="left")
    for column in ("id", "status", "started (UTC)", "duration", "data", "parameters", "gate", "failure reason"):
        table.add_column(column, overflow="fold", no_wrap=column in ("id", "status", "started (UTC)", "duration"))
    for row in rows:
        table.add_row(
            row["id"],
            row["status"] + (" (abandoned)" if row.get("abandoned") else ""),
            _time(row["start_time"]),
            _duration(row["seconds"]),
            row["data"],
            row["parameters"],
            row["gate"],
            row["failure_reason"] or "",
        )
    console.print(table)
    return _said_when_empty(rows, args)


# Below this width the table's four unwrapped columns (id, status, start, duration: about 75 characters with the
# borders) leave the data, parameters, gate and failure columns two characters each, one execution taking hundreds
# of lines (an 80-column terminal, or any pipe, which rich takes as 80 columns): each execution is then a block.
TABLE_MIN_WIDTH = 160


def _print_blocks(console: Any, rows: list[dict[str, Any]]) -> None:
    """Each execution as a heading line (id, status, start, duration, gate) and its data, parameters and failure
    reason on lines of their own, wrapped at the console's width."""
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    console.print("Executions (newest first)", markup=False, highlight=False)
    for row in rows:
        status = row["status"] + (" (abandoned)" if row.get("abandoned") else "")
        heading = [row["id"], status, _time(row["start_time"]), _duration(row["seconds"]), row["gate"] or ""]
        console.print(Text("  ".join(part for part in heading if part), style="bold"))
        details = Table.grid(padding=(0, 1))  # label, then the value wrapped in its own column (indented)
        details.add_column(no_wrap=True)
        details.add_column(overflow="fold")
        for label, value in (
            ("data", row["data"]),
            ("parameters", row["parameters"]),
            ("failure", row["failure_reason"]),
        ):
            if value:
                details.add_row(f"{label}:", Text(value))
        console.print(Padding(details, (0, 0, 0, 2)))


def _said_when_empty(rows: list[dict[str, Any]], args: argparse.Namespace) -> int:
    if not rows:
        where = "on SageMaker" if args.sagemaker else f"in {args.workdir}"
        print(f"no executions {where}; start one with `llpipe run`", file=sys.stderr)
    return 0


def _skipped(damaged: Exception) -> None:
    """A damaged record is not listed, and says so: one line on stderr naming its file."""
    print(f"llpipe executions: skipped {damaged}", file=sys.stderr)


def _time(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value).replace("T", " ")[:19]


def _duration(seconds: float | None) -> str:
    """12.3s or 4m05s; "-" while running."""
    if seconds is None:
        return "-"
    return f"{seconds:.1f}s" if seconds < 60 else f"{int(seconds // 60)}m{int(seconds % 60):02d}s"
