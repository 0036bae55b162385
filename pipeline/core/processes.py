"""Job processes (processing and training instances): each in its own process group, ended as a whole, and dying
with the ``llpipe`` process that started it, even when that one is killed with SIGKILL and cannot clean up.

On Linux the child asks the kernel for SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``) before it runs
the command; elsewhere only the process group is set up. The signal is tied to the starting *thread*, so the thread
that starts a job process must wait for it (every caller does).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any, Protocol

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> Callable[[], None] | None:
    """The ``preexec_fn`` that makes the child die with this process, or None where the kernel offers no way."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def in_child() -> None:  # runs between fork and exec: no imports, no allocations worth a lock
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the request was in place
            os._exit(1)

    return in_child


class JobProcess(Protocol):
    """What the callers use of a job process: ``subprocess.Popen`` or a fork server's child
    (``pipeline.core.forkserver.ForkedProcess``), with Popen's conventions (``returncode`` -9: ended by SIGKILL)."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def kill(self) -> None: ...


def start(command: Sequence[str], **popen_arguments: Any) -> subprocess.Popen:
    """``subprocess.Popen(command)`` in a new process group, killed by the kernel if this process dies first."""
    return subprocess.Popen(command, start_new_session=True, preexec_fn=_die_with_parent(), **popen_arguments)


def kill_group(process: JobProcess) -> None:
    """End a job process and everything it started (its process group, made by ``start``)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
