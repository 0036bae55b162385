"""This host's test split, written as it is read: its RecordIO-protobuf frames to the one test shard and each
record's row id to the shard's ids file (:mod:`containerlib.row_ids`), a chunk at a time, so ids and records stay
aligned without holding either in memory. Each chunk's test rows are shuffled (seeded), the ids with them: the
shard is in a random order within each chunk read (``--chunk-rows``), in input order from chunk to chunk."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO, TextIO

import numpy as np

from containerlib.hosts import Host
from containerlib.names import SHARD_SUFFIX, SPLIT_CODES
from containerlib.row_ids import IDS_SUFFIX, RowIds
from preprocessing.hashing import rng_entropy


class TestSetWriter:
    """Appends test rows (frames) and their ids to this host's test shard and its ids file in the work folder."""

    __test__ = False  # not a pytest class

    def __init__(self, work_dir: Path, host: Host, seed: int) -> None:
        self.shard = work_dir / f"test-{host.name}-00000{SHARD_SUFFIX}"
        self.ids = work_dir / (self.shard.name + IDS_SUFFIX)
        self.rows = 0
        self.rng = np.random.default_rng([rng_entropy(seed), host.index, SPLIT_CODES["test"], 2])
        self._frames: BinaryIO | None = None
        self._lines: TextIO | None = None

    def add(self, frames: np.ndarray, rows: np.ndarray, ids: RowIds) -> None:
        """The test rows ``rows`` of a chunk's ``frames`` (uint8, one row each) and their ids, in the same order;
        the rows are gathered once, already shuffled (not taken out of the chunk, then shuffled)."""
        if len(rows) != len(ids):
            raise ValueError(f"{len(rows)} test rows but {len(ids)} ids")
        if not len(ids):
            return
        if self._frames is None:
            self._frames = open(self.shard, "wb")  # noqa: SIM115 - closed in close()
            self._lines = open(self.ids, "w", encoding="utf-8")  # noqa: SIM115
        assert self._lines is not None
        order = self.rng.permutation(len(ids))
        self._frames.write(np.take(frames, rows[order], axis=0).data)
        self._lines.write(ids.lines(order))
        self.rows += len(ids)

    def close(self) -> None:
        for handle in (self._frames, self._lines):
            if handle is not None:
                handle.close()
