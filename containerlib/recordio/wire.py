"""The RecordIO-protobuf wire format: dmlc frame constants, the protobuf bytes of a Record's fixed parts, errors,
and the array helpers every decoder uses (running offsets, regions of bytes gathered back to back).

A frame is a uint32 magic number, a uint32 length whose top 3 bits are a continuation flag (0 whole record, 1 first
part, 2 middle, 3 last), the payload, zero padding to 4 bytes. The payload is an ``aialgs.data.Record``: a features
map entry ``{"values": Value}`` (field 1) and an optional label map entry (field 2); a Value holds a Float32,
Float64 or Int32 tensor (values, keys, shape).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAGIC = 0xCED7230A
LENGTH_MASK = (1 << 29) - 1
MAX_RECORD_BYTES = LENGTH_MASK
VALUES_KEY = b"\x0a\x06values"  # map entry field 1 (key), length 6, "values"
# Value.oneof tags (field << 3 | wire type 2): float32_tensor = 2, float64_tensor = 3, int32_tensor = 7.
TAG_FLOAT32, TAG_FLOAT64, TAG_INT32 = 0x12, 0x1A, 0x3A
# A float32 label record part: label map entry {key "values", value {float32_tensor {values: [y]}}}.
LABEL_PREFIX = b"\x12\x12" + VALUES_KEY + b"\x12\x08\x12\x06\x0a\x04"


class RecordIOError(ValueError):
    """Corrupt or unsupported RecordIO-protobuf input, located by byte offset and record index."""

    def __init__(self, problem: str, *, offset: int, record_index: int, name: str | None = None) -> None:
        where = f"{name}: " if name else ""
        super().__init__(f"{where}record {record_index} at byte offset {offset}: {problem}")
        self.problem = problem
        self.offset = offset
        self.record_index = record_index
        self.name = name


class WireError(Exception):
    """A protobuf wire-format problem inside one record's payload."""


class RecordProblem(Exception):
    def __init__(self, index: int, problem: str) -> None:
        super().__init__(problem)
        self.index = index
        self.problem = problem


@dataclass
class Columns:
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


def exclusive_cumsum(values: np.ndarray, axis: int = 0) -> np.ndarray:
    total = np.cumsum(values, axis=axis)
    return total - values


_SLICED_REGION_BYTES = 1024  # regions this long on average are copied slice by slice


def gather_regions(
    data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, out: np.ndarray | None = None
) -> np.ndarray:
    """The bytes of every region [start, start + length) back to back (regions in increasing, disjoint order), in
    ``out`` when given (uint8, as long as the regions together)."""
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, dtype=np.uint8)
    n = starts.size
    if out is not None or total >= _SLICED_REGION_BYTES * n:  # long regions (sparse rows): one memcpy each
        bounds = np.stack([starts, starts + lengths], axis=1).tolist()
        return np.concatenate([data[start:end] for start, end in bounds], out=out)
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
    shift = starts - exclusive_cumsum(lengths)
    return data[np.repeat(shift, lengths) + np.arange(total)]


def scatter_regions(out: np.ndarray, starts: np.ndarray, lengths: np.ndarray, source: np.ndarray) -> bool:
    """Lay ``source``'s bytes, back to back, into the regions [start, start + length) of ``out`` (the inverse of
    gather_regions), one memcpy each, when the regions are long; False (nothing written) when they are too short on
    average for a slice each to pay, which the caller then writes its own vectorised way."""
    if source.size < _SLICED_REGION_BYTES * starts.size:
        return False
    ends = np.cumsum(lengths)
    for start, length, end in zip(starts.tolist(), lengths.tolist(), ends.tolist()):
        out[start : start + length] = source[end - length : end]
    return True
