"""This host's test split, written as it is read: its RecordIO-protobuf frames in input order to the one test shard,
and each record's row id to the shard's ids file (:mod:`containerlib.row_ids`), a chunk at a time, so ids and
records stay aligned without holding either in memory (the test split is not shuffled: nothing reads it in order)."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO, TextIO

import numpy as np

from containerlib.hosts import Host
from containerlib.names import SHARD_SUFFIX
from containerlib.row_ids import IDS_SUFFIX


class TestSplitWriter:
    """Appends test rows (frames) and their ids to this host's test shard and its ids file in the work folder."""

    __test__ = False  # not a pytest class

    def __init__(self, work_dir: Path, host: Host) -> None:
        self.shard = work_dir / f"test-{host.name}-00000{SHARD_SUFFIX}"
        self.ids = work_dir / (self.shard.name + IDS_SUFFIX)
        self.rows = 0
        self._frames: BinaryIO | None = None
        self._lines: TextIO | None = None

    def add(self, frames: np.ndarray, ids: list[str]) -> None:
        """Rows' frames (uint8, one row each) and their ids (JSON lines), in the same order."""
        if len(frames) != len(ids):
            raise ValueError(f"{len(frames)} test rows but {len(ids)} ids")
        if not len(ids):
            return
        if self._frames is None:
            self._frames = open(self.shard, "wb")  # noqa: SIM115 - closed in close()
            self._lines = open(self.ids, "w", encoding="utf-8")  # noqa: SIM115
        assert self._lines is not None
        self._frames.write(np.ascontiguousarray(frames).data)
        self._lines.write("\n".join(ids) + "\n")
        self.rows += len(ids)

    def close(self) -> None:
        for handle in (self._frames, self._lines):
            if handle is not None:
                handle.close()
