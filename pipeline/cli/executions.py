"""List recent pipeline executions: the local ones in the work dir, or with ``--sagemaker`` the ones on SageMaker."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from pipeline.errors import UsageError
from pipeline.local.workdir import DEFAULT_ROOT, Workdir
from pipeline.names import StepStatus


def configure(parser: argparse.ArgumentParser) -> None:
    """Where to look, how many, and how to print."""
    from pipeline.config import add_config_arguments

    parser.add_argument("--sagemaker", action="store_true", help="list the pipeline's executions on SageMaker")
    parser.add_argument("--workdir", type=Path, default=DEFAULT_ROOT, help="local work dir (.llpipe)")
    parser.add_argument("--max-results", type=int, default=20, metavar="N", help="at most N executions (20)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Print the executions, newest first."""
    if args.max_results < 1:
        raise UsageError("--max-results must be at least 1")
    rows = _sagemaker_rows(args) if args.sagemaker else _local_rows(Workdir.at(args.workdir), args.max_results)
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Executions (newest first)", title_justify="left")
    for column in ("id", "status", "started (UTC)", "duration", "failure reason"):
        table.add_column(column, overflow="fold", no_wrap=column != "failure reason")
    for row in rows:
        table.add_row(
            row["id"],
            row["status"] + (" (abandoned)" if row.get("abandoned") else ""),
            _time(row["start_time"]),
            _duration(row["start_time"], row["end_time"]),
            row["failure_reason"] or "",
        )
    Console().print(table)
    if not rows:
        where = "on SageMaker" if args.sagemaker else f"in {args.workdir}"
        print(f"no executions {where}; start one with `llpipe run`", file=sys.stderr)
    return 0


def _local_rows(workdir: Workdir, max_results: int) -> list[dict[str, Any]]:
    from pipeline.local.executions import ExecutionStore

    return [
        {
            "id": record.id,
            "status": record.status,
            "start_time": record.start_time,
            "end_time": record.end_time,
            "failure_reason": record.failure_reason or _abandoned_reason(record),
            "steps": {name: step.status for name, step in record.steps.items()},
            "abandoned": record.abandoned,
        }
        for record in ExecutionStore(workdir.executions).list(on_damaged=_skipped)[:max_results]
    ]


def _skipped(damaged: Exception) -> None:
    """A damaged record is not listed, and says so: one line on stderr naming its file."""
    print(f"llpipe executions: skipped {damaged}", file=sys.stderr)


def _abandoned_reason(record: Any) -> str | None:
    """Why an execution recorded as running is not: the process that ran it ended without finishing the record."""
    if not record.abandoned:
        return None
    owner = record.owner
    return f"process {owner.get('pid')} on {owner.get('host')} ended without finishing it (killed?)"


def _sagemaker_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    from pipeline.config import config_from_args
    from pipeline.sagemaker_ops import list_executions

    summaries = list_executions(config_from_args(args), args.max_results)[: args.max_results]
    rows = []
    for summary in summaries:
        arn = summary.get("PipelineExecutionArn", "")
        rows.append(
            {
                "id": arn.rsplit("/", 1)[-1],
                "arn": arn,
                "status": summary.get("PipelineExecutionStatus", ""),
                "start_time": summary.get("StartTime"),
                "end_time": summary.get("LastModifiedTime")
                if summary.get("PipelineExecutionStatus") != StepStatus.EXECUTING
                else None,
                "failure_reason": summary.get("PipelineExecutionFailureReason"),
            }
        )
    return rows


def _time(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value).replace("T", " ")[:19]


def _duration(start: Any, end: Any) -> str:
    """Wall time between two timestamps (datetimes or ISO strings) as 12.3s or 4m05s; "-" while running."""
    if start is None or end is None:
        return "-"
    start, end = (v if isinstance(v, datetime) else datetime.fromisoformat(str(v)) for v in (start, end))
    seconds = (end - start).total_seconds()
    return f"{seconds:.1f}s" if seconds < 60 else f"{int(seconds // 60)}m{int(seconds % 60):02d}s"
