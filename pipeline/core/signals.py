"""Stop signals (Ctrl-C's SIGINT, SIGTERM from ``timeout``/CI/``docker stop``, SIGHUP from a closed terminal or SSH
session) raised as ``Interrupted`` in the main thread, so every command stops, cleans up and records the same way.

Two ways a stop used to be lost, both closed here:
- a process started in the background by a non-interactive shell (``make test &``, a CI runner's job) inherits
  SIGINT *ignored*, and Python then installs no KeyboardInterrupt handler: ``kill -INT`` did nothing and the run went
  on. The handlers are installed whatever was inherited.
- a second signal (``timeout`` signals the process and then its group) landing while the first one's clean-up ran
  cut that clean-up short. Only the first signal raises; later ones are noted and ignored while the stop runs (the
  jobs are ended with SIGKILL, so the clean-up is short; SIGKILL stays the way to end llpipe at once).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from pipeline.core.errors import Interrupted

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# The kernel may hand a signal sent to the process to any of its threads; Python then runs the handler in the main
# thread only when that thread next executes Python code. A main thread blocked in an untimed wait (for a job's
# future) did not run it until the job ended: Ctrl-C or SIGTERM while 78 training instances started was acted on
# 26 s later, after Train had run to the end. The main thread's waits are therefore cut into slices this long.
SIGNAL_CHECK_SECONDS = 0.1


class _RaiseOnce:
    """The handler of every stop signal while a block runs: the first raises ``Interrupted``, the rest are noted."""

    def __init__(self) -> None:
        self.received: list[int] = []

    def __call__(self, number: int, frame: FrameType | None) -> None:
        self.received.append(number)
        if len(self.received) == 1:
            raise Interrupted(number, signal.Signals(number).name)


@contextmanager
def stop_signals_raise() -> Iterator[None]:
    """While the block runs (in the main thread), SIGINT, SIGTERM and SIGHUP raise ``Interrupted`` once; the
    previous handlers come back after it. Nested uses share the outer handler (one stop per command); outside the
    main thread (where Python cannot install handlers) the block runs unchanged."""
    if threading.current_thread() is not threading.main_thread() or isinstance(
        signal.getsignal(signal.SIGINT), _RaiseOnce
    ):
        yield
        return
    handler = _RaiseOnce()
    previous = {number: signal.signal(number, handler) for number in STOP_SIGNALS}
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old if old is not None else signal.SIG_DFL)


@contextmanager
def stop_signals_deferred() -> Iterator[Callable[[], None]]:
    """Stop signals arriving during the block are noted and acted on when it ends (the first is raised again): for
    the statements that must not be cut in half (creating a record and entering the ``try`` that marks it stopped;
    starting a server and recording it), and for a main thread that waits on other threads' locks and futures,
    where a stop raised at an arbitrary point can leave a lock held and hang the clean-up. The yielded function acts
    on a noted signal at once, at a point the block chooses, and ends the deferral (the previous handlers are back).

    Noted by handlers, not held by the thread's signal mask: a signal sent to the process passes a mask through any
    other thread (OpenBLAS's, started with numpy), and the processes the block starts would inherit the mask and
    ignore their own stops."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    held: list[int] = []

    def note(number: int, frame: FrameType | None) -> None:
        held.append(number)

    previous = {number: signal.signal(number, note) for number in STOP_SIGNALS}

    def restore() -> None:
        for number, old in previous.items():
            signal.signal(number, old if old is not None else signal.SIG_DFL)
        previous.clear()

    def act() -> None:
        if held:
            number = held[0]
            held.clear()
            restore()
            signal.raise_signal(number)  # to the handler the block had replaced, which notes any later one

    try:
        yield act
    finally:
        restore()
        act()
