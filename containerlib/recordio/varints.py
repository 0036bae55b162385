"""Protobuf base-128 varints, encoded and decoded a whole array at a time."""

from __future__ import annotations

import numpy as np

from containerlib.recordio.wire import WireError


def varint_bytes(value: int) -> bytes:
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


def varint_width(values: np.ndarray) -> int:
    """Bytes needed by the longest varint among non-negative ``values``."""
    return len(varint_bytes(int(values.max()))) if values.size else 1


def varint_lengths(values: np.ndarray, dtype: type = np.int64) -> np.ndarray:
    """Encoded byte length of each non-negative value (1..10)."""
    lengths = np.ones(values.shape, dtype=dtype)
    for j in range(1, varint_width(values)):
        lengths += values >= values.dtype.type(1 << (7 * j))
    return lengths


def varint_grid(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Varints of non-negative ``values`` as a [n, width] byte grid (row i valid up to lengths[i]), and lengths."""
    lengths = varint_lengths(values, np.uint8)
    width = varint_width(values)
    grid = np.empty((values.size, width), dtype=np.uint8)
    for j in range(width):
        group = ((values >> values.dtype.type(7 * j)) & values.dtype.type(0x7F)).astype(np.uint8)
        if j + 1 < width:
            group |= (lengths > j + 1).view(np.uint8) << 7
        grid[:, j] = group
    return grid, lengths


def varints_flat(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The concatenated varint encodings of non-negative ``values``, in order, and each one's length."""
    grid, lengths = varint_grid(values)
    if grid.shape[1] == 1:
        return grid.reshape(-1), lengths
    return grid[np.arange(grid.shape[1], dtype=np.uint8) < lengths[:, None]], lengths


def decode_varint_regions(data: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decode regions of back-to-back varints (``data`` holds the regions in order, ``lengths`` their sizes).

    Returns every value (uint32 if all fit in 28 bits, else uint64) and how many each region holds; WireError if a
    varint crosses a region end.
    """
    if data.size == 0:
        return np.empty(0, dtype=np.uint64), np.zeros(lengths.size, dtype=np.int64)
    last = data < 0x80
    region_ends = np.cumsum(lengths)
    nonempty = lengths > 0
    if not bool(last[region_ends[nonempty] - 1].all()):
        raise WireError("a varint runs past the end of its field")
    if bool(last.all()):
        return data.astype(np.uint32), lengths.astype(np.int64)
    short = _decode_short(data, last, region_ends)
    if short is not None:
        return short
    ends = np.flatnonzero(last)
    lengths_each = np.diff(ends, prepend=-1)  # varints are back to back: each ends where the next begins
    width = int(lengths_each.max())
    if width > 10:
        raise WireError("a varint is longer than 10 bytes")
    counts = np.diff(np.searchsorted(ends, region_ends, side="left"), prepend=0)
    lengths_each = lengths_each.astype(np.uint8)
    value_type = np.uint32 if width <= 4 else np.uint64  # 4 varint bytes hold 28 bits
    padded = np.concatenate([np.zeros(width, dtype=np.uint8), data])  # so ends - back never goes below 0
    values = np.take(padded, ends + width).astype(value_type)
    for back in range(1, width):
        group = (np.take(padded, ends + (width - back)) & 0x7F).astype(value_type)
        values = np.where(lengths_each > back, (values << value_type(7)) | group, values)
    return values, counts


def _decode_short(data: np.ndarray, last: np.ndarray, region_ends: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Varints of at most 4 bytes (values below 2**28), as uint32, and the count per region; None if one is longer.

    Each is read as one little-endian word from its first byte; the bytes beyond its last (the first without the
    continuation bit) are masked off and the 7-bit groups packed together, a few operations per varint."""
    first = np.empty(data.size, dtype=bool)
    first[0] = True
    first[1:] = last[:-1]
    starts = np.flatnonzero(first)
    padded = np.concatenate([data, np.zeros(3, dtype=np.uint8)])
    words = np.ndarray((data.size,), dtype="<u4", buffer=padded, strides=(1,))  # the 4 bytes from each position
    word = words[starts]
    ends = np.invert(word)
    ends &= np.uint32(0x80808080)  # the high bit of each byte that ends a varint
    if not bool(ends.all()):
        return None
    through_end = ends - np.uint32(1)
    through_end ^= ends  # every bit up to the first end's high bit
    word &= through_end
    word &= np.uint32(0x7F7F7F7F)
    value = word & np.uint32(0x7F)
    for group in range(1, 4):
        value |= (word >> np.uint32(group)) & np.uint32(0x7F << (7 * group))
    counts = np.diff(np.searchsorted(starts, region_ends, side="left"), prepend=0)
    return value, counts


def decode_varints(data: np.ndarray) -> np.ndarray:
    """Decode a byte array holding whole varints back to back."""
    return decode_varint_regions(data, np.array([data.size], dtype=np.int64))[0]
