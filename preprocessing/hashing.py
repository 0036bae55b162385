"""Stable hashes: each row's split from a seeded 64-bit hash of its raw cells (or its id), so the split never depends
on the host, the file, the row's position or how the parameters say its cells are encoded."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from containerlib.stable_hash import stable_hash64

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


UINT64_MASK = 0xFFFFFFFFFFFFFFFF


def rng_entropy(seed: int) -> int:
    """``--seed`` as a random generator's entropy: any int64 (SplitSeed is SageMaker's Integer parameter, which
    takes negative values) as its unsigned 64 bits; numpy's generators refuse negative seeds."""
    return seed & UINT64_MASK


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

    Vectorised over the chunk, a few numpy passes per 8 bytes of a column: each cell's bytes 8 at a time
    (unaligned little-endian words, the bytes past its end masked off: h = xorshift((h ^ word) * M1), only while the
    cell has bytes left), then its length and its column's name (a null: a length no text has), h = xorshift(h * M2);
    SplitMix64's finaliser at the end. A floating-point column (a Parquet file's as read:
    :func:`containerlib.tables.raw.hashable`) hashes as its canonical form would: each value's float64 bytes, a
    null's those of NaN."""
    import pyarrow as pa

    n = raw.num_rows
    h = _mix(np.full(n, np.uint64(rng_entropy(seed)), dtype=np.uint64))
    scratch = np.empty(n, dtype=np.uint64)
    wide: np.ndarray | None = None  # one float64 buffer for every float column, widened into in turn
    for name in sorted(raw.column_names):
        column, name_hash = raw.column(name), np.uint64(stable_hash64(name))
        if pa.types.is_floating(column.type):
            wide = np.empty(n, dtype="<f8") if wide is None else wide
            _mix_floats(h, column, name_hash, scratch, wide)
        else:
            _mix_text(h, column, name_hash, scratch)
    _mix_in_place(h, scratch)
    return h


def _mix_floats(h: np.ndarray, column: Any, name: np.uint64, scratch: np.ndarray, wide: np.ndarray) -> None:
    """Mix a floating-point column into ``h`` as its canonical form's 8-byte cells (each value's float64 bytes, NaN
    where null: what :func:`containerlib.tables.raw.canonical` gives) would be, widening into ``wide`` (float64, as
    long as ``h``) rather than into a new column."""
    import pyarrow as pa

    start = 0
    for chunk in column.chunks if isinstance(column, pa.ChunkedArray) else [column]:
        rows = slice(start, start + len(chunk))
        start += len(chunk)
        if not len(chunk):
            continue
        here, words = h[rows], wide[rows]
        words[:] = chunk.to_numpy(zero_copy_only=False)  # NaN where null
        _mix_word(here, words.view("<u8"), _M1, scratch[rows])
        marks: Any = np.uint64(8) ^ name  # every cell's length, 8
        if chunk.null_count:
            marks = np.where(chunk.is_null().to_numpy(zero_copy_only=False), _NULL ^ name, marks)
        _mix_word(here, marks, _M2, scratch[rows])


_BYTE_MASKS = np.array([(1 << (8 * count)) - 1 for count in range(9)], dtype=np.uint64)  # the first k bytes of a word
_NULL = np.uint64(1 << 63)  # mixed in as the length of a null cell


def _mix_text(h: np.ndarray, column: Any, name: np.uint64, scratch: np.ndarray) -> None:
    """Mix one text (or binary) column's cells, then their lengths and the column's ``name`` hash, into the row
    hashes ``h``, in place."""
    import pyarrow as pa

    array = column
    if isinstance(column, pa.ChunkedArray):  # one chunk (a batch's column) as it is: combining would copy it
        array = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    n = len(array)
    if n == 0:
        return
    _, offsets_buffer, data_buffer = array.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype="<i4", count=n + 1, offset=4 * array.offset)
    first, last = int(offsets[0]), int(offsets[-1])
    if last - first == 8 * n and not array.null_count and bool((np.diff(offsets) == 8).all()):
        # fixed 8-byte cells (a float column's canonical form, or text of 8 bytes a cell): the words are the data
        # itself, read where they are; every length mark is the same (8, the column's name)
        _mix_word(h, np.frombuffer(data_buffer, dtype="<u8", count=n, offset=first), _M1, scratch)
        _mix_word(h, np.uint64(8) ^ name, _M2, scratch)
        return
    offsets = offsets.astype(np.int64)
    lengths = offsets[1:] - offsets[:-1]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.empty(0, dtype=np.uint8)
    shortest, longest = int(lengths.min()), int(lengths.max())
    if shortest == longest == 8:  # every cell 8 bytes, some of them null
        words = [np.frombuffer(data[first:last].tobytes(), dtype="<u8")]
    else:
        padded = np.zeros(last - first + 8, dtype=np.uint8)  # 8 zero bytes past the last cell
        padded[: last - first] = data[first:last]
        # the 8 bytes from every position, as unaligned words: gathered 8 bytes at a time
        windows = np.ndarray(shape=(len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
        starts = offsets[:-1] - first
        words = (np.take(windows, starts + at if at else starts, mode="clip") for at in range(0, longest, 8))
    for number, word in enumerate(words):
        at = 8 * number
        if shortest >= at + 8:  # every cell fills this word
            _mix_word(h, word, _M1, scratch)
            continue
        left = lengths - at if at else lengths  # bytes of each cell from this word on
        if shortest < at or longest > at + 8:
            left = np.clip(left, 0, 8)
        word &= _BYTE_MASKS.take(left)
        if shortest > at:  # every cell has bytes in this word
            _mix_word(h, word, _M1, scratch)
            continue
        # only the cells with bytes left change: a cell's hash never depends on the chunk's longest cell
        active = lengths > at
        _mix_word(h, word, np.where(active, _M1, np.uint64(1)), scratch, np.negative(active.astype(np.uint64)))
    marks = np.bitwise_xor(lengths.view(np.uint64), name)  # lengths are never negative: their bits as they are
    if array.null_count:
        marks[array.is_null().to_numpy(zero_copy_only=False)] = _NULL ^ name
    _mix_word(h, marks, _M2, scratch)


def _mix_word(h: np.ndarray, word: Any, multiplier: Any, scratch: np.ndarray, keep: np.ndarray | None = None) -> None:
    """h = xorshift((h ^ word) * multiplier), in place (``word``: one per row, or one for all); where ``keep`` (a bit
    mask per row) is 0 the xorshift is left out (with multiplier 1 and word 0, such a row is unchanged)."""
    h ^= word
    h *= multiplier
    np.right_shift(h, np.uint64(29), out=scratch)
    if keep is not None:
        scratch &= keep
    h ^= scratch


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
