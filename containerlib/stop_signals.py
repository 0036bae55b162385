"""A job's stop signals as an exception, so the job's clean-up runs: SageMaker stops a job with SIGTERM (a local run
with SIGTERM or SIGHUP too), whose default action ends the process at once, leaving its work files behind."""

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
    started is not cut short. Outside the main thread (a job run in-process by a test) nothing changes."""
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
