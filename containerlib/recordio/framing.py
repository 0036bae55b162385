"""Reading RecordIO frames: whole logical records found a buffer at a time with array operations, split records
(continuation flags 1, 2..., 3) merged, corrupt or truncated framing a RecordIOError naming the byte offset."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

import numpy as np

from containerlib.recordio.wire import LENGTH_MASK, MAGIC, RecordIOError

_FIRST_READ_BYTES = 1 << 20


@dataclass
class Frames:
    """Complete frames found at the start of a buffer (positions in 4-byte words) and where they stop."""

    heads: np.ndarray
    lengths: np.ndarray
    flags: np.ndarray
    end: int


def _scan_frames(words: np.ndarray) -> Frames:
    """Find the chain of complete frames starting at words[0]; stops before an incomplete or corrupt frame.

    Equal-length frames (dense data) are recognised with one strided check; long frames (sparse rows) are followed
    header to header; otherwise every aligned magic word is a candidate and the chain header -> next header is
    followed with array operations, skipping candidates that are only payload bytes equal to the magic number.
    """
    n = words.size
    heads: list[np.ndarray] = []
    position = 0
    if n >= 2 and words[0] == MAGIC:
        stride = 2 + ((int(words[1]) & LENGTH_MASK) + 3) // 4
        count = n // stride
        if count:
            grid = words[: count * stride].reshape(count, stride)
            same = (grid[:, 0] == MAGIC) & (grid[:, 1] == words[1])
            uniform = count if bool(same.all()) else int(np.argmin(same))
            heads.append(np.arange(uniform, dtype=np.int64) * stride)
            position = uniform * stride
    if position < n:
        walked, position = _walk_large_frames(words, position)
        heads.append(walked)
    if position < n:
        heads.append(_chain_frames(words, position))
    all_heads = np.concatenate(heads) if heads else np.empty(0, dtype=np.int64)
    length_words = words[all_heads + 1].astype(np.int64) if all_heads.size else np.empty(0, dtype=np.int64)
    lengths = length_words & LENGTH_MASK
    end = int(all_heads[-1] + 2 + (lengths[-1] + 3) // 4) if all_heads.size else 0
    return Frames(all_heads, lengths, length_words >> 29, end)


_WALK_FRAME_WORDS = 1024  # frames this long on average (4 kB) are followed header to header, not searched for


def _walk_large_frames(words: np.ndarray, position: int) -> tuple[np.ndarray, int]:
    """Heads of the complete frames chained from ``position`` followed one by one while they are long (sparse rows
    of many values): a few header reads each, where searching every word for the magic number reads them all.
    Returns the heads and where it stopped: at the end, before an incomplete or corrupt frame (for the caller's
    checks), or where frames turned short (for the array search)."""
    n = words.size
    heads: list[int] = []
    start = position
    while position + 1 < n and int(words[position]) == MAGIC:
        following = position + 2 + ((int(words[position + 1]) & LENGTH_MASK) + 3) // 4
        if following > n:
            break  # incomplete: the caller reads more
        heads.append(position)
        position = following
        if len(heads) % 64 == 0 and position - start < 64 * _WALK_FRAME_WORDS:
            break  # short frames: the array search is faster from here
        if len(heads) % 64 == 0:
            start = position
    return np.array(heads, dtype=np.int64), position


def _chain_frames(words: np.ndarray, position: int) -> np.ndarray:
    """Heads of the complete frames chained from ``position`` (which must hold a magic word to yield any)."""
    n = words.size
    candidates = np.flatnonzero(words[position:] == MAGIC).astype(np.int64) + position
    if candidates.size == 0 or candidates[0] != position:
        return np.empty(0, dtype=np.int64)
    has_length = candidates + 1 < n
    length_words = words[np.minimum(candidates + 1, n - 1)].astype(np.int64)
    following = np.where(has_length, candidates + 2 + ((length_words & LENGTH_MASK) + 3) // 4, n + 1)
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
class Batch:
    """Whole logical records: payload positions in ``data``, their frame offsets in the file and first index."""

    data: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    offsets: np.ndarray
    first_index: int


class RecordReader:
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

    def _read_more(self, frames: Frames, wanted_records: int) -> None:
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

    def next_batch(self, max_records: int) -> Batch | None:
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

    def _truncation(self, words: np.ndarray, frames: Frames) -> str:
        if self._remaining < 8:
            return f"truncated record header: {self._remaining} byte(s) left where an 8-byte header was expected"
        if frames.heads.size:  # complete frames of a split record whose end is missing
            return "truncated split record: the file ends before its final part (continuation flag 3)"
        length = int(words[1]) & LENGTH_MASK
        needed = 8 + length + (-length % 4)
        return f"truncated record: the header announces {needed} bytes, only {self._remaining} remain"

    def _check_flags(self, frames: Frames) -> None:
        bad = np.flatnonzero(frames.flags > 3)
        if bad.size:
            i = int(bad[0])
            raise self.error(
                f"invalid continuation flag {int(frames.flags[i])} (expected 0 to 3)",
                self._offset + 4 * int(frames.heads[i]),
                self._index + int(np.count_nonzero((frames.flags[:i] == 0) | (frames.flags[:i] == 3))),
            )

    def _take(self, frames: Frames, n_frames: int, record_ends: np.ndarray) -> Batch:
        heads = frames.heads[:n_frames]
        lengths = frames.lengths[:n_frames]
        flags = frames.flags[:n_frames]
        consumed = 4 * int(heads[-1] + 2 + (lengths[-1] + 3) // 4)
        data = np.frombuffer(self._buffer, dtype=np.uint8, count=consumed, offset=self._pos)
        if bool((flags == 0).all()):
            batch = Batch(data, 4 * heads + 8, lengths, self._offset + 4 * heads, self._index)
        else:
            batch = self._merge_split_records(data, heads, lengths, flags)
        self._pos += consumed
        self._offset += consumed
        self._index += record_ends.size
        return batch

    def _merge_split_records(
        self, data: np.ndarray, heads: np.ndarray, lengths: np.ndarray, flags: np.ndarray
    ) -> Batch:
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
        return Batch(
            np.concatenate(parts), starts_array, ends - starts_array, np.array(offsets, dtype=np.int64), self._index
        )
