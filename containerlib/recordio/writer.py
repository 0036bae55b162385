"""Writing RecordIO-protobuf: every record of a batch built at once in one numpy byte array.

Features and labels are written as Float32 tensors; float64 input is converted, integer or other features are a
TypeError, labels may be any real numeric dtype (converted to float32). NaN or infinity is a ValueError naming the
row, because Linear Learner cannot train on it. Records are never split with the continuation flag, exactly like
SDK v2 (the reader accepts split records).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import numpy as np

from containerlib.recordio.varints import varint_bytes, varint_grid, varint_lengths, varints_flat
from containerlib.recordio.wire import (
    LABEL_PREFIX,
    MAGIC,
    MAX_RECORD_BYTES,
    TAG_FLOAT32,
    VALUES_KEY,
    exclusive_cumsum,
    scatter_regions,
)

_WRITE_BATCH_BYTES = 4 << 20  # bytes of output built per numpy batch when writing (fits in cache)


def _as_feature_matrix(X: Any) -> np.ndarray:
    """X as a little-endian float32 matrix whose rows are contiguous (not copied when they are, e.g. the features of
    wider rows that end with the label); float64 converted, other dtypes a TypeError."""
    array = np.asarray(X)
    if array.dtype.kind != "f":
        raise TypeError(f"features must be a float32 or float64 array, got dtype {array.dtype}")
    if array.ndim != 2:
        raise ValueError(f"features must be a 2-D array (rows x features), got {array.ndim} dimension(s)")
    if array.dtype == np.dtype("<f4") and array.strides[1] == 4 and array.strides[0] >= 4 * array.shape[1]:
        return array  # .view(np.uint8) works on it: its last axis is contiguous
    return np.ascontiguousarray(array, dtype="<f4")


def _as_labels(y: Any, n_rows: int) -> np.ndarray | None:
    """y as a contiguous little-endian float32 vector of n_rows values, or None."""
    if y is None:
        return None
    labels = np.asarray(y)
    if labels.dtype.kind not in "fiub":
        raise TypeError(f"labels must be numeric, got dtype {labels.dtype}")
    if labels.ndim != 1 or labels.shape[0] != n_rows:
        raise ValueError(f"labels must be a 1-D array of {n_rows} values (one per row), got shape {labels.shape}")
    return np.ascontiguousarray(labels, dtype="<f4")


def _check_finite(values: np.ndarray, first_row: int, what: str, indptr: np.ndarray | None = None) -> None:
    """ValueError naming the first row holding NaN or infinity (``indptr`` maps CSR values to rows)."""
    with np.errstate(over="ignore"):  # one cheap pass; an overflow only sends it on to the exact check below
        total = np.add.reduce(values, axis=None)
    if np.isfinite(total):
        return
    finite = np.isfinite(values)
    if finite.all():
        return
    position = int(np.flatnonzero(~finite.reshape(-1))[0])
    if indptr is not None:
        row = int(np.searchsorted(indptr, position, side="right")) - 1
    elif values.ndim == 2:
        row, column = divmod(position, values.shape[1])
        raise ValueError(f"{what} has a non-finite value (NaN or infinity) at row {first_row + row}, column {column}")
    else:
        row = position
    raise ValueError(f"{what} has a non-finite value (NaN or infinity) at row {first_row + row}")


def _tensor_field(tag: int, payload_length: int) -> bytes:
    return bytes([tag]) + varint_bytes(payload_length)


def _dense_record_head(n_features: int) -> bytes:
    """The payload bytes before the feature floats of a dense float32 record (same for every row)."""
    values_bytes = 4 * n_features
    tensor = 1 + len(varint_bytes(values_bytes)) + values_bytes
    value = 1 + len(varint_bytes(tensor)) + tensor
    entry = len(VALUES_KEY) + 1 + len(varint_bytes(value)) + value
    return (
        _tensor_field(0x0A, entry)
        + VALUES_KEY
        + _tensor_field(0x12, value)
        + _tensor_field(TAG_FLOAT32, tensor)
        + _tensor_field(0x0A, values_bytes)
    )


@dataclass(frozen=True)
class DenseLayout:
    """The frame write_dense gives every row of ``n_features`` float32 features (and a label, when ``labelled``): the
    same bytes for every row but the numbers, so rows can be encoded straight into place (:meth:`frames`) by a
    caller that keeps them as frames, e.g. Preprocess, which shuffles encoded rows rather than encoding shuffled
    ones."""

    n_features: int
    labelled: bool
    template: np.ndarray  # uint8, one frame with its numbers zero
    features_at: int
    label_at: int  # where the label's 4 bytes go (meaningless when not labelled)

    @property
    def length(self) -> int:
        """Bytes of one frame (a multiple of 4)."""
        return int(self.template.size)

    def empty(self, n_rows: int) -> np.ndarray:
        """[n_rows, length] uint8 frames with every byte but the numbers already in place: whole rows copied (faster
        than writing around the numbers) by an assignment, which releases the GIL (``np.tile`` held it throughout,
        while the other threads converting chunks waited)."""
        frames = np.empty((n_rows, self.length), dtype=np.uint8)
        frames[...] = self.template
        return frames

    def fill(
        self, frames: np.ndarray, X: np.ndarray, y: np.ndarray | None, first_row: int = 0, check: bool = True
    ) -> None:
        """Put float32 rows X (any memory order) and labels y into ``frames`` (from :meth:`empty`); ValueError naming
        the row (counted from ``first_row``) for NaN or infinity, unless the caller made sure of it (``check``)."""
        if check:
            _check_finite(X, first_row, "features")
        if not frames.shape[0]:
            return  # no buffer to view
        _float_view(frames, self.features_at, self.n_features)[...] = X
        if self.labelled:
            if check:
                _check_finite(y, first_row, "labels")
            _float_view(frames, self.label_at, 1)[:, 0] = y

    def frames(self, X: np.ndarray, y: np.ndarray | None, check: bool = True) -> np.ndarray:
        """The [rows, length] uint8 frames of float32 rows X and labels y: what write_dense writes for them."""
        frames = self.empty(X.shape[0])
        self.fill(frames, X, y, check=check)
        return frames


def _float_view(frames: np.ndarray, at: int, count: int) -> np.ndarray:
    """``count`` float32 numbers at byte ``at`` of every frame, as a [rows, count] view (unaligned if ``at`` is)."""
    return np.ndarray((frames.shape[0], count), dtype="<f4", buffer=frames, offset=at, strides=(frames.strides[0], 4))


def dense_layout(n_features: int, labelled: bool) -> DenseLayout:
    """The layout of write_dense's frames for rows of ``n_features`` (ValueError if none or one does not fit)."""
    if n_features < 1:
        raise ValueError("features must have at least one column")
    head = _dense_record_head(n_features)
    tail = LABEL_PREFIX if labelled else b""
    payload_length = len(head) + 4 * n_features + (len(tail) + 4 if labelled else 0)
    if payload_length > MAX_RECORD_BYTES:
        raise ValueError(f"a row of {n_features} features does not fit in one RecordIO record")
    frame_length = 8 + payload_length + (-payload_length % 4)
    template = np.zeros(frame_length, dtype=np.uint8)
    template[:8] = np.frombuffer(np.array([MAGIC, payload_length], dtype="<u4").tobytes(), dtype=np.uint8)
    features_at = 8 + len(head)
    template[8:features_at] = np.frombuffer(head, dtype=np.uint8)
    label_at = features_at + 4 * n_features + len(tail)
    template[features_at + 4 * n_features : label_at] = np.frombuffer(tail, dtype=np.uint8)
    return DenseLayout(n_features, labelled, template, features_at, label_at)


