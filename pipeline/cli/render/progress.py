"""The live step table: one row per step with its status, elapsed time and latest progress line (rich)."""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from pipeline.core.names import StepStatus

if TYPE_CHECKING:
    from pipeline.local.executions import ExecutionRecord, StepRecord

STATUS_STYLES = {
    StepStatus.PENDING: "dim",
    StepStatus.EXECUTING: "yellow",
    StepStatus.SUCCEEDED: "green",
    StepStatus.FAILED: "red",
    StepStatus.SKIPPED: "dim",
    StepStatus.STOPPED: "red",
}


def elapsed(step: StepRecord, at: datetime | None = None) -> str:
    """``12.3s`` since the step started (until it ended), or empty before it starts."""
    if not step.start_time:
        return ""
    start = datetime.fromisoformat(step.start_time)
    end = datetime.fromisoformat(step.end_time) if step.end_time else (at or datetime.now(timezone.utc))
    return f"{(end - start).total_seconds():.1f}s"


def step_table(record: ExecutionRecord | None, title: str = "") -> Any:
    """A rich Table of the record's steps."""
    from rich.table import Table

    table = Table(title=title, title_justify="left", expand=False)
    for column, options in (
        ("step", {}),
        ("type", {}),
        ("status", {}),
        ("time", {"justify": "right"}),
        ("detail", {"overflow": "fold", "max_width": 70}),
    ):
        table.add_column(column, **options)
    if record is None:
        return table
    for step in list(record.steps.values()):
        status = "Succeeded (cached)" if step.cache_hit_source else step.status
        detail = step.failure_reason if step.status == StepStatus.FAILED else step.detail or "; ".join(step.notes)
        style = STATUS_STYLES.get(step.status, "")
        table.add_row(step.name, step.type, f"[{style}]{status}[/{style}]", elapsed(step), detail or "")
    return table


# a render of the table to a terminal costs about 13 ms: 4 a second were 1.5-2 CPU-s of a 40 s run of the example
REFRESHES_PER_SECOND = 1


class LiveSteps:
    """Keeps a rich Live display of the latest record; ``update`` is safe to call from job threads. The table is
    drawn again once a second (the running steps' times, their latest progress lines) and at once when a step's
    status changes."""

    def __init__(self, console: Any) -> None:
        from rich.live import Live

        self.lock = threading.Lock()
        self.record: ExecutionRecord | None = None
        self.statuses: dict[str, str] = {}  # each step's status as last drawn
        self.live = Live(
            console=console, refresh_per_second=REFRESHES_PER_SECOND, get_renderable=self.render, transient=False
        )

    def render(self) -> Any:
        with self.lock:
            record = self.record
        title = f"Execution {record.id}" if record else "Starting"
        return step_table(record, title)

    def update(self, record: ExecutionRecord, step: StepRecord) -> None:
        with self.lock:
            self.record = record
            changed = self.statuses.get(step.name) != step.status
            self.statuses[step.name] = step.status
        if changed and self.live.is_started:
            self.live.refresh()

    def __enter__(self) -> LiveSteps:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        with self.lock:
            nothing_ran = self.record is None
        if nothing_ran:  # refused before any step (a preflight error): no empty table left above the message
            self.live.transient = True
        self.live.__exit__(*exc)
