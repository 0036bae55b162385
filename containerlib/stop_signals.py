"""A job's stop signals as an exception, so the job's clean-up runs: SageMaker stops a job with SIGTERM (a local run
with SIGTERM or SIGHUP too), whose default action ends the process at once, leaving its work files behind.

Two ways to raise it: :func:`stop_signals_raise` raises in the main thread wherever it is, for single-threaded jobs;
:func:`stop_signals_checked` only notes the signal, and the job raises it at the points it chooses, for jobs with
threads, which an exception at an arbitrary point of the main thread can deadlock (see its docstring)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stopped(BaseException):
    """A stop signal arrived; a BaseException, like KeyboardInterrupt, so that no ``except Exception`` swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """What a shell reports for a process the signal ended: 128 + the signal's number."""
        return 128 + self.signum


@contextmanager
def stop_signals_raise() -> Iterator[None]:
    """Within the block, the first SIGTERM or SIGHUP raises :class:`Stopped` in the main thread (where Python runs
    handlers, also while it waits for a lock or a future); later ones are ignored, so the clean-up the first one
    started is not cut short. Outside the main thread (a job run in-process by a test) nothing changes. Only for a
    job that runs no threads of its own: see :func:`stop_signals_checked`."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        for ignored in STOP_SIGNALS:
            signal.signal(ignored, signal.SIG_IGN)
        raise Stopped(signum)

    previous = {signum: signal.signal(signum, stop) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class StopCheck:
    """The first stop signal a job received, raised by :meth:`check` where the job calls it."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def note(self, signum: int, frame: Any = None) -> None:
        """The signal handler: the first signal is kept, later ones ignored (the clean-up it starts is not cut
        short)."""
        if self.signum is None:
            self.signum = signum

    def check(self) -> None:
        """Raise the stop received, if any: :class:`Stopped`, or ``KeyboardInterrupt`` for SIGINT (what Python
        would have raised). Callable from any thread: a worker that calls it ends its task with the stop."""
        if self.signum == signal.SIGINT:
            raise KeyboardInterrupt
        if self.signum is not None:
            raise Stopped(self.signum)


def no_stop() -> None:
    """The stop check of a job run without :func:`stop_signals_checked` (in-process, by a test): never raises."""


@contextmanager
def stop_signals_checked() -> Iterator[StopCheck]:
    """Within the block, SIGTERM, SIGHUP and SIGINT (where Python would raise KeyboardInterrupt) are only noted;
    the job calls the yielded :meth:`StopCheck.check` at safe points (a chunk, a file, a shard) and the stop is
    raised there, or on leaving the block if the job did not reach one.

    For jobs with threads. Python runs a handler in the main thread at almost any bytecode, and one that raises
    there can land inside the threading code: between a lock's acquisition and the ``with`` that releases it (in
    ``Condition.__enter__``, ``concurrent.futures.wait``), or in a generator that joins its producer thread before
    its caller wakes that producer; the clean-up then waits forever (Preprocess hung so, stopped while it read a
    CSV). Outside the main thread (a job run in-process by a test) no handler changes and ``check`` never raises."""
    stop = StopCheck()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    signals = list(STOP_SIGNALS)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not one ignored by a background shell
        signals.append(signal.SIGINT)
    previous = {signum: signal.signal(signum, stop.note) for signum in signals}
    try:
        yield stop
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    stop.check()  # reached when the block ended without an exception: a stop that came after its last check
