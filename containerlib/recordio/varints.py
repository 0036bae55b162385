"""Protobuf base-128 varints, encoded and decoded a whole array at a time."""

from __future__ import annotations

import numpy as np

from containerlib.recordio.wire import WireError, gather_regions


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


_RUN_VALUES = 128  # runs of whole-width varints this long on average are copied slice by slice


def varints_flat(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The concatenated varint encodings of non-negative ``values``, in order, and each one's length."""
    grid, lengths = varint_grid(values)
    width = grid.shape[1]
    if width == 1:
        return grid.reshape(-1), lengths
    full = lengths == width
    bounds = np.flatnonzero(full[1:] != full[:-1]) + 1
    if _RUN_VALUES * (bounds.size + 1) > values.size:  # short runs: one boolean mask cuts every row to its length
        return grid[np.arange(width, dtype=np.uint8) < lengths[:, None]], lengths
    # Long runs of whole-width varints (sorted keys of long rows: the short ones come first in each row) are rows of
    # the grid as they stand, copied with one slice each; only the short runs are cut by a mask, which is slow per
    # byte (numpy 1.24 most of all).
    out = np.empty(int(lengths.sum(dtype=np.int64)), dtype=np.uint8)
    edges = [0, *bounds.tolist(), values.size]
    position = 0
    whole = bool(full[0])
    for start, stop in zip(edges[:-1], edges[1:]):
        if whole:
            run = grid[start:stop].reshape(-1)
        else:
            run = grid[start:stop][np.arange(width, dtype=np.uint8) < lengths[start:stop, None]]
        out[position : position + run.size] = run
        position += run.size
        whole = not whole
    return out, lengths


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


_ONE_BYTE_KEYS = 128  # distinct keys below 128: at most this many one-byte varints start a region of increasing keys
_POISON = np.uint32(1 << 31)  # the lookup table's entry for byte pairs that are no 2-byte varint


def _pair_table() -> np.ndarray:
    """A lookup table indexed by two bytes b0 | b1 << 8: the value of the 2-byte varint they are (b0 continues, b1
    ends it), _POISON where they are not one."""
    pair = np.arange(1 << 16, dtype=np.uint32)
    b0, b1 = pair & np.uint32(0xFF), pair >> np.uint32(8)
    low = (b0 & np.uint32(0x7F)) | ((b1 & np.uint32(0x7F)) << np.uint32(7))
    return np.where((b0 >= 0x80) & (b1 < 0x80), low, _POISON).astype(np.uint32)


_PAIR_TABLES: list[np.ndarray] = []  # built on first use (256 kB)
_CACHE_BLOCK = 1 << 14  # varints decoded at a time, so each pass over them stays in cache


def decode_increasing_regions(
    data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, counts: np.ndarray, out: np.ndarray
) -> bool:
    """Regions of ``data`` each holding ``counts`` varints of 1 to 3 bytes in that order of length (what increasing
    keys below 2**21 give: sparse rows' column indices as writers emit them), decoded as uint32 back to back into
    ``out`` (sized ``counts.sum()``); False if any region is laid out otherwise (the caller then decodes generically).

    Each region's split into 1-, 2- and 3-byte varints follows from where its first continuation byte is, its length
    and its count; every byte's continuation bit is then checked against that split (a lookup table for the 2-byte
    ones, masks for the 3-byte ones), so a result is exactly what a byte-by-byte decoder gives. The work is a copy of
    each part and a few array passes over the 3-byte varints, with a little per region: for long regions only."""
    if not _PAIR_TABLES:
        _PAIR_TABLES.append(_pair_table())
    two_table = _PAIR_TABLES[0]
    window = np.arange(_ONE_BYTE_KEYS + 1)
    head = data[np.minimum(starts[:, None] + window, data.size - 1)]
    continues = (head >= 0x80) & (window < lengths[:, None])
    found = continues.any(axis=1)
    if not bool((found | (lengths <= _ONE_BYTE_KEYS)).all()):
        return False  # more one-byte varints than increasing keys allow: not this layout
    ones = np.where(found, continues.argmax(axis=1), lengths)
    threes = lengths - 2 * counts + ones
    twos = counts - ones - threes
    if bool((twos < 0).any() or (threes < 0).any()):
        return False
    one_values = head[window < ones[:, None]]  # checked below 0x80 by the search
    two_values = np.take(two_table, gather_regions(data, starts + ones, 2 * twos).view("<u2"), mode="clip")
    three_bytes = np.zeros(int((3 * threes).sum()) + 1, dtype=np.uint8)  # one zero byte after: read as words
    gather_regions(data, starts + ones + 2 * twos, 3 * threes, three_bytes[:-1])
    three_values = _three_byte_varints(three_bytes)
    if three_values is None or (two_values.size and int(np.bitwise_or.reduce(two_values)) & int(_POISON)):
        return False  # a continuation bit where the layout has none, or none where it has one
    position = one = two = three = 0
    for c1, c2, c3 in zip(ones.tolist(), twos.tolist(), threes.tolist()):
        out[position : position + c1] = one_values[one : one + c1]
        out[position + c1 : position + c1 + c2] = two_values[two : two + c2]
        out[position + c1 + c2 : position + c1 + c2 + c3] = three_values[three : three + c3]
        position, one, two, three = position + c1 + c2 + c3, one + c1, two + c2, three + c3
    return True


def _three_byte_varints(data: np.ndarray) -> np.ndarray | None:
    """Back-to-back 3-byte varints (``data`` padded by one byte) as uint32; None if a continuation bit is wrong.

    Each is read as a little-endian word from its first byte, x0 + 2**8 x1 + 2**16 x2 (+ the next one's first byte,
    masked off), and packed to x0 + 2**7 x1 + 2**14 x2 by subtracting the two shifted excesses: a few array passes,
    a block at a time so that they stay in cache."""
    count = (data.size - 1) // 3
    words = np.ndarray((count,), dtype="<u4", buffer=data, strides=(3,))
    values = np.empty(count, dtype=np.uint32)
    scratch = np.empty(min(count, _CACHE_BLOCK), dtype=np.uint32)
    for first in range(0, count, _CACHE_BLOCK):
        block = values[first : first + _CACHE_BLOCK]
        excess = scratch[: block.size]
        np.bitwise_xor(words[first : first + _CACHE_BLOCK], np.uint32(0x8080), out=block)  # expected bits cleared
        np.bitwise_and(block, np.uint32(0x808080), out=excess)
        if excess.any():
            return None
        block &= np.uint32(0x7F7F7F)
        np.right_shift(block, np.uint32(1), out=excess)
        excess &= np.uint32(0xFFFFFF80)  # 2**7 x1 + 2**15 x2
        block -= excess
        excess >>= np.uint32(1)
        excess &= np.uint32(0xFFFFC000)  # 2**14 x2
        block -= excess
    return values
