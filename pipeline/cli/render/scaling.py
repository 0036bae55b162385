"""Training jobs' scaling records on a terminal: one line per job, and with ``hosts`` a table of its hosts."""

from __future__ import annotations

from typing import Any

from pipeline.core.scaling import HOST_COLUMNS, ScalingRecord, host_rows, summary_line


def print_scaling(records: list[dict[str, Any]] | None, console: Any, hosts: bool = True) -> None:
    """Each job's instances, global batch, throughput, sync share, imbalance, idle and slow hosts; its hosts."""
    from rich.table import Table

    for data in records or []:
        record = ScalingRecord.from_dict(data)
        console.print(f"Scaling of {data.get('step', '')} job {record.job}: {summary_line(record)}", soft_wrap=True)
        if record.idle_hosts:
            console.print(
                f"  [yellow]{', '.join(record.idle_hosts)} had no train shard and idled: use at most as many "
                "instances as train shards[/yellow]",
                soft_wrap=True,
            )
        if hosts and record.instances:
            table = Table(title_justify="left")
            for column in HOST_COLUMNS:
                table.add_column(column, justify="left" if column == "host" else "right")
            for row in host_rows(record):
                table.add_row(*row)
            console.print(table)
