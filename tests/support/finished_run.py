"""The finished local run the integration tests share (tests/integration/conftest.py's ``finished_run``): what it
holds, the table it trained on, and the lock its builders take."""

from __future__ import annotations

import fcntl
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from support import drift_table


@dataclass(frozen=True)
class FinishedRun:
    """A finished local run of the drift table with No/Yes labels under the FAST settings (version 1 registered).

    Its work dir is shared by every test of the session (and both xdist workers): read it, never write into it; a
    test that serves, deploys, registers or runs again works on ``copy_to`` a folder of its own."""

    workdir: Path
    execution_id: str
    frame: pd.DataFrame  # the table the run trained on, labels as No/Yes

    def copy_to(self, folder: Path) -> Path:
        """A copy of the work dir at ``folder`` (which must not exist): the same run, registry and files."""
        shutil.copytree(self.workdir, folder, symlinks=True)
        return folder


def drift_frame() -> pd.DataFrame:
    """The drift table with its 0/1 labels as No/Yes, as the shared run trained on it."""
    frame = drift_table.table()
    frame[drift_table.LABEL] = frame[drift_table.LABEL].map({0: "No", 1: "Yes"})
    return frame


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (created if missing), held across processes: the xdist workers of a session."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
