"""The compute a run used, as a terminal table: instance-seconds per job step and the total per instance type."""

from __future__ import annotations

from typing import Any

from pipeline.core.cost import JobCost, by_instance_type


def cost_table(costs: list[JobCost]) -> Any:
    """A rich table: step, instance type, count, seconds, instance-seconds, and the total per instance type."""
    from rich.table import Table

    table = Table(title="Compute (instance-seconds)", title_justify="left")
    for column in ("step", "instance type", "count", "seconds", "instance-seconds"):
        table.add_column(column, justify="left" if column in ("step", "instance type") else "right")
    for cost in costs:
        seconds = "-" if cost.seconds is None else _seconds(cost.seconds)
        spent = cost.instance_seconds
        if cost.cached:
            seconds = "cache hit"
        table.add_row(
            cost.step,
            cost.instance_type,
            str(cost.instance_count),
            seconds,
            "running" if spent is None else _seconds(spent),
        )
    for instance_type, spent in by_instance_type(costs).items():
        table.add_row("total", instance_type, "", "", _seconds(spent), style="bold")
    return table


def _seconds(value: float) -> str:
    """Whole seconds, with a decimal below 100 s (local runs take seconds, not minutes)."""
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}"
