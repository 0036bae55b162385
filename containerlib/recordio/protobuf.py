"""A plain protobuf wire-format parser for ``aialgs.data.Record`` (no protobuf library): any valid layout, fields in
any order, one record at a time, with precise errors. The fallback of :mod:`containerlib.recordio.fast_decode`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from containerlib.recordio.varints import decode_varints
from containerlib.recordio.wire import TAG_FLOAT32, TAG_FLOAT64, TAG_INT32, Columns, RecordProblem, WireError


def _read_varint(data: bytes, position: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if position >= end:
            raise WireError("a varint runs past the end of its message")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, position
        shift += 7
        if shift >= 70:
            raise WireError("a varint is longer than 10 bytes")


def _fields(data: bytes, position: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, start, stop) of each field; for varint fields ``start`` is the value itself."""
    widths = {1: 8, 5: 4}
    while position < end:
        key, position = _read_varint(data, position, end)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise WireError("field number 0 is invalid")
        if wire == 0:
            value, position = _read_varint(data, position, end)
            yield field, wire, value, position
            continue
        if wire == 2:
            size, position = _read_varint(data, position, end)
        elif wire in widths:
            size = widths[wire]
        else:
            raise WireError(f"field {field} has unsupported wire type {wire}")
        if position + size > end:
            raise WireError(f"field {field} runs past the end of its message ({position + size} > {end})")
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
            return decode_varints(raw).astype(np.uint64).view(np.int64)
        width = np.dtype(packed_dtype).itemsize
        if raw.size % width:
            raise WireError(f"a packed field's length {raw.size} is not a multiple of {width}")
        return raw.view(packed_dtype).astype(np.float64)
    if wire != single_wire:
        raise WireError(f"unexpected wire type {wire} for a tensor field")
    if wire == 0:
        return np.array([start], dtype=np.uint64).view(np.int64)
    return np.frombuffer(data, dtype=packed_dtype, count=1, offset=start).astype(np.float64)


def _parse_tensor(data: bytes, start: int, stop: int, kind: int) -> _Tensor:
    values_dtype, values_wire = {TAG_FLOAT32: ("<f4", 5), TAG_FLOAT64: ("<f8", 1), TAG_INT32: (None, 0)}[kind]
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
    if kind == TAG_INT32:
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
                raise WireError(f"{what} key is not UTF-8") from error
        elif field == 2 and wire == 2:
            for value_field, value_wire, c, d in _fields(data, a, b):
                if value_field in (2, 3, 7) and value_wire == 2:
                    tensor = ((value_field << 3) | 2, c, d)
                elif value_field == 9:
                    raise WireError(f"{what}[{key!r}] holds Bytes, not a numeric tensor")
    if tensor is None:
        raise WireError(f"{what}[{key!r}] holds no Float32, Float64 or Int32 tensor")
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
                raise WireError(f"{what} has wire type {wire}, expected a length-delimited map entry")
            key, tensor = _parse_map_entry(data, a, b, what)
            if key != "values":
                raise WireError(f"{what} has key {key!r}; only 'values' is supported")
            if field == 1:
                features = tensor
            else:
                label = tensor
    if features is None:
        raise WireError("the record has no features['values']")
    return features, label


def decode_generic(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> Columns:
    """Decode records one by one with a plain wire-format parser: any valid layout, precise errors."""
    payload = data.tobytes() if not isinstance(data.base, bytes) else data.base
    tensors: list[tuple[_Tensor, _Tensor | None]] = []
    for i, (start, length) in enumerate(zip(starts.tolist(), lengths.tolist())):
        try:
            tensors.append(_parse_record(payload, start, start + length))
        except WireError as error:
            raise RecordProblem(i, f"not a valid aialgs.data.Record protobuf: {error}") from None
    features = [f for f, _ in tensors]
    labels = [label for _, label in tensors]
    empty = np.empty(0, dtype=np.int64)
    label_counts = np.array([0 if lab is None else lab.values.size for lab in labels], dtype=np.int64)
    return Columns(
        values=np.concatenate([f.values for f in features]) if features else np.empty(0, np.float32),
        value_counts=np.array([f.values.size for f in features], dtype=np.int64),
        keys=np.concatenate([empty] + [f.keys for f in features if f.keys is not None]).astype(np.int64),
        key_counts=np.array([0 if f.keys is None else f.keys.size for f in features], dtype=np.int64),
        shapes=np.array([-1 if f.shape is None else int(np.prod(f.shape)) for f in features], dtype=np.int64),
        labels=np.array([lab.values[0] if lab is not None and lab.values.size else 0 for lab in labels], np.float32),
        label_counts=label_counts,
        has_label=np.array([lab is not None for lab in labels], dtype=bool),
    )