def write_dense(fileobj: IO[bytes], X: Any, y: Any = None) -> int:
    """Write each row of X (and its label) as one RecordIO-protobuf record; returns the number of records.

    Byte-identical to SDK v2's ``write_numpy_to_dense_tensor`` for float32 X and y.
    """
    matrix = _as_feature_matrix(X)
    n_rows, n_features = matrix.shape
    labels = _as_labels(y, n_rows)
    layout = dense_layout(n_features, labels is not None)
    rows_per_batch = max(1, min(n_rows, _WRITE_BATCH_BYTES // layout.length))
    buffer = layout.empty(rows_per_batch)  # reused: one allocation for all batches
    for start in range(0, n_rows, rows_per_batch):
        rows = matrix[start : start + rows_per_batch]
        block = buffer[: rows.shape[0]]
        layout.fill(block, rows, None if labels is None else labels[start : start + rows_per_batch], start)
        fileobj.write(block.data)
    return n_rows


@dataclass
class _Piece:
    """Bytes each row contributes to a record: a [n, width] grid (valid up to lengths) or flat concatenated data."""

    lengths: np.ndarray
    grid: np.ndarray | None = None
    flat: np.ndarray | None = None  # None with grid None: zero bytes (padding)


def _constant(data: bytes, n_rows: int, present: np.ndarray | None = None) -> _Piece:
    grid = np.broadcast_to(np.frombuffer(data, dtype=np.uint8), (n_rows, len(data)))
    lengths = np.full(n_rows, len(data), dtype=np.int64)
    return _Piece(lengths if present is None else np.where(present, lengths, 0), grid=grid)


def _varint_piece(values: np.ndarray, present: np.ndarray | None = None) -> _Piece:
    grid, lengths = varint_grid(values)
    return _Piece(lengths if present is None else np.where(present, lengths, 0), grid=grid)


def _assemble_rows(pieces: list[_Piece]) -> np.ndarray:
    """Concatenate, row after row, every piece's bytes for that row into one flat byte array."""
    lengths = np.stack([piece.lengths for piece in pieces], axis=1)
    row_lengths = lengths.sum(axis=1)
    piece_starts = exclusive_cumsum(row_lengths)[:, None] + exclusive_cumsum(lengths, axis=1)
    out = np.zeros(int(row_lengths.sum()), dtype=np.uint8)
    for j, piece in enumerate(pieces):
        starts = piece_starts[:, j]
        if piece.grid is not None:
            width = piece.grid.shape[1]
            destination = starts[:, None] + np.arange(width)
            if bool((piece.lengths == width).all()):
                out[destination] = piece.grid
            else:
                valid = np.arange(width) < piece.lengths[:, None]
                out[destination[valid]] = piece.grid[valid]
        elif piece.flat is not None and piece.flat.size:
            shift = starts - exclusive_cumsum(piece.lengths)
            out[np.repeat(shift, piece.lengths) + np.arange(piece.flat.size)] = piece.flat
    return out


def _sparse_frames(
    data: np.ndarray, indices: np.ndarray, counts: np.ndarray, n_cols: int, labels: np.ndarray | None
) -> np.ndarray:
    """The RecordIO frames of a batch of CSR rows (data/indices of these rows only, counts = nnz per row).

    Each record is [head | values | keys head | keys | tail]; the small parts are assembled per row from byte
    grids, and the two bulk streams are laid into place with boolean masks built by np.repeat.
    """
    n_rows = counts.size
    present = counts > 0
    key_bytes, key_byte_counts = varints_flat(indices)
    key_lengths = np.zeros(n_rows, dtype=np.int64)
    if key_bytes.size:  # bytes of keys per row; reduceat over the non-empty rows only (it mishandles empty ones)
        key_lengths[present] = np.add.reduceat(key_byte_counts, exclusive_cumsum(counts)[present], dtype=np.int64)
    value_lengths = 4 * counts
    shape_part = b"\x1a" + varint_bytes(len(varint_bytes(n_cols))) + varint_bytes(n_cols)
    tensor = (
        np.where(present, 1 + varint_lengths(value_lengths) + value_lengths, 0)
        + np.where(present, 1 + varint_lengths(key_lengths) + key_lengths, 0)
        + len(shape_part)
    )
    value = 1 + varint_lengths(tensor) + tensor
    entry = len(VALUES_KEY) + 1 + varint_lengths(value) + value
    payload = 1 + varint_lengths(entry) + entry + (len(LABEL_PREFIX) + 4 if labels is not None else 0)
    if n_rows and int(payload.max()) > MAX_RECORD_BYTES:
        raise ValueError("a sparse row does not fit in one RecordIO record")
    frame_head = np.empty((n_rows, 8), dtype=np.uint8)
    frame_head.view("<u4")[:, 0] = MAGIC
    frame_head.view("<u4")[:, 1] = payload
    head = [
        _Piece(np.full(n_rows, 8, dtype=np.int64), grid=frame_head),
        _constant(b"\x0a", n_rows),
        _varint_piece(entry),
        _constant(VALUES_KEY + b"\x12", n_rows),
        _varint_piece(value),
        _constant(bytes([TAG_FLOAT32]), n_rows),
        _varint_piece(tensor),
        _constant(b"\x0a", n_rows, present),
        _varint_piece(value_lengths, present),
    ]
    keys_head = [_constant(b"\x12", n_rows, present), _varint_piece(key_lengths, present)]
    tail = [_constant(shape_part, n_rows)]
    if labels is not None:
        tail.append(_constant(LABEL_PREFIX, n_rows))
        tail.append(_Piece(np.full(n_rows, 4, dtype=np.int64), grid=labels.view(np.uint8).reshape(-1, 4)))
    tail.append(_Piece(-payload % 4))
    small = _assemble_rows(head + keys_head + tail)
    parts = np.stack(
        [
            sum(piece.lengths for piece in head),
            value_lengths,
            sum(piece.lengths for piece in keys_head),
            key_lengths,
            sum(piece.lengths for piece in tail),
        ],
        axis=1,
    ).reshape(-1)
    out = np.empty(int(parts.sum()), dtype=np.uint8)  # frames are padded, so its length is a multiple of 4
    # the few small bytes go by index (an index per byte is cheap for them), the bulk streams by slices or masks
    segments = parts.reshape(-1, 5)
    segment_starts = exclusive_cumsum(parts).reshape(-1, 5)
    small_lengths = segments[:, 0::2].reshape(-1)
    shift = segment_starts[:, 0::2].reshape(-1) - exclusive_cumsum(small_lengths)
    out[np.repeat(shift, small_lengths) + np.arange(small.size)] = small
    # long rows: a slice each; short ones: a boolean mask (np.repeat builds it a byte per step before numpy 1.25,
    # which cost numpy 1.24 as much as the rest of the encoding for long rows)
    if not scatter_regions(out, segment_starts[:, 3], key_lengths, key_bytes):
        out[np.repeat(np.tile(np.array([False, False, False, True, False]), n_rows), parts)] = key_bytes
    if scatter_regions(out, segment_starts[:, 1], value_lengths, data.view(np.uint8)):
        return out
    head_lengths = parts[0::5]
    if (head_lengths % 4).any():
        out[np.repeat(np.tile(np.array([False, True, False, False, False]), n_rows), parts)] = data.view(np.uint8)
    else:  # every row's values start 4-byte aligned (frames are): lay them in as words, a 4x shorter mask
        words = np.stack([head_lengths, value_lengths, parts.reshape(-1, 5)[:, 2:].sum(axis=1)], axis=1) // 4
        out.view("<u4")[np.repeat(np.tile(np.array([False, True, False]), n_rows), words.reshape(-1))] = data.view(
            "<u4"
        )
    return out


def write_sparse(fileobj: IO[bytes], X: Any, y: Any = None) -> int:
    """Write each row of a scipy.sparse matrix as one sparse record (values, keys, shape=[n_cols]); returns rows.

    Byte-identical to SDK v2's ``write_spmatrix_to_sparse_tensor`` for float32 data and labels: entries are written
    in the order the CSR form stores them, explicit zeros included.
    """
    import scipy.sparse  # lazily: only sparse callers need scipy

    if not scipy.sparse.issparse(X):
        raise TypeError(f"write_sparse needs a scipy.sparse matrix, got {type(X).__name__}")
    if X.dtype.kind != "f":
        raise TypeError(f"features must be a float32 or float64 sparse matrix, got dtype {X.dtype}")
    csr = X.tocsr()
    n_rows, n_cols = csr.shape
    labels = _as_labels(y, n_rows)
    indptr = csr.indptr.astype(np.int64)
    data = np.ascontiguousarray(csr.data, dtype="<f4")
    if csr.indices.dtype == np.int32:  # column indices are never negative: reinterpret, no copy
        indices = csr.indices.view(np.uint32)
    else:
        indices = csr.indices.astype(np.uint32 if n_cols <= 1 << 32 else np.uint64)
    row_starts = _sparse_batches(indptr)

    def encode(start: int, stop: int) -> np.ndarray:
        lo, hi = int(indptr[start]), int(indptr[stop])
        batch_data = data[lo:hi]
        _check_finite(batch_data, start, "features", indptr=indptr[start : stop + 1] - lo)
        batch_labels = None
        if labels is not None:
            batch_labels = labels[start:stop]
            _check_finite(batch_labels, start, "labels")
        return _sparse_frames(batch_data, indices[lo:hi], np.diff(indptr[start : stop + 1]), n_cols, batch_labels)

    for frames in _in_order_threaded(encode, list(zip(row_starts[:-1], row_starts[1:]))):
        fileobj.write(frames.data)
    return n_rows


def _in_order_threaded(work: Any, batches: list[tuple[int, int]]) -> Iterator[np.ndarray]:
    """``work(*batch)`` for every batch, in order, on up to two threads (numpy releases the GIL in the bulk copies).

    At most two batches beyond the one being written are in flight, so memory stays bounded by a few batches; an
    error in any batch is raised in order, and nothing after it is written.
    """
    if len(batches) < 2 or (os.cpu_count() or 1) < 2:
        yield from (work(*batch) for batch in batches)
        return
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2) as pool:
        pending: deque = deque()
        for batch in batches:
            pending.append(pool.submit(work, *batch))
            if len(pending) > 2:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _sparse_batches(indptr: np.ndarray, max_entries: int = 1 << 21, max_rows: int = 1 << 16) -> list[int]:
    """Row boundaries splitting a CSR matrix into batches of about max_entries stored values (at least one row)."""
    n_rows = indptr.size - 1
    bounds = [0]
    while bounds[-1] < n_rows:
        start = bounds[-1]
        stop = int(np.searchsorted(indptr, indptr[start] + max_entries, side="right")) - 1
        bounds.append(min(max(stop, start + 1), start + max_rows, n_rows))
    return bounds
