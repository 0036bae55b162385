"""Which Parquet column types a table may hold: flat values only (numbers, text, booleans, dates and times), since
every column becomes a feature, the label or the id; nested ones (struct, list, map) and float16 (which the
processing image cannot read) are refused by name; a pandas index stored as a column is not data.

Dates and times are decided on purpose: a timestamp (any unit; with a time zone: its UTC instant) becomes float
seconds since 1970-01-01 UTC, a date the seconds of its midnight, a duration its seconds: an ordered number, never
text hashed into buckets (thousands of distinct values: noise), a time of day its seconds since midnight. The
schema sample and Preprocess's reader both convert, so the schema and the data agree; the same text in a CSV file is
read as seconds too (:mod:`containerlib.time_text`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from containerlib.errors import TableError


def check_flat_columns(schema: Any, name: str, columns: Collection[str] | None = None) -> None:
    """``TableError`` naming the file and every nested or float16 column of the Arrow ``schema`` (of ``columns`` if
    given). A float16 column is Parquet's FLOAT16 logical type, which the processing image's pyarrow 14 cannot read
    at all (the whole file fails, "Thrift LogicalType that is not recognized"): refused before anything runs."""
    import pyarrow as pa

    chosen = [field for field in schema if columns is None or field.name in columns]
    nested = [f"{field.name!r} ({field.type})" for field in chosen if pa.types.is_nested(field.type)]
    if nested:
        raise TableError(
            f"{name}: column(s) {', '.join(nested)} hold nested Parquet values (struct, list or map); each column "
            "must hold one number, text, boolean or timestamp per row: flatten them into columns of their own, or "
            "write the file without them"
        )
    half = [repr(field.name) for field in schema if pa.types.is_float16(field.type)]
    if half:
        raise TableError(
            f"{name}: column(s) {', '.join(half)} hold float16 values (Parquet's FLOAT16 type), which the processing "
            "image's pyarrow 14 cannot read (the whole file fails); write them as float32 (pandas: "
            f"frame.astype({{{half[0]}: 'float32'}}) before to_parquet)"
        )


def data_columns(schema: Any) -> list[str]:
    """The columns of a Parquet file's Arrow ``schema`` that are data: every one but a pandas index written as a column
    (``__index_level_0__``, or a named index such as ``id``), which the file's pandas metadata lists under
    ``index_columns``; a ``RangeIndex`` is stored as metadata only. Pandas writes the index unless told
    ``index=False``, and it would otherwise become a feature, and a column every request must send."""
    metadata = {}
    try:
        metadata = schema.pandas_metadata or {}
    except (ValueError, TypeError):  # metadata that is not pandas' JSON: no index to leave out
        metadata = {}
    index = {column for column in metadata.get("index_columns") or [] if isinstance(column, str)}
    return [str(column) for column in schema.names if column not in index]


_SECONDS_PER_UNIT = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}


def is_time(arrow_type: Any) -> bool:
    """Whether a column of this Arrow type is read as seconds (timestamps, dates, durations, times of day)."""
    import pyarrow as pa

    return bool(
        pa.types.is_timestamp(arrow_type)
        or pa.types.is_duration(arrow_type)
        or pa.types.is_date32(arrow_type)
        or pa.types.is_date64(arrow_type)
        or pa.types.is_time(arrow_type)
    )


def as_seconds(values: Any) -> Any:
    """An Arrow array (or chunked array) of timestamps, dates, durations or times of day (seconds since midnight) as
    float64 seconds (nulls kept)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = values.type
    if pa.types.is_date32(kind):  # days since the epoch
        return pc.multiply(values.cast(pa.int32()).cast(pa.float64(), safe=False), 86400.0)
    if pa.types.is_date64(kind):  # milliseconds since the epoch
        return pc.divide(values.cast(pa.int64()).cast(pa.float64(), safe=False), 1e3)
    if pa.types.is_time32(kind):  # seconds or milliseconds since midnight
        return pc.divide(values.cast(pa.int32()).cast(pa.float64(), safe=False), _SECONDS_PER_UNIT[kind.unit])
    return pc.divide(values.cast(pa.int64()).cast(pa.float64(), safe=False), _SECONDS_PER_UNIT[kind.unit])
