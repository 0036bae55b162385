"""Parquet files read a record batch at a time, as Arrow tables."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from containerlib.tables.parquet_types import as_seconds, check_flat_columns, is_time
from containerlib.tables.raw import hashable

PARQUET_PRE_BUFFER_BYTES = 512 << 20  # row groups up to this size (uncompressed) are read in large requests


def parquet_pieces(
    path: Path, columns: list[str], text: list[str], chunk_rows: int, raw: bool = False
) -> Iterator[Any]:
    """Parquet record batches as Arrow tables; ``text`` columns cast to strings by Arrow, the same in every batch
    (pandas would make an integer column float in a batch with nulls, so 5 would read "5.0" there). With ``raw``,
    (table, every column of the batch as the split's hash reads it: :func:`containerlib.tables.raw.hashable`) pairs,
    from one read of the file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    # pre_buffer: a row group's column chunks are read in a few large requests rather than page by page, which about
    # halves the time to decode; it holds the row group's bytes meanwhile, so only for row groups of moderate size
    metadata = pq.read_metadata(path)
    largest = max((metadata.row_group(index).total_byte_size for index in range(metadata.num_row_groups)), default=0)
    parquet = pq.ParquetFile(
        path, metadata=metadata, pre_buffer=largest <= PARQUET_PRE_BUFFER_BYTES
    )  # footer read once
    check_flat_columns(parquet.schema_arrow, str(path), columns)
    for batch in parquet.iter_batches(batch_size=chunk_rows, columns=None if raw else columns):
        table = pa.Table.from_batches([batch])
        whole = None
        if raw:
            whole = pa.Table.from_arrays([hashable(column) for column in batch.columns], names=batch.schema.names)
            wanted = set(columns)
            table = table.select([name for name in table.column_names if name in wanted])
        for index, field in enumerate(table.schema):
            if is_time(field.type):  # seconds, as the schema sample saw them
                table = table.set_column(index, field.name, as_seconds(table.column(index)))
        for column in text:
            index = table.schema.get_field_index(column)
            table = table.set_column(index, column, table.column(index).cast(pa.string()))
        yield table if whole is None else (table, whole)
