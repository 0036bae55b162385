"""Ctrl-C (or SIGTERM, SIGHUP) while the ``llpipe`` command is still starting, importing its modules: one line and
the signal's exit code, never a traceback of whatever import it interrupted.

Installed by ``pipeline/__init__.py`` first thing, only when the process is the command (``llpipe``, ``python -m
pipeline``): a library import never changes a program's signal handlers. Nothing is running yet, so there is
nothing to clean up: the process ends at once. The command's own handlers (``pipeline.core.signals``) take over
when it starts its work.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

STARTING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


def is_command(argv: list[str]) -> bool:
    """Whether this process is the ``llpipe`` command: its script, or ``python -m pipeline`` (whose package is
    imported while ``argv[0]`` is still ``-m``)."""
    first = argv[0] if argv else ""
    return first == "-m" or os.path.basename(first).removesuffix(".exe") == "llpipe"


def _stopped_while_starting(number: int, frame: FrameType | None) -> None:
    os.write(2, f"llpipe: stopped by {signal.Signals(number).name}\n".encode())
    os._exit(128 + number)


def quiet_interrupts_while_starting(argv: list[str] = sys.argv) -> None:
    """When this process is the command, end it with one line on a stop signal until its own handlers are set.

    Also when the signal was inherited ignored (a background job of a script: ``kill -INT`` while the command was
    importing was dropped and the run went on to the end, exit 0), as the command's own handlers do
    (:mod:`pipeline.core.signals`); a handler a program set itself is kept."""
    if not is_command(argv):
        return
    for number in STARTING_SIGNALS:
        if signal.getsignal(number) in (signal.default_int_handler, signal.SIG_DFL, signal.SIG_IGN):
            signal.signal(number, _stopped_while_starting)
