"""The local backend's watch over a job instance: the bytes its volume holds and the memory its processes take.

SageMaker fails a job whose files outgrow its storage volume (``No space left on device``) or whose container runs
out of memory; locally the jobs run on this machine's disk and memory, so each instance's sandbox and process group
are measured while it runs, and the first instance past either limit fails the job with ``LimitExceeded``'s message
naming the step, the limit, what the instance held and the parameter to raise.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def held_bytes(folders: Iterable[Path]) -> int:
    """The bytes of every file under ``folders`` (a file hard-linked twice counts once: one volume, one copy)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for folder in folders:
        for directory, _, names in os.walk(folder):
            for name in names:
                try:
                    stat = os.lstat(os.path.join(directory, name))
                except OSError:  # removed while walking: a temporary name renamed
                    continue
                if (stat.st_dev, stat.st_ino) not in seen:
                    seen.add((stat.st_dev, stat.st_ino))
                    total += stat.st_size
    return total


def group_rss(group: int) -> int:
    """The resident memory of every process in process group ``group`` (a job instance and what it started)."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        # after the command: state ppid pgrp ... ; rss is field 24 (1-based), index 21 here
        if int(fields[2]) == group:
            total += int(fields[21]) * PAGE_BYTES
    return total


@dataclass(frozen=True)
class Limits:
    """One job's limits per instance (bytes; None: not enforced) and the parameters that set them."""

    step: str
    volume_bytes: int | None = None
    volume_gb: int | None = None
    volume_parameter: str = ""
    memory_bytes: int | None = None
    instance_type: str = ""
    type_parameter: str = ""

    def volume_error(self, host: str, held: int) -> str | None:
        """The failure when ``held`` bytes exceed the volume, else None."""
        if self.volume_bytes is None or held <= self.volume_bytes:
            return None
        return (
            f"{self.step}: {host} ran out of space on its {self.volume_gb} GB storage volume ({self.volume_bytes:,} "
            f"bytes here): its inputs and outputs held {held:,} bytes; raise {self.volume_parameter}"
        )

    def memory_error(self, host: str, rss: int) -> str | None:
        """The failure when ``rss`` bytes exceed the instance type's memory, else None."""
        if self.memory_bytes is None or rss <= self.memory_bytes:
            return None
        return (
            f"{self.step}: {host} ran out of memory on its {self.instance_type} ({self.memory_bytes:,} bytes here): "
            f"its processes took {rss:,} bytes; choose a larger {self.type_parameter}"
        )
