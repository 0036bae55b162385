"""The local backend's watch over a job instance: the bytes its volume holds and the memory its processes take.

SageMaker fails a job whose files outgrow its storage volume (``No space left on device``) or whose container runs
out of memory; locally the jobs run on this machine's disk and memory, so each instance's sandbox and process group
are measured while it runs, and the first instance past either limit fails the job with ``LimitExceeded``'s message
naming the step, the limit, what the instance held and the parameter to raise.

An instance ended by a signal llpipe did not send says so (:meth:`Limits.signal_error`): a SIGKILL from outside is
most likely the kernel's out-of-memory killer (this machine, or its container, ran out before the instance type's
memory was reached), named with the memory its processes last held, the machine's and the instance type's, and the
parameter to change; never "exited with code -9: no output".
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
MB = 1024 * 1024


def machine_memory() -> int | None:
    """This machine's physical memory in bytes, None where it cannot be told."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * PAGE_BYTES
    except (AttributeError, ValueError, OSError):
        return None


def signal_name(number: int) -> str:
    """``SIGKILL`` for 9; ``signal 64`` for a number without a name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


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


def groups_rss(groups: Iterable[int]) -> dict[int, int]:
    """Each process group of ``groups`` (a job instance and what it started) -> the resident memory of its
    processes, from one pass over ``/proc`` (a job's instances
    are measured together: a pass reads every process's ``stat`` on the machine, whichever groups are asked for)."""
    totals = dict.fromkeys(groups, 0)
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        # after the command: state ppid pgrp ... ; rss is field 24 (1-based), index 21 here
        group = int(fields[2])
        if group in totals:
            totals[group] += int(fields[21]) * PAGE_BYTES
    return totals


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

    def signal_error(self, host: str, returncode: int, peak_rss: int = 0) -> str | None:
        """Why an instance that ``returncode`` says was ended by a signal (negative: -9 is SIGKILL) failed, for a
        signal llpipe did not send; None for an exit code. ``peak_rss``: the most its processes were measured to
        hold."""
        if returncode >= 0:
            return None
        number = -returncode
        if number != signal.SIGKILL:
            return f"{self.step}: {host} was ended by {signal_name(number)} (signal {number}), sent from outside llpipe"
        facts = []
        if peak_rss:
            facts.append(f"its processes held {peak_rss / MB:,.0f} MB when last measured")
        machine = machine_memory()
        if machine:
            facts.append(f"this machine has {machine / MB:,.0f} MB")
        if self.memory_bytes:
            facts.append(f"the {self.instance_type}'s limit here is {self.memory_bytes / MB:,.0f} MB")
        known = f" ({'; '.join(facts)})" if facts else ""
        return (
            f"{self.step}: {host} was killed (SIGKILL, not sent by llpipe): most likely out of memory, the kernel "
            f"ending the largest process when this machine or its container runs out{known}; use a larger "
            f"{self._type_choice()}, less data per instance (more instances), or free memory on this machine"
        )

    def _type_choice(self) -> str:
        """``EvaluationInstanceType`` (the parameter that sets it), else ``instance type than ml.m5.large``."""
        if self.type_parameter and not self.type_parameter.startswith("its "):
            return self.type_parameter
        return f"instance type than {self.instance_type}" if self.instance_type else "instance type"
