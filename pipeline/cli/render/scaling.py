"""Training jobs' scaling records on a terminal (one line per job, and with ``hosts`` a table of its hosts), and the
scaling study's notes."""

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


def study_notes(study: Any) -> list[str]:
    """What S(n) and E(n) compare, each count's epochs, the time to the same loss, and why an efficiency passed 100%."""
    base = study.rows[0]
    runs = "; ".join(
        f"{row.instances} instance(s): {_epochs(row.epochs)} epochs, {row.min_seconds:.3f} s" for row in study.rows
    )
    epochs = {value for row in study.rows for value in row.epochs}
    differ = (
        " (the counts ran different epochs, early stopping: their training times are not the same work)"
        if len(epochs) > 1
        else ""
    )
    lines = [
        f"S(n) and E(n) compare records per second (the same work) against {base.instances} instance(s). "
        f"Epochs and training time as run: {runs}{differ}."
    ]
    if study.target_loss is None:
        lines.append("Time to the same validation loss: not reported (the jobs logged no per-epoch loss).")
    else:
        reached = "; ".join(
            f"{row.instances} instance(s) " + ("never" if row.time_to_loss is None else f"{row.time_to_loss:.3f} s")
            for row in study.rows
        )
        lines.append(f"Time to validation loss {study.target_loss:.5g} (the loss every count reached): {reached}.")
    for row in study.rows:
        if row.efficiency_note:
            lines.append(f"* E({row.instances}) = {row.efficiency:.0%}, {row.efficiency_note}.")
    return lines


def _epochs(epochs: list[int | None]) -> str:
    return ",".join("?" if value is None else str(value) for value in epochs)
