"""RecordIO-protobuf codec (``application/x-recordio-protobuf``), vectorised with numpy.

The format Linear Learner reads: dmlc RecordIO frames (uint32 magic 0xCED7230A, uint32 length with a 3-bit
continuation flag on top, payload, zero padding to 4 bytes) around protobuf ``aialgs.data.Record`` messages.
Writers build every record of a batch at once in one numpy byte array, and readers decode the layout protobuf
produces with array operations, falling back to a per-record wire-format parser (still no protobuf library) for
unusual layouts, so the codec runs in a container with numpy alone (scipy only for sparse matrices).

Choices (documented here because callers depend on them):
- Features and labels are written as Float32 tensors; float64 input is converted, integer or other features are a
  TypeError, labels may be any real numeric dtype (converted to float32). NaN or infinity is a ValueError naming the
  row, because Linear Learner cannot train on it. Records are never split with the continuation flag on writing,
  exactly like SDK v2 (the reader accepts split records).
- Readers return float32 (Float64 and Int32 tensors are converted), a dense ndarray, or a scipy CSR matrix when the
  records are sparse (``keys`` present, or an empty row with a ``shape``); labels are ``label["values"]`` holding
  one value per record, returned as float32, or None when no record has a label. When every record has the same
  layout (what write_dense produces) the dense X is a strided, read-only view of the bytes read, not a copy:
  ``np.array(X)`` gives a contiguous, writable copy.
- Corrupt input raises RecordIOError (a ValueError) naming the file, byte offset, record index and what was
  expected; nothing is ever skipped silently.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import numpy as np

MAGIC = 0xCED7230A
_LENGTH_MASK = (1 << 29) - 1
_MAX_RECORD_BYTES = _LENGTH_MASK
_VALUES_KEY = b"\x0a\x06values"  # map entry field 1 (key), length 6, "values"
# Value.oneof tags (field << 3 | wire type 2): float32_tensor = 2, float64_tensor = 3, int32_tensor = 7.
_TAG_FLOAT32, _TAG_FLOAT64, _TAG_INT32 = 0x12, 0x1A, 0x3A
# A float32 label record part: label map entry {key "values", value {float32_tensor {values: [y]}}}.
_LABEL_PREFIX = b"\x12\x12" + _VALUES_KEY + b"\x12\x08\x12\x06\x0a\x04"
_WRITE_BATCH_BYTES = 4 << 20  # bytes of output built per numpy batch when writing (fits in cache)
_FIRST_READ_BYTES = 1 << 20
_DECODE_GROUP_BYTES = 8 << 20  # payload bytes of the records decoded together


class RecordIOError(ValueError):
    """Corrupt or unsupported RecordIO-protobuf input, located by byte offset and record index."""

    def __init__(self, problem: str, *, offset: int, record_index: int, name: str | None = None) -> None:
        where = f"{name}: " if name else ""
        super().__init__(f"{where}record {record_index} at byte offset {offset}: {problem}")
        self.problem = problem
        self.offset = offset
        self.record_index = record_index
        self.name = name


# ----------------------------------------------------------------------------------------------------------------
# varints


def _varint_bytes(value: int) -> bytes:
    """The protobuf base-128 varint encoding of one non-negative int."""
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _varint_width(values: np.ndarray) -> int:
    """Bytes needed by the longest varint among non-negative ``values``."""
    return len(_varint_bytes(int(values.max()))) if values.size else 1


def _varint_lengths(values: np.ndarray, dtype: type = np.int64) -> np.ndarray:
    """Encoded byte length of each non-negative value (1..10)."""
    lengths = np.ones(values.shape, dtype=dtype)
    for j in range(1, _varint_width(values)):
        lengths += values >= values.dtype.type(1 << (7 * j))
    return lengths


def _varint_grid(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Varints of non-negative ``values`` as a [n, width] byte grid (row i valid up to lengths[i]), and lengths."""
    lengths = _varint_lengths(values, np.uint8)
    width = _varint_width(values)
    grid = np.empty((values.size, width), dtype=np.uint8)
    for j in range(width):
        group = ((values >> values.dtype.type(7 * j)) & values.dtype.type(0x7F)).astype(np.uint8)
        if j + 1 < width:
            group |= (lengths > j + 1).view(np.uint8) << 7
        grid[:, j] = group
    return grid, lengths


