"""Stable hashes: each row's split from a seeded 64-bit hash of its raw cells (or its id), so the split never depends
on the host, the file, the row's position or how the parameters say its cells are encoded."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from containerlib.names import SPLITS
from containerlib.stable_hash import stable_hash64

SPLIT_CODES = {name: code for code, name in enumerate(SPLITS)}
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def hash_texts(values: pd.Series, seed: int) -> np.ndarray:
    key = seed.to_bytes(8, "little", signed=True)
    codes, uniques = pd.factorize(values.astype(str).str.strip())
    hashed = np.array([stable_hash64(str(value), key) for value in uniques], dtype=np.uint64)
    return _mix(hashed[codes])


def _mix(h: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, element-wise on uint64 (wrapping arithmetic)."""
    h = h ^ (h >> np.uint64(30))
    h = h * _M1
    h = h ^ (h >> np.uint64(27))
    h = h * _M2
    return h ^ (h >> np.uint64(31))


def raw_row_hashes(raw: Any, seed: int) -> np.ndarray:
    """A seeded 64-bit hash of each row's raw cells (an Arrow table of text columns, :mod:`containerlib.tables.raw`):
    the split's input, decided before any parameter says how a cell is read, so which columns are features or
    categorical, the hash buckets and the missing-value policy never move a row to another split. Columns are taken
    in the order of their names (files may order them differently), each mixed in with its name; identical raw rows
    hash alike (and so share a split).

    Vectorised over the chunk: each cell's bytes 8 at a time (unaligned little-endian words, the bytes past its end
    masked off; h = xorshift((h ^ word) * M)), then its length (a null: a length no text has) and SplitMix64's
    finaliser."""
    n = raw.num_rows
    h = _mix(np.full(n, np.uint64(seed & 0xFFFFFFFFFFFFFFFF), dtype=np.uint64))
    scratch = np.empty(n, dtype=np.uint64)
    for name in sorted(raw.column_names):
        h ^= np.uint64(stable_hash64(name))
        _mix_in_place(h, scratch)
        _mix_text(h, raw.column(name), scratch)
    return h


_BYTE_MASKS = np.array([(1 << (8 * count)) - 1 for count in range(9)], dtype=np.uint64)  # the first k bytes of a word
_NULL = np.uint64(1 << 63)  # mixed in as the length of a null cell


def _mix_text(h: np.ndarray, column: Any, scratch: np.ndarray) -> None:
    """Mix one text (or binary) column's cells into the row hashes ``h``, in place."""
    import pyarrow as pa

    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    n = len(array)
    if n == 0:
        return
    _, offsets_buffer, data_buffer = array.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype="<i4", count=n + 1, offset=4 * array.offset).astype(np.int64)
    lengths = offsets[1:] - offsets[:-1]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.empty(0, dtype=np.uint8)
    padded = np.zeros(int(offsets[-1]) - int(offsets[0]) + 8, dtype=np.uint8)  # 8 zero bytes past the last cell
    padded[: len(padded) - 8] = data[offsets[0] : offsets[-1]]
    windows = np.lib.stride_tricks.as_strided(padded, shape=(len(padded) - 7, 8), strides=(1, 1), writeable=False)
    starts = offsets[:-1] - offsets[0]
    for at in range(0, int(lengths.max()), 8):
        word = np.take(windows, starts + at, axis=0, mode="clip").view("<u8").reshape(n)
        word &= _BYTE_MASKS[np.clip(lengths - at, 0, 8)]
        # only the cells with bytes left change: a cell's hash never depends on the chunk's longest cell
        active = lengths > at
        h ^= word
        h *= np.where(active, _M1, np.uint64(1))
        np.right_shift(h, np.uint64(29), out=scratch)
        scratch &= np.negative(active.astype(np.uint64))  # all ones where active, zero elsewhere
        h ^= scratch
    marks = lengths.astype(np.uint64)
    if array.null_count:
        marks[array.is_null().to_numpy(zero_copy_only=False)] = _NULL
    h ^= marks
    _mix_in_place(h, scratch)


def _mix_in_place(h: np.ndarray, scratch: np.ndarray) -> None:
    """:func:`_mix` overwriting ``h``, with ``scratch`` (same length) as its only temporary."""
    np.right_shift(h, np.uint64(30), out=scratch)
    h ^= scratch
    h *= _M1
    np.right_shift(h, np.uint64(27), out=scratch)
    h ^= scratch
    h *= _M2
    np.right_shift(h, np.uint64(31), out=scratch)
    h ^= scratch


def assign_splits(hashes: np.ndarray, fractions: tuple[float, float, float]) -> np.ndarray:
    """Split code per row from the top 53 bits of its hash: a uniform number compared with the fractions."""
    uniform = (hashes >> np.uint64(11)).astype(np.float64) * 2.0**-53
    train, validation, _ = fractions
    return np.where(uniform < train, 0, np.where(uniform < train + validation, 1, 2)).astype(np.uint8)
