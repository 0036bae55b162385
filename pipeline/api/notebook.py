"""Progress while a local run goes on: in Jupyter a live step table the notebook updates in place (an IPython display
updated by id, not terminal escape codes), elsewhere one line per step change. An execution's own HTML, what
Jupyter shows for it, is :mod:`pipeline.api.html`.

IPython is never imported here unless the process already runs it, so ``import pipeline`` stays fast elsewhere.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.local.executions import ExecutionRecord, StepRecord
    from pipeline.local.workdir import Workdir

__all__ = ["NotebookSteps", "PrintedSteps", "in_notebook", "progress_display"]

REFRESH_SECONDS = 0.5  # at most two redraws a second; the last state is always drawn at the end


def in_notebook() -> bool:
    """True in a Jupyter kernel (Studio, JupyterLab, VS Code notebooks): IPython's ZMQ shell is running."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class NotebookSteps:
    """A live step table in the notebook's output: one display, updated in place as steps change."""

    def __init__(self, workdir: Workdir) -> None:
        self.workdir = workdir
        self.lock = threading.Lock()
        self.record: ExecutionRecord | None = None
        self.drawn_at = 0.0
        self.handle: Any = None

    def _html(self) -> Any:
        from IPython.display import HTML

        from pipeline.api.execution import LocalExecution
        from pipeline.api.html import steps_html

        with self.lock:
            record = self.record
        if record is None:
            return HTML("<p>Starting the local run...</p>")
        steps = LocalExecution.in_workdir(record, self.workdir).steps
        return HTML(steps_html(f"Execution {record.id}: {record.status}", steps))

    def update(self, record: ExecutionRecord, step: StepRecord) -> None:
        """Called by the interpreter on every change, from job threads: redraws at most every REFRESH_SECONDS."""
        with self.lock:
            self.record = record
            due = time.monotonic() - self.drawn_at >= REFRESH_SECONDS
            if due:
                self.drawn_at = time.monotonic()
        if due:
            self.handle.update(self._html())

    def __enter__(self) -> NotebookSteps:
        from IPython.display import display

        self.handle = display(self._html(), display_id=True)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.handle.update(self._html())


class PrintedSteps:
    """Outside a notebook: one line on stderr per step status change (``Train: Succeeded (12.3s)``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: dict[str, str] = {}

    def update(self, record: ExecutionRecord, step: StepRecord) -> None:
        from pipeline.api.execution import seconds_between

        status = str(step.status)
        with self.lock:
            if self.seen.get(step.name) == status:
                return
            self.seen[step.name] = status
        seconds = seconds_between(step.start_time, step.end_time)
        timing = f" ({seconds:.1f}s)" if seconds is not None else ""
        cached = " (cached)" if step.cache_hit_source else ""
        print(f"{record.id} {step.name}: {status}{cached}{timing}", file=sys.stderr, flush=True)

    def __enter__(self) -> PrintedSteps:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


def progress_display(progress: bool | str, workdir: Workdir) -> NotebookSteps | PrintedSteps | None:
    """``"auto"``: a live table in Jupyter, nothing elsewhere; True: the table in Jupyter, lines elsewhere;
    False: nothing."""
    if progress not in (True, False, "auto"):
        from pipeline.core.errors import UsageError

        raise UsageError(f"progress must be True, False or 'auto', got {progress!r}")
    if progress is False:
        return None
    if in_notebook():
        return NotebookSteps(workdir)
    return PrintedSteps() if progress is True else None
