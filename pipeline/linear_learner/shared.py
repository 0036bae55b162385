"""Gradient exchange between the local instances through shared memory (the fast path on one machine).

Each instance owns one memory-mapped file per vector length in a folder on tmpfs (``/dev/shm``): a header whose first
int64 is the last round it published, then two buffers of that length. A round: write the vector into buffer
``round % 2``, publish the round number, wait until every peer has published it, and add all the buffers up in host
order, so every instance computes bit-identical sums (as the parameter server does). Two buffers are enough: a host
can be at most one round ahead of a peer, because it cannot finish a round before every peer has published it.

Why: the TCP parameter server costs two system calls and a thread switch in the launcher per host and step, more
than the step's own computing on a mid-size table, so two local hosts were no faster than one. Here a round is a copy
and a read of memory. Publishing the round after the data relies on stores becoming visible in program order (x86-64
total store order); ``available()`` says where that holds, and elsewhere the launcher keeps the parameter server.
Waiting first spins on ``sched_yield`` for at most :data:`_SPIN_SECONDS` (a peer that is computing arrives within
that: a yield costs well under a microsecond and hands the core to any runnable process), then blocks on a futex on
the peer's round word, which the peer wakes when it publishes. Sleeping instead (``time.sleep(50e-6)``) costs about
110 us a wake-up on Linux (50 us timer slack plus the wake-up), on the order of a fifth of a mini-batch step. On an
oversubscribed machine spinning does not pay: the peer is descheduled, not computing, and the spinning host takes
CPU time from it (the kernel shares the CPU between sessions, and both hosts are in the launcher's). So each host
counts, over every :data:`_SPIN_WINDOW` rounds, the waits that outlasted the spin, and blocks at once in the next
window when more than :data:`_SPIN_MISSES` of them did (it spins again once most waits are short). Waiting gives up
after the heartbeat, naming the host that stopped publishing.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from pipeline.linear_learner.collective import PeerSilent

_HEADER_BYTES = 64  # the published round (int64), padded to a cache line
_SPIN_SECONDS = 200e-6  # yield-spin this long for a peer before blocking: beyond it the peer is likely descheduled
_SPIN_WINDOW = 64  # rounds between decisions whether spinning pays
_SPIN_MISSES = 0.25  # spin no more while over this share of a window's waits outlast the spin
_BLOCK_SECONDS = 0.05  # longest single futex wait: the heartbeat is checked in between
_SLEEP_SECONDS = 50e-6  # waiting for a peer's file at start-up, and the wait where futexes are missing
_SYS_FUTEX = 202  # x86-64
_FUTEX_WAIT, _FUTEX_WAKE = 0, 1
_WAKE_ALL = 0x7FFFFFFF


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def _futex_syscall() -> object:
    """libc's ``syscall`` for futex waits and wakes on the mapped round words; None where there is none (then
    waiting sleeps)."""
    if not sys.platform.startswith("linux") or platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_long
    return function


class _Futex:
    """Futex waits and wakes on words of the mapped files, or sleeping where there are none (one per collective:
    it falls back to sleeping for good once the kernel refuses futexes)."""

    def __init__(self) -> None:
        self._syscall = _futex_syscall()

    def wake(self, address: ctypes.c_void_p) -> None:
        if self._syscall is not None:
            self._syscall(_SYS_FUTEX, address, _FUTEX_WAKE, _WAKE_ALL, None, None, 0)

    def wait(self, address: ctypes.c_void_p, seen: int, seconds: float) -> None:
        if self._syscall is None:
            time.sleep(_SLEEP_SECONDS)
            return
        timeout = _Timespec(int(seconds), int((seconds % 1) * 1e9))
        # returns at once (EAGAIN) when the word has already moved on: no wake-up is lost
        result = self._syscall(
            _SYS_FUTEX, address, _FUTEX_WAIT, ctypes.c_uint32(seen & 0xFFFFFFFF), ctypes.byref(timeout), None, 0
        )
        if result == -1 and ctypes.get_errno() in (errno.ENOSYS, errno.EPERM):  # futexes filtered out: sleep
            self._syscall = None


def available() -> bool:
    """Whether this machine orders stores the way the exchange relies on (x86-64) and has ``os.sched_yield``."""
    return platform.machine().lower() in ("x86_64", "amd64") and hasattr(os, "sched_yield")


def exchange_folder() -> Path:
    """Where the launcher creates the exchange folder: tmpfs when the system has it."""
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(os.environ.get("TMPDIR", "/tmp"))


class _Slot:
    """One host's mapped file for one vector length: the published round and two buffers."""

    def __init__(self, path: Path, length: int, create: bool, futex: _Futex) -> None:
        self._futex = futex
        size = _HEADER_BYTES + 2 * 8 * max(length, 1)
        if create:
            temporary = path.with_name(path.name + ".new")
            with open(temporary, "wb") as stream:
                stream.truncate(size)
            os.replace(temporary, path)  # peers see the file whole or not at all
        with open(path, "r+b") as stream:
            self._map = mmap.mmap(stream.fileno(), size)
        self.round = np.frombuffer(self._map, dtype=np.int64, count=1, offset=0)
        # the futex word: the low 32 bits of the round (little-endian), in memory shared by every host
        self.address = ctypes.c_void_p(self.round.ctypes.data)
        self.buffers = np.frombuffer(self._map, dtype=np.float64, count=2 * length, offset=_HEADER_BYTES).reshape(
            2, length
        )

    def wake(self) -> None:
        """Wake every host blocked on this slot's round (a system call of about a microsecond; none waiting is fine)."""
        self._futex.wake(self.address)

    def block(self, seen: int, seconds: float) -> None:
        """Sleep until this slot's round changes from ``seen`` (woken by ``wake``), ``seconds`` pass, or a signal."""
        self._futex.wait(self.address, seen, seconds)

    def close(self) -> None:
        del self.round, self.buffers, self.address
        self._map.close()


