"""A channel kept on disk as fixed-size blocks of decoded records, read back one block at a time.

The channel's files are decoded and checked once; each epoch then reads raw ``.npy`` blocks in a seeded random
order, so training memory is bounded by a block (about :data:`BLOCK_BYTES` of features), never by the channel.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from pipeline.linear_learner.trainer import Dataset

BLOCK_BYTES = 8 << 20  # features per block (dense size), small next to the interpreter and its libraries


def block_rows(dim: int, multiple_of: int = 1) -> int:
    """Records per block for ``dim`` features: about BLOCK_BYTES, a whole number of ``multiple_of`` batches."""
    rows = max(1, BLOCK_BYTES // (4 * max(dim, 1)))
    return max(multiple_of, rows - rows % multiple_of)


@dataclass(frozen=True)
class BlockChannel:
    """A channel's records as numbered blocks in ``folder`` (see :func:`write_blocks`)."""

    folder: Path
    sizes: tuple[int, ...]  # records per block, in file order
    dim: int
    sparse: bool
    label_counts: np.ndarray  # count of each integer label 0..max (empty when labels are not class ids)

    @property
    def rows(self) -> int:
        return sum(self.sizes)

    def blocks(self, rng: np.random.Generator | None = None) -> Iterator[Dataset]:
        order = rng.permutation(len(self.sizes)) if rng is not None else range(len(self.sizes))
        for index in order:
            yield self._load(int(index))

    def for_epoch(self, epoch: int) -> BlockChannel:
        """The same blocks every epoch."""
        return self

    def head(self, count: int) -> Dataset:
        parts: list[Dataset] = []
        taken = 0
        for index in range(len(self.sizes)):
            if taken >= count:
                break
            parts.append(self._load(index))
            taken += self.sizes[index]
        if not parts:
            return self._load(0).head(0)
        stack = sp.vstack if self.sparse else np.concatenate
        features = parts[0].features if len(parts) == 1 else stack([part.features for part in parts])
        labels = np.concatenate([part.labels for part in parts])
        return Dataset(features, labels).head(count)

    def label_histogram(self, classes: int) -> np.ndarray:
        counts = np.zeros(classes)
        shared = min(classes, len(self.label_counts))
        counts[:shared] = self.label_counts[:shared]
        return counts

    def _path(self, index: int, part: str) -> Path:
        return self.folder / f"{index:06d}-{part}.npy"

    def _load(self, index: int) -> Dataset:
        labels = np.load(self._path(index, "labels"))
        if self.sparse:
            data, indices, indptr = (np.load(self._path(index, part)) for part in ("data", "indices", "indptr"))
            features = sp.csr_matrix((data, indices, indptr), shape=(len(labels), self.dim))
        else:
            # mapped, not read: the pages are faulted in as the batches reach them, so reading a block is spread
            # over its steps instead of stalling this host (and with it every host, each step) for one copy
            features = np.load(self._path(index, "features"), mmap_mode="r")
        return Dataset(features, labels)


def write_blocks(folder: Path, records: Iterable[Dataset], multiple_of: int = 1) -> BlockChannel:
    """Regroup ``records`` (checked pieces in file order, all of one width and kind) into blocks saved in ``folder``.

    Memory holds at most one block plus one piece.
    """
    folder.mkdir(parents=True, exist_ok=True)
    sizes: list[int] = []
    pending: list[Dataset] = []
    pending_rows = 0
    dim, sparse, rows_per_block = 0, False, 0
    label_counts = np.zeros(0)

    def save(block: Dataset) -> None:
        index = len(sizes)
        np.save(folder / f"{index:06d}-labels.npy", block.labels)
        if sparse:
            matrix = sp.csr_matrix(block.features, dtype=np.float32)
            for part in ("data", "indices", "indptr"):
                np.save(folder / f"{index:06d}-{part}.npy", getattr(matrix, part))
        else:
            np.save(folder / f"{index:06d}-features.npy", np.ascontiguousarray(block.features, dtype=np.float32))
        sizes.append(block.rows)

    def flush(final: bool) -> None:
        nonlocal pending, pending_rows
        if not pending:
            return
        stack = sp.vstack if sparse else np.concatenate
        joined = (
            pending[0]
            if len(pending) == 1
            else Dataset(
                stack([piece.features for piece in pending]), np.concatenate([piece.labels for piece in pending])
            )
        )
        start = 0
        while joined.rows - start >= rows_per_block or (final and start < joined.rows):
            stop = min(start + rows_per_block, joined.rows)
            save(Dataset(joined.features[start:stop], joined.labels[start:stop]))
            start = stop
        rest = Dataset(joined.features[start:], joined.labels[start:])
        pending, pending_rows = ([rest], rest.rows) if rest.rows else ([], 0)

    for piece in records:
        if not rows_per_block:
            dim, sparse = int(piece.features.shape[1]), sp.issparse(piece.features)
            rows_per_block = block_rows(dim, multiple_of)
        ids = piece.labels.astype(np.int64)
        if label_counts is not None and len(ids) and np.array_equal(ids, piece.labels) and ids.min() >= 0:
            counts = np.bincount(ids)
            grown = np.zeros(max(len(counts), len(label_counts)))
            grown[: len(label_counts)] += label_counts
            grown[: len(counts)] += counts
            label_counts = grown
        elif len(ids):
            label_counts = None  # not class ids (regression): no histogram
        pending.append(piece)
        pending_rows += piece.rows
        if pending_rows >= rows_per_block:
            flush(final=False)
    flush(final=True)
    return BlockChannel(folder, tuple(sizes), dim, sparse, label_counts if label_counts is not None else np.zeros(0))