def _varints_flat(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The concatenated varint encodings of non-negative ``values``, in order, and each one's length."""
    grid, lengths = _varint_grid(values)
    if grid.shape[1] == 1:
        return grid.reshape(-1), lengths
    return grid[np.arange(grid.shape[1], dtype=np.uint8) < lengths[:, None]], lengths


def _decode_varint_regions(data: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decode regions of back-to-back varints (``data`` holds the regions in order, ``lengths`` their sizes).

    Returns every value (uint32 if all fit in 28 bits, else uint64) and how many each region holds; _WireError if a
    varint crosses a region end.
    """
    if data.size == 0:
        return np.empty(0, dtype=np.uint64), np.zeros(lengths.size, dtype=np.int64)
    last = data < 0x80
    region_ends = np.cumsum(lengths)
    nonempty = lengths > 0
    if not bool(last[region_ends[nonempty] - 1].all()):
        raise _WireError("a varint runs past the end of its field")
    if bool(last.all()):
        return data.astype(np.uint32), lengths.astype(np.int64)
    ends = np.flatnonzero(last)
    lengths_each = np.diff(ends, prepend=-1)  # varints are back to back: each ends where the next begins
    width = int(lengths_each.max())
    if width > 10:
        raise _WireError("a varint is longer than 10 bytes")
    lengths_each = lengths_each.astype(np.uint8)
    value_type = np.uint32 if width <= 4 else np.uint64  # 4 varint bytes hold 28 bits
    padded = np.concatenate([np.zeros(width, dtype=np.uint8), data])  # so ends - back never goes below 0
    values = np.take(padded, ends + width).astype(value_type)
    for back in range(1, width):
        group = (np.take(padded, ends + (width - back)) & 0x7F).astype(value_type)
        values = np.where(lengths_each > back, (values << value_type(7)) | group, values)
    counts = np.diff(np.searchsorted(ends, region_ends, side="left"), prepend=0)
    return values, counts


def _decode_varints(data: np.ndarray) -> np.ndarray:
    """Decode a byte array holding whole varints back to back."""
    return _decode_varint_regions(data, np.array([data.size], dtype=np.int64))[0]


# ----------------------------------------------------------------------------------------------------------------
# writing


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
    return bytes([tag]) + _varint_bytes(payload_length)


def _dense_record_head(n_features: int) -> bytes:
    """The payload bytes before the feature floats of a dense float32 record (same for every row)."""
    values_bytes = 4 * n_features
    tensor = 1 + len(_varint_bytes(values_bytes)) + values_bytes
    value = 1 + len(_varint_bytes(tensor)) + tensor
    entry = len(_VALUES_KEY) + 1 + len(_varint_bytes(value)) + value
    return (
        _tensor_field(0x0A, entry)
        + _VALUES_KEY
        + _tensor_field(0x12, value)
        + _tensor_field(_TAG_FLOAT32, tensor)
        + _tensor_field(0x0A, values_bytes)
    )


def write_dense(fileobj: IO[bytes], X: Any, y: Any = None) -> int:
    """Write each row of X (and its label) as one RecordIO-protobuf record; returns the number of records.

    Byte-identical to SDK v2's ``write_numpy_to_dense_tensor`` for float32 X and y.
    """
    matrix = _as_feature_matrix(X)
    n_rows, n_features = matrix.shape
    labels = _as_labels(y, n_rows)
    if n_features == 0:
        raise ValueError("features must have at least one column")
    head = _dense_record_head(n_features)
    tail = _LABEL_PREFIX if labels is not None else b""
    payload_length = len(head) + 4 * n_features + (len(tail) + 4 if labels is not None else 0)
    if payload_length > _MAX_RECORD_BYTES:
        raise ValueError(f"a row of {n_features} features does not fit in one RecordIO record")
    frame_length = 8 + payload_length + (-payload_length % 4)

    template = np.zeros(frame_length, dtype=np.uint8)
    template[:8] = np.frombuffer(np.array([MAGIC, payload_length], dtype="<u4").tobytes(), dtype=np.uint8)
    features_at = 8 + len(head)
    template[8:features_at] = np.frombuffer(head, dtype=np.uint8)
    label_at = features_at + 4 * n_features + len(tail)
    template[features_at + 4 * n_features : label_at] = np.frombuffer(tail, dtype=np.uint8)

    features_end = features_at + 4 * n_features
    rows_per_batch = max(1, min(n_rows, _WRITE_BATCH_BYTES // frame_length))
    buffer = np.empty((rows_per_batch, frame_length), dtype=np.uint8)  # reused: one allocation for all batches
    buffer[:, :features_at] = template[:features_at]
    buffer[:, features_end:] = template[features_end:]
    for start in range(0, n_rows, rows_per_batch):
        rows = matrix[start : start + rows_per_batch]
        _check_finite(rows, start, "features")
        block = buffer[: rows.shape[0]]
        block[:, features_at:features_end] = rows.view(np.uint8)
        if labels is not None:
            batch_labels = labels[start : start + rows_per_batch]
            _check_finite(batch_labels, start, "labels")
            block[:, label_at : label_at + 4] = batch_labels.view(np.uint8).reshape(-1, 4)
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
    grid, lengths = _varint_grid(values)
    return _Piece(lengths if present is None else np.where(present, lengths, 0), grid=grid)


def _exclusive_cumsum(values: np.ndarray, axis: int = 0) -> np.ndarray:
    total = np.cumsum(values, axis=axis)
    return total - values


def _assemble_rows(pieces: list[_Piece]) -> np.ndarray:
    """Concatenate, row after row, every piece's bytes for that row into one flat byte array."""
    lengths = np.stack([piece.lengths for piece in pieces], axis=1)
    row_lengths = lengths.sum(axis=1)
    piece_starts = _exclusive_cumsum(row_lengths)[:, None] + _exclusive_cumsum(lengths, axis=1)
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
            shift = starts - _exclusive_cumsum(piece.lengths)
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
    key_bytes, key_byte_counts = _varints_flat(indices)
    key_lengths = np.zeros(n_rows, dtype=np.int64)
    if key_bytes.size:  # bytes of keys per row; reduceat over the non-empty rows only (it mishandles empty ones)
        key_lengths[present] = np.add.reduceat(key_byte_counts, _exclusive_cumsum(counts)[present], dtype=np.int64)
    value_lengths = 4 * counts
    shape_part = b"\x1a" + _varint_bytes(len(_varint_bytes(n_cols))) + _varint_bytes(n_cols)
    tensor = (
        np.where(present, 1 + _varint_lengths(value_lengths) + value_lengths, 0)
        + np.where(present, 1 + _varint_lengths(key_lengths) + key_lengths, 0)
        + len(shape_part)
    )
    value = 1 + _varint_lengths(tensor) + tensor
    entry = len(_VALUES_KEY) + 1 + _varint_lengths(value) + value
    payload = 1 + _varint_lengths(entry) + entry + (len(_LABEL_PREFIX) + 4 if labels is not None else 0)
    if n_rows and int(payload.max()) > _MAX_RECORD_BYTES:
        raise ValueError("a sparse row does not fit in one RecordIO record")
    frame_head = np.empty((n_rows, 8), dtype=np.uint8)
    frame_head.view("<u4")[:, 0] = MAGIC
    frame_head.view("<u4")[:, 1] = payload
    head = [
        _Piece(np.full(n_rows, 8, dtype=np.int64), grid=frame_head),
        _constant(b"\x0a", n_rows),
        _varint_piece(entry),
        _constant(_VALUES_KEY + b"\x12", n_rows),
        _varint_piece(value),
        _constant(bytes([_TAG_FLOAT32]), n_rows),
        _varint_piece(tensor),
        _constant(b"\x0a", n_rows, present),
        _varint_piece(value_lengths, present),
    ]
    keys_head = [_constant(b"\x12", n_rows, present), _varint_piece(key_lengths, present)]
    tail = [_constant(shape_part, n_rows)]
    if labels is not None:
        tail.append(_constant(_LABEL_PREFIX, n_rows))
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
    # the few small bytes go by index (an index per byte is cheap for them), the bulk streams by masks
    segments = parts.reshape(-1, 5)
    segment_starts = _exclusive_cumsum(parts).reshape(-1, 5)
    small_lengths = segments[:, 0::2].reshape(-1)
    shift = segment_starts[:, 0::2].reshape(-1) - _exclusive_cumsum(small_lengths)
    out[np.repeat(shift, small_lengths) + np.arange(small.size)] = small
    out[np.repeat(np.tile(np.array([False, False, False, True, False]), n_rows), parts)] = key_bytes
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


# ----------------------------------------------------------------------------------------------------------------
# reading: frames


class _WireError(Exception):
    """A protobuf wire-format problem inside one record's payload."""


@dataclass
class _Frames:
    """Complete frames found at the start of a buffer (positions in 4-byte words) and where they stop."""

    heads: np.ndarray
    lengths: np.ndarray
    flags: np.ndarray
    end: int


def _scan_frames(words: np.ndarray) -> _Frames:
    """Find the chain of complete frames starting at words[0]; stops before an incomplete or corrupt frame.

    Equal-length frames (dense data) are recognised with one strided check; otherwise every aligned magic word is a
    candidate and the chain header -> next header is followed with array operations, skipping candidates that are
    only payload bytes equal to the magic number.
    """
    n = words.size
    heads: list[np.ndarray] = []
    position = 0
    if n >= 2 and words[0] == MAGIC:
        stride = 2 + ((int(words[1]) & _LENGTH_MASK) + 3) // 4
        count = n // stride
        if count:
            grid = words[: count * stride].reshape(count, stride)
            same = (grid[:, 0] == MAGIC) & (grid[:, 1] == words[1])
            uniform = count if bool(same.all()) else int(np.argmin(same))
            heads.append(np.arange(uniform, dtype=np.int64) * stride)
            position = uniform * stride
    if position < n:
        heads.append(_chain_frames(words, position))
    all_heads = np.concatenate(heads) if heads else np.empty(0, dtype=np.int64)
    length_words = words[all_heads + 1].astype(np.int64) if all_heads.size else np.empty(0, dtype=np.int64)
    lengths = length_words & _LENGTH_MASK
    end = int(all_heads[-1] + 2 + (lengths[-1] + 3) // 4) if all_heads.size else 0
    return _Frames(all_heads, lengths, length_words >> 29, end)


def _chain_frames(words: np.ndarray, position: int) -> np.ndarray:
    """Heads of the complete frames chained from ``position`` (which must hold a magic word to yield any)."""
    n = words.size
    candidates = np.flatnonzero(words[position:] == MAGIC).astype(np.int64) + position
    if candidates.size == 0 or candidates[0] != position:
        return np.empty(0, dtype=np.int64)
    has_length = candidates + 1 < n
    length_words = words[np.minimum(candidates + 1, n - 1)].astype(np.int64)
    following = np.where(has_length, candidates + 2 + ((length_words & _LENGTH_MASK) + 3) // 4, n + 1)
    breaks = np.flatnonzero(following[:-1] != candidates[1:])
    runs: list[np.ndarray] = []
    first = 0
    while True:
        b = int(np.searchsorted(breaks, first))
        last = int(breaks[b]) if b < breaks.size else candidates.size - 1
        runs.append(np.arange(first, last + 1))
        target = following[last]
        nxt = int(np.searchsorted(candidates, target))
        if nxt < candidates.size and candidates[nxt] == target:
            first = nxt
            continue
        break
    chain = np.concatenate(runs)
    if following[chain[-1]] > n:  # the last frame is not complete in this buffer
        chain = chain[:-1]
    return candidates[chain]


@dataclass
class _Batch:
    """Whole logical records: payload positions in ``data``, their frame offsets in the file and first index."""

    data: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    offsets: np.ndarray
    first_index: int


class _RecordReader:
    """Reads whole logical records from a binary file object, a batch at a time, merging split records."""

    def __init__(self, fileobj: IO[bytes], read_all: bool = False) -> None:
        self._file = fileobj
        name = getattr(fileobj, "name", None)
        self.name = name if isinstance(name, str) else None
        try:
            self._offset = int(fileobj.tell())
        except (AttributeError, OSError, ValueError):
            self._offset = 0
        self._buffer = b""
        self._pos = 0  # bytes of _buffer already handed out (always at a frame boundary)
        self._index = 0
        self._eof = False
        self._read_all = read_all

    def error(self, problem: str, offset: int, record_index: int) -> RecordIOError:
        return RecordIOError(problem, offset=offset, record_index=record_index, name=self.name)

    def _read_more(self, frames: _Frames, wanted_records: int) -> None:
        if self._read_all:
            size = -1
        elif frames.heads.size:
            average = 4 * frames.end / frames.heads.size
            size = min(int(average * (wanted_records - frames.heads.size) * 1.1) + (64 << 10), 256 << 20)
        else:
            size = min(max(_FIRST_READ_BYTES, 2 * self._remaining), 256 << 20)
        chunk = self._file.read(size)
        if isinstance(chunk, str):
            raise TypeError("RecordIO files must be opened in binary mode ('rb')")
        if not chunk:
            self._eof = True
        self._buffer = self._buffer[self._pos :] + chunk if self._remaining else bytes(chunk)
        self._pos = 0
        if self._read_all:
            self._eof = True  # read(-1) returned everything

    @property
    def _remaining(self) -> int:
        return len(self._buffer) - self._pos

    def next_batch(self, max_records: int) -> _Batch | None:
        """The next up-to-max_records records, or None at the end; raises RecordIOError on corrupt framing."""
        while True:
            words = np.frombuffer(self._buffer, dtype="<u4", count=self._remaining // 4, offset=self._pos)
            frames = _scan_frames(words)
            self._check_flags(frames)
            record_ends = np.flatnonzero((frames.flags == 0) | (frames.flags == 3))
            if record_ends.size >= max_records:
                break
            corrupt_at = frames.end if frames.end < words.size and words[frames.end] != MAGIC else None
            if corrupt_at is not None and record_ends.size == 0:
                found = int(words[corrupt_at])
                raise self.error(
                    f"expected the RecordIO magic number 0x{MAGIC:08X}, found 0x{found:08X}",
                    self._offset + 4 * corrupt_at,
                    self._index,
                )
            if self._eof or corrupt_at is not None:
                if record_ends.size:
                    break
                if self._remaining:
                    raise self.error(self._truncation(words, frames), self._offset, self._index)
                return None
            self._read_more(frames, max_records)
        last_frame = int(record_ends[min(max_records, record_ends.size) - 1])
        return self._take(frames, last_frame + 1, record_ends[:max_records])

    def _truncation(self, words: np.ndarray, frames: _Frames) -> str:
        if self._remaining < 8:
            return f"truncated record header: {self._remaining} byte(s) left where an 8-byte header was expected"
        if frames.heads.size:  # complete frames of a split record whose end is missing
            return "truncated split record: the file ends before its final part (continuation flag 3)"
        length = int(words[1]) & _LENGTH_MASK
        needed = 8 + length + (-length % 4)
        return f"truncated record: the header announces {needed} bytes, only {self._remaining} remain"

    def _check_flags(self, frames: _Frames) -> None:
        bad = np.flatnonzero(frames.flags > 3)
        if bad.size:
            i = int(bad[0])
            raise self.error(
                f"invalid continuation flag {int(frames.flags[i])} (expected 0 to 3)",
                self._offset + 4 * int(frames.heads[i]),
                self._index + int(np.count_nonzero((frames.flags[:i] == 0) | (frames.flags[:i] == 3))),
            )

    def _take(self, frames: _Frames, n_frames: int, record_ends: np.ndarray) -> _Batch:
        heads = frames.heads[:n_frames]
        lengths = frames.lengths[:n_frames]
        flags = frames.flags[:n_frames]
        consumed = 4 * int(heads[-1] + 2 + (lengths[-1] + 3) // 4)
        data = np.frombuffer(self._buffer, dtype=np.uint8, count=consumed, offset=self._pos)
        if bool((flags == 0).all()):
            batch = _Batch(data, 4 * heads + 8, lengths, self._offset + 4 * heads, self._index)
        else:
            batch = self._merge_split_records(data, heads, lengths, flags)
        self._pos += consumed
        self._offset += consumed
        self._index += record_ends.size
        return batch

    def _merge_split_records(
        self, data: np.ndarray, heads: np.ndarray, lengths: np.ndarray, flags: np.ndarray
    ) -> _Batch:
        """Join split records (flags 1, 2..., 3) with the magic number between parts, as dmlc's reader does."""
        magic = np.frombuffer(np.array([MAGIC], dtype="<u4").tobytes(), dtype=np.uint8)
        parts: list[np.ndarray] = []
        starts: list[int] = []
        offsets: list[int] = []
        position = 0
        open_at: int | None = None
        for head, length, flag in zip(heads.tolist(), lengths.tolist(), flags.tolist()):
            offset = self._offset + 4 * head
            if flag in (0, 1) and open_at is not None:
                raise self.error(
                    f"expected the next part (continuation flag 2 or 3) of the split record starting at byte "
                    f"{open_at}, found flag {flag}",
                    offset,
                    self._index + len(offsets) - 1,
                )
            if flag in (2, 3) and open_at is None:
                raise self.error(
                    f"continuation flag {flag} without a split record started by flag 1",
                    offset,
                    self._index + len(offsets),
                )
            if flag in (0, 1):
                starts.append(position)
                offsets.append(offset)
                open_at = offset if flag == 1 else None
            else:
                parts.append(magic)
                position += 4
                if flag == 3:
                    open_at = None
            parts.append(data[4 * head + 8 : 4 * head + 8 + length])
            position += length
        starts_array = np.array(starts, dtype=np.int64)
        ends = np.append(starts_array[1:], position)
        return _Batch(
            np.concatenate(parts), starts_array, ends - starts_array, np.array(offsets, dtype=np.int64), self._index
        )


# ----------------------------------------------------------------------------------------------------------------
# reading: payloads


@dataclass
class _Columns:
    """Decoded records of a batch, before the dense/sparse checks: flat values and per-record counts."""

    values: np.ndarray  # float32, every record's feature values back to back
    value_counts: np.ndarray
    keys: np.ndarray  # int64, back to back (empty when no record has keys)
    key_counts: np.ndarray
    shapes: np.ndarray  # product of the tensor shape, -1 when the record has no shape
    labels: np.ndarray  # float32, the first label value (0 when none)
    label_counts: np.ndarray
    has_label: np.ndarray
    dense: np.ndarray | None = None  # the feature matrix itself, when decoded as a view of equal-layout records


def _byte_at(data: np.ndarray, positions: np.ndarray) -> np.ndarray:
    return data[np.clip(positions, 0, data.size - 1)]


def _bytes_equal(data: np.ndarray, positions: np.ndarray, pattern: bytes) -> np.ndarray:
    index = np.clip(positions[:, None] + np.arange(len(pattern)), 0, data.size - 1)
    return (data[index] == np.frombuffer(pattern, dtype=np.uint8)).all(axis=1)


def _varint_at(data: np.ndarray, positions: np.ndarray, width: int = 5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(value, position after it, valid) of the varint at each position (at most ``width`` bytes)."""
    raw = data[np.clip(positions[:, None] + np.arange(width), 0, data.size - 1)]
    more = raw >= 0x80
    if not more[:, 0].any():  # all one-byte varints
        return raw[:, 0].astype(np.int64), positions + 1, np.ones(positions.size, dtype=bool)
    length = np.argmin(more, axis=1) + 1
    valid = ~more.all(axis=1)
    groups = (raw & 0x7F).astype(np.uint64) << (np.arange(width, dtype=np.uint64) * np.uint64(7))
    value = np.where(np.arange(width) < length[:, None], groups, np.uint64(0)).sum(axis=1, dtype=np.uint64)
    return value.astype(np.int64), positions + length, valid


@dataclass
class _Regions:
    """Where each record's fields lie in the payload buffer, for records in the layout protobuf writes."""

    kind: int
    values_start: np.ndarray
    values_length: np.ndarray
    keys_start: np.ndarray
    keys_length: np.ndarray
    shape_start: np.ndarray
    shape_length: np.ndarray
    has_shape: np.ndarray
    label_kind: int
    label_start: np.ndarray
    label_length: np.ndarray
    has_label: np.ndarray

    def subset(self, start: int, stop: int) -> _Regions:
        """The regions of records start..stop-1."""
        return _Regions(
            *(
                value[start:stop] if isinstance(value, np.ndarray) else value
                for value in (getattr(self, name) for name in _Regions.__dataclass_fields__)
            )
        )

    def shifted(self, shift: np.ndarray) -> _Regions:
        """The same layout repeated at other record starts."""
        return _Regions(
            self.kind,
            self.values_start + shift,
            np.broadcast_to(self.values_length, shift.shape),
            self.keys_start + shift,
            np.broadcast_to(self.keys_length, shift.shape),
            self.shape_start + shift,
            np.broadcast_to(self.shape_length, shift.shape),
            np.broadcast_to(self.has_shape, shift.shape),
            self.label_kind,
            self.label_start + shift,
            np.broadcast_to(self.label_length, shift.shape),
            np.broadcast_to(self.has_label, shift.shape),
        )


def _optional_field(
    data: np.ndarray, position: np.ndarray, limit: np.ndarray, tag: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(start, length, present, position after, valid) of an optional length-delimited field with ``tag``."""
    present = (position < limit) & (_byte_at(data, position) == tag)
    length, after, valid = _varint_at(data, position + 1)
    length = np.where(present, length, 0)
    start = np.where(present, after, position)
    return start, length, present, start + length, valid | ~present


def _canonical_regions(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> _Regions | None:
    """Locate the fields of records laid out as protobuf serialises Records; None if any record differs."""
    ends = starts + lengths
    ok = (lengths > 0) & (_byte_at(data, starts) == 0x0A)
    entry_length, position, valid = _varint_at(data, starts + 1)
    entry_end = position + entry_length
    ok &= valid & _bytes_equal(data, position, _VALUES_KEY + b"\x12")
    value_length, position, valid = _varint_at(data, position + len(_VALUES_KEY) + 1)
    ok &= valid & (position + value_length == entry_end)
    kinds = _byte_at(data, position)
    tensor_length, position, valid = _varint_at(data, position + 1)
    ok &= valid & (position + tensor_length == entry_end)
    values_start, values_length, _, position, valid = _optional_field(data, position, entry_end, 0x0A)
    ok &= valid
    keys_start, keys_length, _, position, valid = _optional_field(data, position, entry_end, 0x12)
    ok &= valid
    shape_start, shape_length, has_shape, position, valid = _optional_field(data, position, entry_end, 0x1A)
    ok &= valid & (position == entry_end)

    has_label = (position < ends) & (_byte_at(data, position) == 0x12)
    label_entry_length, q, valid = _varint_at(data, position + 1)
    label_end = q + label_entry_length
    label_ok = valid & _bytes_equal(data, q, _VALUES_KEY + b"\x12")
    label_value_length, q, valid = _varint_at(data, q + len(_VALUES_KEY) + 1)
    label_ok &= valid & (q + label_value_length == label_end)
    label_kinds = _byte_at(data, q)
    label_tensor_length, q, valid = _varint_at(data, q + 1)
    label_ok &= valid & (q + label_tensor_length == label_end) & (_byte_at(data, q) == 0x0A)
    label_length, label_start, valid = _varint_at(data, q + 1)
    label_ok &= valid & (label_start + label_length == label_end)
    ok &= label_ok | ~has_label
    ok &= np.where(has_label, label_end, position) == ends
    if not bool(ok.all()):
        return None
    kind = int(kinds[0])
    if kind not in (_TAG_FLOAT32, _TAG_FLOAT64, _TAG_INT32) or not bool((kinds == kind).all()):
        return None
    label_kind = 0
    if has_label.any():
        label_kind = int(label_kinds[np.argmax(has_label)])
        if label_kind not in (_TAG_FLOAT32, _TAG_FLOAT64, _TAG_INT32):
            return None
        if not bool((label_kinds[has_label] == label_kind).all()):
            return None
    return _Regions(
        kind,
        values_start,
        values_length,
        keys_start,
        keys_length,
        shape_start,
        shape_length,
        has_shape,
        label_kind,
        label_start,
        np.where(has_label, label_length, 0),
        has_label,
    )


def _gather(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The bytes of every region [start, start + length) back to back (regions in increasing, disjoint order)."""
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, dtype=np.uint8)
    n = starts.size
    if n == 1:
        return data[int(starts[0]) : int(starts[0]) + total].copy()
    span = int(starts[-1] + lengths[-1] - starts[0])
    if 8 * total >= span:  # dense regions: one boolean mask over the span beats an index per byte
        gaps = starts - np.concatenate([starts[:1], starts[:-1] + lengths[:-1]])
        segments = np.stack([gaps, lengths], axis=1).reshape(-1)
        region = data[int(starts[0]) : int(starts[0]) + span]
        if not (starts[0] % 4 or (segments % 4).any()):  # 4-byte aligned regions: a mask of words, 4x shorter
            mask = np.repeat(np.tile(np.array([False, True]), n), segments // 4)
            return region.view("<u4")[mask].view(np.uint8)
        return region[np.repeat(np.tile(np.array([False, True]), n), segments)]
    shift = starts - _exclusive_cumsum(lengths)
    return data[np.repeat(shift, lengths) + np.arange(total)]


def _numbers(raw: np.ndarray, lengths: np.ndarray, kind: int) -> tuple[np.ndarray, np.ndarray]:
    """Packed tensor values of each region as float32, and how many each region holds."""
    if kind == _TAG_INT32:
        values, counts = _decode_varint_regions(raw, lengths)
        return values.astype(np.uint64).view(np.int64).astype(np.int32).astype(np.float32), counts
    width = 4 if kind == _TAG_FLOAT32 else 8
    if bool((lengths % width).any()):
        raise _WireError(f"a packed field's length is not a multiple of {width}")
    values = raw.view("<f4" if width == 4 else "<f8").astype(np.float32, copy=False)
    return values, lengths // width


def _extract(data: np.ndarray, regions: _Regions) -> _Columns:
    values, value_counts = _numbers(
        _gather(data, regions.values_start, regions.values_length), regions.values_length, regions.kind
    )
    keys, key_counts = _decode_varint_regions(
        _gather(data, regions.keys_start, regions.keys_length), regions.keys_length
    )
    shapes = np.full(regions.has_shape.shape, -1, dtype=np.int64)
    if regions.has_shape.any():
        dims, after, valid = _varint_at(data, regions.shape_start[regions.has_shape], width=10)
        if not bool(
            (valid & (after == regions.shape_start[regions.has_shape] + regions.shape_length[regions.has_shape])).all()
        ):
            raise _WireError("the tensor shape is not one dimension")
        shapes[regions.has_shape] = dims
    label_counts = np.zeros(regions.has_label.shape, dtype=np.int64)
    labels = np.zeros(regions.has_label.shape, dtype=np.float32)
    if regions.has_label.any():
        label_values, label_counts = _numbers(
            _gather(data, regions.label_start, regions.label_length), regions.label_length, regions.label_kind
        )
        first = _exclusive_cumsum(label_counts)
        with_value = label_counts > 0
        labels[with_value] = label_values[first[with_value]]
    return _Columns(values, value_counts, keys, key_counts, shapes, labels, label_counts, np.asarray(regions.has_label))


def _decode_uniform(data: np.ndarray, starts: np.ndarray, length: int) -> _Columns | None:
    """Equal-length dense records: parse the first, check every other matches it outside its numbers, then read the
    numbers of all records through strided views (no per-record work). None if the records do not qualify."""
    n = starts.size
    stride = int(starts[1] - starts[0])
    first = _canonical_regions(data, starts[:1], np.array([length], dtype=np.int64))
    if first is None or first.kind == _TAG_INT32 or first.keys_length[0] or first.label_kind == _TAG_INT32:
        return None
    width = 4 if first.kind == _TAG_FLOAT32 else 8
    label_width = 4 if first.label_kind == _TAG_FLOAT32 else 8
    values_at, values_length = int(first.values_start[0]), int(first.values_length[0])
    label_at, label_length = int(first.label_start[0]), int(first.label_length[0])
    if values_length % width or (first.has_label[0] and label_length != label_width):
        return None
    frame = int(starts[0]) - 8
    keep = np.ones(stride, dtype=bool)  # template bytes: all but the frame header (already checked) and numbers
    keep[:8] = False
    keep[values_at - frame : values_at - frame + values_length] = False
    keep[label_at - frame : label_at - frame + label_length] = False
    mask = np.where(keep, 0xFF, 0).astype(np.uint8).view("<u4")
    columns = np.flatnonzero(mask)
    words = np.ndarray((n, stride // 4), dtype="<u4", buffer=data, offset=frame, strides=(stride, 4))
    template = words[:, columns] & mask[columns]
    if not bool((template == template[0]).all()):
        return None
    n_values = values_length // width
    dtype = np.dtype("<f4" if width == 4 else "<f8")
    if width == 4 and values_at % 4 == 0:
        matrix = np.ndarray((n, n_values), dtype=dtype, buffer=data, offset=values_at, strides=(stride, 4))
    else:
        rows = np.ndarray((n,), dtype=f"V{values_length}", buffer=data, offset=values_at, strides=(stride,))
        matrix = rows.copy().view(dtype).reshape(n, n_values).astype(np.float32, copy=False)
    labels = np.zeros(n, dtype=np.float32)
    if first.has_label[0]:
        label_dtype = "<f4" if label_width == 4 else "<f8"
        labels = np.ndarray((n,), dtype=label_dtype, buffer=data, offset=label_at, strides=(stride,))
        labels = labels.astype(np.float32)
    shape = -1
    if first.has_shape[0]:
        dims, after, valid = _varint_at(data, first.shape_start, width=10)
        if not (valid[0] and after[0] == first.shape_start[0] + first.shape_length[0]):
            return None
        shape = int(dims[0])
    no_keys = np.zeros(n, dtype=np.int64)
    return _Columns(
        values=np.empty(0, dtype=np.float32),
        value_counts=np.full(n, n_values, dtype=np.int64),
        keys=np.empty(0, dtype=np.int64),
        key_counts=no_keys,
        shapes=np.full(n, shape, dtype=np.int64),
        labels=labels,
        label_counts=np.full(n, 1 if first.has_label[0] else 0, dtype=np.int64),
        has_label=np.full(n, bool(first.has_label[0])),
        dense=matrix,
    )


def _decode(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> _Columns:
    """Decode record payloads: equal-layout fast path, then protobuf's usual layout, then any valid layout."""
    n = starts.size
    if n > 1 and bool((lengths == lengths[0]).all()):
        stride = int(starts[1] - starts[0])
        if stride >= lengths[0] + 8 and stride % 4 == 0 and bool((np.diff(starts) == stride).all()):
            uniform = _decode_uniform(data, starts, int(lengths[0]))
            if uniform is not None:
                return uniform
    regions = _canonical_regions(data, starts, lengths)
    if regions is not None:
        try:  # in groups of records, so temporaries stay small enough for the allocator to recycle
            groups = np.flatnonzero(np.diff(_exclusive_cumsum(lengths) // _DECODE_GROUP_BYTES)) + 1
            bounds = [0, *groups.tolist(), n]
            return _concat_columns([_extract(data, regions.subset(a, b)) for a, b in zip(bounds[:-1], bounds[1:])])
        except _WireError:
            pass
    return _decode_generic(data, starts, lengths)


def _concat_columns(parts: list[_Columns]) -> _Columns:
    if len(parts) == 1:
        return parts[0]
    return _Columns(
        *(
            np.concatenate([getattr(part, name) for part in parts])
            for name in _Columns.__dataclass_fields__
            if name != "dense"
        )
    )


def _read_varint(data: bytes, position: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if position >= end:
            raise _WireError("a varint runs past the end of its message")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, position
        shift += 7
        if shift >= 70:
            raise _WireError("a varint is longer than 10 bytes")


def _fields(data: bytes, position: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, start, stop) of each field; for varint fields ``start`` is the value itself."""
    widths = {1: 8, 5: 4}
    while position < end:
        key, position = _read_varint(data, position, end)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise _WireError("field number 0 is invalid")
        if wire == 0:
            value, position = _read_varint(data, position, end)
            yield field, wire, value, position
            continue
        if wire == 2:
            size, position = _read_varint(data, position, end)
        elif wire in widths:
            size = widths[wire]
        else:
            raise _WireError(f"field {field} has unsupported wire type {wire}")
        if position + size > end:
            raise _WireError(f"field {field} runs past the end of its message ({position + size} > {end})")
        yield field, wire, position, position + size
        position += size


@dataclass
class _Tensor:
    values: np.ndarray
    keys: np.ndarray | None
    shape: list[int] | None


def _repeated(data: bytes, wire: int, start: int, stop: int, packed_dtype: str | None, single_wire: int) -> np.ndarray:
    """A repeated numeric field occurrence, packed (wire type 2) or a single element; as float64 or int64."""
    if wire == 2:
        raw = np.frombuffer(data, dtype=np.uint8, count=stop - start, offset=start)
        if packed_dtype is None:
            return _decode_varints(raw).astype(np.uint64).view(np.int64)
        width = np.dtype(packed_dtype).itemsize
        if raw.size % width:
            raise _WireError(f"a packed field's length {raw.size} is not a multiple of {width}")
        return raw.view(packed_dtype).astype(np.float64)
    if wire != single_wire:
        raise _WireError(f"unexpected wire type {wire} for a tensor field")
    if wire == 0:
        return np.array([start], dtype=np.uint64).view(np.int64)
    return np.frombuffer(data, dtype=packed_dtype, count=1, offset=start).astype(np.float64)


def _parse_tensor(data: bytes, start: int, stop: int, kind: int) -> _Tensor:
    values_dtype, values_wire = {_TAG_FLOAT32: ("<f4", 5), _TAG_FLOAT64: ("<f8", 1), _TAG_INT32: (None, 0)}[kind]
    values: list[np.ndarray] = []
    keys: list[np.ndarray] = []
    shape: list[np.ndarray] = []
    for field, wire, a, b in _fields(data, start, stop):
        if field == 1:
            values.append(_repeated(data, wire, a, b, values_dtype, values_wire))
        elif field == 2:
            keys.append(_repeated(data, wire, a, b, None, 0))
        elif field == 3:
            shape.append(_repeated(data, wire, a, b, None, 0))
    all_values = np.concatenate(values) if values else np.empty(0)
    if kind == _TAG_INT32:
        all_values = all_values.astype(np.int64).astype(np.int32)
    return _Tensor(
        all_values.astype(np.float32),
        np.concatenate(keys) if keys else None,
        [int(d) for d in np.concatenate(shape)] if shape else None,
    )


def _parse_map_entry(data: bytes, start: int, stop: int, what: str) -> tuple[str, _Tensor]:
    key = ""
    tensor: tuple[int, int, int] | None = None
    for field, wire, a, b in _fields(data, start, stop):
        if field == 1 and wire == 2:
            try:
                key = data[a:b].decode("utf-8")
            except UnicodeDecodeError as error:
                raise _WireError(f"{what} key is not UTF-8") from error
        elif field == 2 and wire == 2:
            for value_field, value_wire, c, d in _fields(data, a, b):
                if value_field in (2, 3, 7) and value_wire == 2:
                    tensor = ((value_field << 3) | 2, c, d)
                elif value_field == 9:
                    raise _WireError(f"{what}[{key!r}] holds Bytes, not a numeric tensor")
    if tensor is None:
        raise _WireError(f"{what}[{key!r}] holds no Float32, Float64 or Int32 tensor")
    kind, a, b = tensor
    return key, _parse_tensor(data, a, b, kind)


def _parse_record(data: bytes, start: int, stop: int) -> tuple[_Tensor, _Tensor | None]:
    """Features and label of one aialgs.data.Record, accepting any valid wire layout (fields in any order)."""
    features: _Tensor | None = None
    label: _Tensor | None = None
    for field, wire, a, b in _fields(data, start, stop):
        if field in (1, 2):
            what = "features" if field == 1 else "label"
            if wire != 2:
                raise _WireError(f"{what} has wire type {wire}, expected a length-delimited map entry")
            key, tensor = _parse_map_entry(data, a, b, what)
            if key != "values":
                raise _WireError(f"{what} has key {key!r}; only 'values' is supported")
            if field == 1:
                features = tensor
            else:
                label = tensor
    if features is None:
        raise _WireError("the record has no features['values']")
    return features, label


class _RecordProblem(Exception):
    def __init__(self, index: int, problem: str) -> None:
        super().__init__(problem)
        self.index = index
        self.problem = problem


def _decode_generic(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> _Columns:
    """Decode records one by one with a plain wire-format parser: any valid layout, precise errors."""
    payload = data.tobytes() if not isinstance(data.base, bytes) else data.base
    tensors: list[tuple[_Tensor, _Tensor | None]] = []
    for i, (start, length) in enumerate(zip(starts.tolist(), lengths.tolist())):
        try:
            tensors.append(_parse_record(payload, start, start + length))
        except _WireError as error:
            raise _RecordProblem(i, f"not a valid aialgs.data.Record protobuf: {error}") from None
    features = [f for f, _ in tensors]
    labels = [label for _, label in tensors]
    empty = np.empty(0, dtype=np.int64)
    label_counts = np.array([0 if lab is None else lab.values.size for lab in labels], dtype=np.int64)
    return _Columns(
        values=np.concatenate([f.values for f in features]) if features else np.empty(0, np.float32),
        value_counts=np.array([f.values.size for f in features], dtype=np.int64),
        keys=np.concatenate([empty] + [f.keys for f in features if f.keys is not None]).astype(np.int64),
        key_counts=np.array([0 if f.keys is None else f.keys.size for f in features], dtype=np.int64),
        shapes=np.array([-1 if f.shape is None else int(np.prod(f.shape)) for f in features], dtype=np.int64),
        labels=np.array([lab.values[0] if lab is not None and lab.values.size else 0 for lab in labels], np.float32),
        label_counts=label_counts,
        has_label=np.array([lab is not None for lab in labels], dtype=bool),
    )


# ----------------------------------------------------------------------------------------------------------------
# reading: records to arrays


class _Assembler:
    """Turns decoded batches into (X, y), checking that all records agree (dense/sparse, width, labels)."""

    def __init__(self, reader: _RecordReader) -> None:
        self._reader = reader
        self.sparse: bool | None = None
        self.n_features: int | None = None
        self.labelled: bool | None = None

    def arrays(self, batch: _Batch) -> tuple[Any, np.ndarray | None]:
        try:
            columns = _decode(batch.data, batch.starts, batch.lengths)
        except _RecordProblem as problem:
            raise self._error(batch, problem) from None
        try:
            return self._to_arrays(columns)
        except _RecordProblem as problem:
            raise self._error(batch, problem) from None

    def _error(self, batch: _Batch, problem: _RecordProblem) -> RecordIOError:
        return self._reader.error(problem.problem, int(batch.offsets[problem.index]), batch.first_index + problem.index)

    def _to_arrays(self, c: _Columns) -> tuple[Any, np.ndarray | None]:
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
            raise _RecordProblem(index, message(index))
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
    reader = _RecordReader(fileobj)
    assembler = _Assembler(reader)
    while (batch := reader.next_batch(batch_size)) is not None:
        yield assembler.arrays(batch)


def read(fileobj: IO[bytes]) -> tuple[Any, np.ndarray | None]:
    """Read a whole RecordIO-protobuf file: (dense float32 X or CSR matrix, float32 y or None)."""
    reader = _RecordReader(fileobj, read_all=True)
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
