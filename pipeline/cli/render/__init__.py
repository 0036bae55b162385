"""Terminal rendering for the commands: the live step table and the end-of-run summary.

What the commands print holds stored text (a model's description, a failure reason, a step's note, a registry
field): :func:`safe_console` is the Rich console every renderer uses, and it writes any text through
:func:`~pipeline.core.safe_text.printable`, so a terminal escape sequence stored in a record is shown, not obeyed,
and :func:`~pipeline.core.safe_text.redact`, so a failure reason quoting a credential does not show it; plain
``print`` sites pass stored values through ``printable`` themselves."""

from __future__ import annotations

from typing import Any

from pipeline.core.safe_text import printable, redact


def safe_console(**options: Any) -> Any:
    """A ``rich.console.Console`` (``options`` as its own) whose text has secrets redacted and control characters
    escaped; Rich's own styling (colours, the live display's cursor moves) is unchanged, as it travels outside the
    text."""
    from rich.console import Console
    from rich.segment import Segment

    class SafeConsole(Console):
        def _render_buffer(self, buffer: Any) -> str:
            return super()._render_buffer(
                segment if segment.control else Segment(printable(redact(segment.text), newlines=True), segment.style)
                for segment in buffer
            )

    return SafeConsole(**options)