class SharedMemoryCollective:
    """One instance's side of the shared-memory exchange; every instance calls ``allreduce`` in the same order."""

    def __init__(
        self,
        folder: Path,
        rank: int,
        size: int,
        names: list[str],
        timeout: float,
        first_timeout: float | None = None,
        control: object = None,
    ) -> None:
        """``timeout``: how long a peer may go without publishing (the heartbeat); ``first_timeout``: the same for
        the first round, when peers may still be reading their data; ``control``: the parameter server
        connection that told the launcher this host is up, closed with this exchange."""
        self.rank = rank
        self.size = size
        self._folder = Path(folder)
        self._names = names
        self._timeout = timeout
        self._first_timeout = max(first_timeout or timeout, timeout)
        self._control = control
        self._slots: dict[int, list[_Slot | None]] = {}
        self._rounds: dict[int, int] = {}
        self._started = False  # after the first round every peer is up: the heartbeat applies
        self._futex = _Futex()
        self._spin = _SPIN_SECONDS  # this window's spin before blocking (0 when spinning stopped paying)
        self._waits = 0  # waits in this window
        self._long_waits = 0  # of them, those longer than _SPIN_SECONDS
        self.wait_seconds = 0.0  # time spent waiting for the peers (the synchronisation share of training)

    def _slots_for(self, length: int) -> list[_Slot | None]:
        slots = self._slots.get(length)
        if slots is None:
            slots = [None] * self.size
            slots[self.rank] = _Slot(self._folder / f"{self.rank}.{length}", length, True, self._futex)
            self._slots[length] = slots
            self._rounds[length] = 0
        return slots

    def _peer(self, slots: list[_Slot | None], rank: int, length: int, deadline: float, limit: float) -> _Slot:
        slot = slots[rank]
        if slot is None:
            path = self._folder / f"{rank}.{length}"
            while not path.is_file():
                self._check(rank, deadline, limit)
                time.sleep(_SLEEP_SECONDS)
            slot = slots[rank] = _Slot(path, length, False, self._futex)
        return slot

    def _check(self, rank: int, deadline: float, limit: float) -> None:
        if time.monotonic() > deadline:
            raise PeerSilent(
                f"{self._names[rank]} sent no update for {limit:g} s: the instance is stopped or hung "
                "(LLPIPE_TRAINING_HEARTBEAT_SECONDS sets this limit)"
            )

    def allreduce(self, vector: np.ndarray) -> np.ndarray:
        """Sum ``vector`` over all instances (float64, added in host order)."""
        vector = np.asarray(vector, dtype=np.float64).ravel()
        length = vector.shape[0]
        slots = self._slots_for(length)
        number = self._rounds[length] = self._rounds[length] + 1
        buffer = number % 2
        mine = slots[self.rank]
        assert mine is not None
        mine.buffers[buffer] = vector
        mine.round[0] = number  # published after the data: x86-64 keeps the stores in this order
        mine.wake()
        started = time.monotonic()
        limit = self._timeout if self._started else self._first_timeout
        deadline = started + limit
        spin_until = started + self._spin
        for rank in range(self.size):
            if rank == self.rank:
                continue
            peer = self._peer(slots, rank, length, deadline, limit)
            while peer.round[0] < number:
                if time.monotonic() < spin_until:
                    os.sched_yield()
                    continue
                self._check(rank, deadline, limit)
                seen = int(peer.round[0])
                if seen < number:
                    peer.block(seen, _BLOCK_SECONDS)
        waited = time.monotonic() - started
        self.wait_seconds += waited
        self._adapt(waited)
        self._started = True
        total = slots[0].buffers[buffer].copy() if slots[0] is not None else None
        assert total is not None
        for rank in range(1, self.size):
            slot = slots[rank]
            assert slot is not None
            total += slot.buffers[buffer]
        return total

    def _adapt(self, waited: float) -> None:
        """Count this wait; at the end of a window, spin in the next only if few waits outlasted the spin."""
        self._waits += 1
        self._long_waits += waited > _SPIN_SECONDS
        if self._waits == _SPIN_WINDOW:
            self._spin = _SPIN_SECONDS if self._long_waits <= _SPIN_MISSES * _SPIN_WINDOW else 0.0
            self._waits = self._long_waits = 0

    def close(self) -> None:
        """Unmap every file (the launcher removes the folder) and close the control connection."""
        if self._control is not None:
            self._control.close()  # type: ignore[attr-defined]
        for slots in self._slots.values():
            for slot in slots:
                if slot is not None:
                    slot.close()
        self._slots.clear()
