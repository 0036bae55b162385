"""Reading RecordIO-protobuf files into arrays: frames (:mod:`~containerlib.recordio.framing`) decoded
(:mod:`~containerlib.recordio.fast_decode`) and checked to agree record to record (dense or sparse, width, labels)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import IO, Any

import numpy as np

from containerlib.recordio.fast_decode import decode
from containerlib.recordio.framing import Batch, RecordReader
from containerlib.recordio.wire import Columns, RecordIOError, RecordProblem


class _Assembler:
    """Turns decoded batches into (X, y), checking that all records agree (dense/sparse, width, labels)."""

    def __init__(self, reader: RecordReader) -> None:
        self._reader = reader
        self.sparse: bool | None = None
        self.n_features: int | None = None
        self.labelled: bool | None = None

    def arrays(self, batch: Batch) -> tuple[Any, np.ndarray | None]:
        try:
            columns = decode(batch.data, batch.starts, batch.lengths)
        except RecordProblem as problem:
            raise self._error(batch, problem) from None
        try:
            return self._to_arrays(columns)
        except RecordProblem as problem:
            raise self._error(batch, problem) from None

    def _error(self, batch: Batch, problem: RecordProblem) -> RecordIOError:
        return self._reader.error(problem.problem, int(batch.offsets[problem.index]), batch.first_index + problem.index)

    def _to_arrays(self, c: Columns) -> tuple[Any, np.ndarray | None]:
        n = c.value_counts.size
        sparse = (c.key_counts > 0) | ((c.shapes >= 0) & (c.value_counts == 0))
        if self.sparse is None:
            self.sparse = bool(sparse[0])
            self.labelled = bool(c.has_label[0])
            self.n_features = int(c.shapes[0] if self.sparse else c.value_counts[0])
        checks: list[tuple[np.ndarray, Any]] = [
            (
                c.has_label & (c.label_counts != 1),
                lambda i: f"label['values'] has {c.label_counts[i]} values; expected exactly one",
            ),
            (
                c.has_label != self.labelled,
                lambda i: (
                    "record has no label but earlier records do"
                    if self.labelled
                    else "record has a label but earlier records do not"
                ),
            ),
            (
                sparse != self.sparse,
                lambda i: (
                    "sparse record (keys) after dense records"
                    if sparse[i]
                    else "dense record (no keys) after sparse records"
                ),
            ),
        ]
        if self.sparse:
            bad_key = np.zeros(n, dtype=bool)
            if c.keys.size and int(c.keys.max()) >= int(c.shapes.min()):  # rows only looked up on failure
                key_rows = np.repeat(np.arange(n), c.key_counts)
                bad_key[key_rows[c.keys.astype(np.float64) >= c.shapes[key_rows]]] = True
            checks += [
                (c.shapes < 0, lambda i: "sparse record has no shape; expected shape = [number of features]"),
                (
                    c.key_counts != c.value_counts,
                    lambda i: f"sparse record has {c.key_counts[i]} keys for {c.value_counts[i]} values",
                ),
                (
                    c.shapes != self.n_features,
                    lambda i: (
                        f"inconsistent feature count: shape {c.shapes[i]}, expected {self.n_features} "
                        "like the first record"
                    ),
                ),
                (bad_key, lambda i: f"a key is out of range for shape {c.shapes[i]}"),
            ]
        else:
            checks += [
                (
                    (c.shapes >= 0) & (c.shapes != c.value_counts),
                    lambda i: f"shape says {c.shapes[i]} values, the record has {c.value_counts[i]}",
                ),
                (
                    c.value_counts != self.n_features,
                    lambda i: (
                        f"inconsistent feature count: {c.value_counts[i]} values, expected {self.n_features} "
                        "like the first record"
                    ),
                ),
            ]
        failing = [(int(np.argmax(mask)), message) for mask, message in checks if mask.any()]
        if failing:
            index, message = min(failing, key=lambda item: item[0])
            raise RecordProblem(index, message(index))
        labels = c.labels if self.labelled else None
        if self.sparse:
            import scipy.sparse  # lazily: only sparse data needs scipy

            index_type = np.int32 if max(self.n_features, c.values.size) < 1 << 31 else np.int64
            indptr = np.concatenate([[0], np.cumsum(c.value_counts)]).astype(index_type)
            indices = c.keys.view(np.int32) if c.keys.dtype == np.uint32 and index_type is np.int32 else c.keys
            indices = indices.astype(index_type, copy=False)
            matrix = scipy.sparse.csr_matrix((c.values, indices, indptr), shape=(n, self.n_features))
            return matrix, labels
        if c.dense is not None:
            return c.dense, labels
        return c.values.reshape(n, self.n_features), labels


def iter_batches(fileobj: IO[bytes], batch_size: int) -> Iterator[tuple[Any, np.ndarray | None]]:
    """Yield (X, y) for consecutive batches of ``batch_size`` records (the last may be smaller), streaming.

    Memory is bounded by one batch; every batch is checked against the first (dense/sparse, width, labels).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    reader = RecordReader(fileobj)
    assembler = _Assembler(reader)
    while (batch := reader.next_batch(batch_size)) is not None:
        yield assembler.arrays(batch)


def read(fileobj: IO[bytes]) -> tuple[Any, np.ndarray | None]:
    """Read a whole RecordIO-protobuf file: (dense float32 X or CSR matrix, float32 y or None)."""
    reader = RecordReader(fileobj, read_all=True)
    batch = reader.next_batch(sys.maxsize)  # everything is read at once: all records form one batch
    if batch is None:
        return np.empty((0, 0), dtype=np.float32), None
    arrays = _Assembler(reader).arrays(batch)
    reader.next_batch(sys.maxsize)  # all that can be left is a corrupt or truncated tail, which raises
    return arrays


def read_file(path: str | os.PathLike[str]) -> tuple[Any, np.ndarray | None]:
    """``read`` on a file path."""
    with open(path, "rb") as fileobj:
        return read(fileobj)
