"""Decoding record payloads with array operations, for the layouts protobuf writes.

Equal-layout dense records (what write_dense produces) are read as strided views of the bytes, with no per-record
work; other records in protobuf's usual field order are located field by field for all records at once. Anything
else goes to the generic parser (:mod:`containerlib.recordio.protobuf`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from containerlib.recordio.protobuf import decode_generic
from containerlib.recordio.varints import decode_increasing_regions, decode_varint_regions
from containerlib.recordio.wire import (
    TAG_FLOAT32,
    TAG_FLOAT64,
    TAG_INT32,
    VALUES_KEY,
    Columns,
    WireError,
    exclusive_cumsum,
    gather_regions,
)

_DECODE_GROUP_BYTES = 8 << 20  # payload bytes of the records decoded together
_INCREASING_KEYS_BYTES = 4096  # keys regions this long on average are tried as increasing keys first


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
    ok &= valid & _bytes_equal(data, position, VALUES_KEY + b"\x12")
    value_length, position, valid = _varint_at(data, position + len(VALUES_KEY) + 1)
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
    label_ok = valid & _bytes_equal(data, q, VALUES_KEY + b"\x12")
    label_value_length, q, valid = _varint_at(data, q + len(VALUES_KEY) + 1)
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
    if kind not in (TAG_FLOAT32, TAG_FLOAT64, TAG_INT32) or not bool((kinds == kind).all()):
        return None
    label_kind = 0
    if has_label.any():
        label_kind = int(label_kinds[np.argmax(has_label)])
        if label_kind not in (TAG_FLOAT32, TAG_FLOAT64, TAG_INT32):
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


def _numbers(raw: np.ndarray, lengths: np.ndarray, kind: int) -> tuple[np.ndarray, np.ndarray]:
    """Packed tensor values of each region as float32, and how many each region holds."""
    if kind == TAG_INT32:
        values, counts = decode_varint_regions(raw, lengths)
        return values.astype(np.uint64).view(np.int64).astype(np.int32).astype(np.float32), counts
    width = 4 if kind == TAG_FLOAT32 else 8
    if bool((lengths % width).any()):
        raise WireError(f"a packed field's length is not a multiple of {width}")
    values = raw.view("<f4" if width == 4 else "<f8").astype(np.float32, copy=False)
    return values, lengths // width


def _extract(data: np.ndarray, regions: _Regions, out: tuple[np.ndarray, np.ndarray] | None = None) -> Columns:
    """The records' columns; float32 values and keys straight into ``out`` (sized by the values' lengths) if given,
    the keys only if they decode as increasing keys (otherwise into an array of their own)."""
    if out is not None:
        values = gather_regions(data, regions.values_start, regions.values_length, out[0].view(np.uint8)).view("<f4")
        value_counts = regions.values_length // 4
    else:
        values, value_counts = _numbers(
            gather_regions(data, regions.values_start, regions.values_length), regions.values_length, regions.kind
        )
    keys_bytes = int(regions.keys_length.sum())
    if (
        out is not None
        and keys_bytes >= _INCREASING_KEYS_BYTES * regions.keys_length.size
        and (decode_increasing_regions(data, regions.keys_start, regions.keys_length, value_counts, out[1]))
    ):
        keys, key_counts = out[1], value_counts
    else:
        keys, key_counts = decode_varint_regions(
            gather_regions(data, regions.keys_start, regions.keys_length), regions.keys_length
        )
    shapes = np.full(regions.has_shape.shape, -1, dtype=np.int64)
    if regions.has_shape.any():
        dims, after, valid = _varint_at(data, regions.shape_start[regions.has_shape], width=10)
        if not bool(
            (valid & (after == regions.shape_start[regions.has_shape] + regions.shape_length[regions.has_shape])).all()
        ):
            raise WireError("the tensor shape is not one dimension")
        shapes[regions.has_shape] = dims
    label_counts = np.zeros(regions.has_label.shape, dtype=np.int64)
    labels = np.zeros(regions.has_label.shape, dtype=np.float32)
    if regions.has_label.any():
        label_values, label_counts = _numbers(
            gather_regions(data, regions.label_start, regions.label_length), regions.label_length, regions.label_kind
        )
        first = exclusive_cumsum(label_counts)
        with_value = label_counts > 0
        labels[with_value] = label_values[first[with_value]]
    return Columns(values, value_counts, keys, key_counts, shapes, labels, label_counts, np.asarray(regions.has_label))


def _decode_uniform(data: np.ndarray, starts: np.ndarray, length: int) -> Columns | None:
    """Equal-length dense records: parse the first, check every other matches it outside its numbers, then read the
    numbers of all records through strided views (no per-record work). None if the records do not qualify."""
    n = starts.size
    stride = int(starts[1] - starts[0])
    first = _canonical_regions(data, starts[:1], np.array([length], dtype=np.int64))
    if first is None or first.kind == TAG_INT32 or first.keys_length[0] or first.label_kind == TAG_INT32:
        return None
    width = 4 if first.kind == TAG_FLOAT32 else 8
    label_width = 4 if first.label_kind == TAG_FLOAT32 else 8
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
    words = np.ndarray((n, stride // 4), dtype="<u4", buffer=data, offset=frame, strides=(stride, 4))
    for column in np.flatnonzero(mask).tolist():  # a few words (head, label prefix), each one strided 1-D compare
        word = words[:, column] if mask[column] == 0xFFFFFFFF else words[:, column] & mask[column]
        if not bool((word == word[0]).all()):
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
    return Columns(
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


def decode(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> Columns:
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
            groups = np.flatnonzero(np.diff(exclusive_cumsum(lengths) // _DECODE_GROUP_BYTES)) + 1
            bounds = [0, *groups.tolist(), n]
            outputs = _preallocated(regions)
            if outputs is None:
                parts = [_extract(data, regions.subset(a, b)) for a, b in zip(bounds[:-1], bounds[1:])]
                return _concat_columns(parts)
            values, keys, first = outputs
            ends = [*first[bounds[1:-1]].tolist(), values.size]
            parts = [
                _extract(data, regions.subset(a, b), (values[start:end], keys[start:end]))
                for a, b, start, end in zip(bounds[:-1], bounds[1:], [0, *ends[:-1]], ends)
            ]
            return _concat_columns(parts, values, keys)
        except WireError:
            pass
    return decode_generic(data, starts, lengths)


def _preallocated(regions: _Regions) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Arrays for every record's values and keys, and where each record's go, when float32 values tell how many
    there are (sparse Float32 records): the groups decode into them rather than into parts joined afterwards."""
    if regions.kind != TAG_FLOAT32 or not regions.keys_length.any() or bool((regions.values_length % 4).any()):
        return None
    counts = regions.values_length // 4
    total = int(counts.sum())
    return np.empty(total, dtype=np.float32), np.empty(total, dtype=np.uint32), exclusive_cumsum(counts)


def _concat_columns(parts: list[Columns], values: np.ndarray | None = None, keys: np.ndarray | None = None) -> Columns:
    """The groups' columns as one; ``values`` and ``keys`` are taken as they are when every group decoded into them."""
    if len(parts) == 1 and values is None:
        return parts[0]
    whole = {"values": values, "keys": keys}
    return Columns(
        *(
            whole[name]
            if whole.get(name) is not None and all(np.shares_memory(getattr(part, name), whole[name]) for part in parts)
            else np.concatenate([getattr(part, name) for part in parts])
            for name in Columns.__dataclass_fields__
            if name != "dense"
        )
    )
