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
    ends = np.flatnonzero(last)
    lengths_each = np.diff(ends, prepend=-1)  # varints are back to back: each ends where the next begins
    width = int(lengths_each.max())
    if width > 10:
        raise WireError("a varint is longer than 10 bytes")
    counts = np.diff(np.searchsorted(ends, region_ends, side="left"), prepend=0)
    if width <= 4:
        return _decode_short(data, ends, lengths_each), counts
    lengths_each = lengths_each.astype(np.uint8)
    value_type = np.uint32 if width <= 4 else np.uint64  # 4 varint bytes hold 28 bits
    padded = np.concatenate([np.zeros(width, dtype=np.uint8), data])  # so ends - back never goes below 0
    values = np.take(padded, ends + width).astype(value_type)
    for back in range(1, width):
        group = (np.take(padded, ends + (width - back)) & 0x7F).astype(value_type)
        values = np.where(lengths_each > back, (values << value_type(7)) | group, values)
    return values, counts


_SHORT_MASKS = np.array([0, (1 << 7) - 1, (1 << 14) - 1, (1 << 21) - 1, (1 << 28) - 1], dtype=np.uint32)


def _decode_short(data: np.ndarray, ends: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """Varints of at most 4 bytes (values below 2**28): each read as one little-endian word from its first byte,
    its 7-bit groups packed together and the bytes beyond its end masked off."""
    padded = np.concatenate([data, np.zeros(3, dtype=np.uint8)])
    words = np.ndarray((data.size,), dtype="<u4", buffer=padded, strides=(1,))  # the 4 bytes from each position
    word = words[ends - (widths - 1)]
    value = word & np.uint32(0x7F)
    for group in range(1, 4):
        value |= (word >> np.uint32(group)) & np.uint32(0x7F << (7 * group))
    return value & _SHORT_MASKS[widths]


def decode_varints(data: np.ndarray) -> np.ndarray:
    """Decode a byte array holding whole varints back to back."""
    return decode_varint_regions(data, np.array([data.size], dtype=np.int64))[0]
