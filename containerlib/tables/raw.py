"""A file's rows as written, every column as text, ``chunk_rows`` rows at a time: what a row's split is decided from,
before any parameter (which columns are features or categorical, the hash buckets, the missing-value policy) says
how its cells are read.

CSV: the text of each cell exactly as written (quotes removed; no value read as missing: an empty cell is ``""``),
parsed by Arrow a range of whole lines at a time as the typed reader parses them (:mod:`csv_reader`), pandas taking
over (``dtype=str``, no missing values) from the first range Arrow cannot read. Parquet: every column in a canonical
form that no library version changes: text and binary as they are, integers in decimal, floating-point numbers as
the 8 little-endian bytes of their float64 value (formatting a float as text differs between Arrow versions), other
types (booleans, dates, timestamps, decimals) as Arrow casts them to text; missing values null. Rows are counted as
the typed reader counts them (blank lines skipped), so the pieces line up with
:func:`~containerlib.tables.chunks.read_chunks`' chunks one for one.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from containerlib.tables import csv_reader
from containerlib.tables.csv_text import text_convert_options
from containerlib.tables.files import is_parquet


def raw_pieces(path: Path, header: list[str], chunk_rows: int) -> Iterator[Any]:
    """Every column of one file as text (Arrow tables of ``pa.string()`` or ``pa.binary()`` columns named as
    ``header``), ``chunk_rows`` rows a piece (the last may hold fewer)."""
    if is_parquet(path):
        return _parquet_raw(path, chunk_rows)
    return _exact_pieces(_csv_raw(path, header, chunk_rows), chunk_rows)


def _csv_raw(path: Path, header: list[str], chunk_rows: int) -> Iterator[Any]:
    """Tables of the file's cells as text, Arrow's a range at a time; pandas' for the rest once Arrow cannot."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    convert = text_convert_options(header)
    done = 0
    read = pacsv.ReadOptions()
    try:
        for lines in csv_reader._line_ranges(path, csv_reader.ARROW_RANGE_BYTES):  # the typed reader's ranges
            table = pacsv.read_csv(lines, read_options=read, convert_options=convert)
            if done == 0 and read.column_names == []:  # the first range, with the header line
                if table.schema.names != list(header):
                    raise pa.ArrowInvalid("column names differ from the header's (a byte-order mark?)")
                read = pacsv.ReadOptions(column_names=header)
            done += table.num_rows
            yield table
        return
    except pa.ArrowException:
        pass
    skip = done
    frames = pd.read_csv(path, dtype=str, na_filter=False, keep_default_na=False, chunksize=chunk_rows)
    try:  # closed when the caller stops early too (pandas 1.1's reader is no context manager)
        for frame in frames:
            if skip >= len(frame):
                skip -= len(frame)
                continue
            frame = frame.iloc[skip:]
            skip = 0
            yield pa.Table.from_arrays(
                [pa.array(frame.iloc[:, index].fillna("").astype(str).tolist(), type=pa.string())
                 for index in range(len(header))],
                names=list(header),
            )  # fmt: skip
    finally:
        frames.close()


def _exact_pieces(tables: Iterator[Any], chunk_rows: int) -> Iterator[Any]:
    """Tables re-cut into pieces of exactly ``chunk_rows`` rows (the last may hold fewer)."""
    import pyarrow as pa

    pending: list[Any] = []
    rows = 0
    for table in tables:
        if table.num_rows:
            pending.append(table)
            rows += table.num_rows
        while rows >= chunk_rows:
            combined = pa.concat_tables(pending)
            yield combined.slice(0, chunk_rows)
            pending, rows = [combined.slice(chunk_rows)], rows - chunk_rows
    if rows:
        yield pa.concat_tables(pending)


def _parquet_raw(path: Path, chunk_rows: int) -> Iterator[Any]:
    """Every column of a Parquet file, record batch by record batch, in its canonical text form."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches(batch_size=chunk_rows):
        yield pa.Table.from_arrays([canonical(column) for column in batch.columns], names=batch.schema.names)


def canonical(column: Any) -> Any:
    """An Arrow column in its canonical form, text or binary with 32-bit offsets (see the module's docstring); a type
    Arrow cannot cast to text, as Python's ``str`` of each value."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    kind = column.type
    if pa.types.is_dictionary(kind):
        column, kind = column.dictionary_decode(), kind.value_type
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind):
        return column.cast(pa.binary())
    if pa.types.is_floating(kind):
        n = len(column)
        values = np.empty(n, dtype="<f8")  # each value widened by numpy as Arrow's cast would, written once
        values[:] = column.to_numpy(zero_copy_only=False)
        # the array's own memory as the cells' bytes (py_buffer keeps it alive) and the same offsets for every
        # column of a batch: the column is copied once (it was cast by Arrow, then copied again as bytes)
        as_bytes = pa.Array.from_buffers(pa.binary(), n, [None, _eight_byte_offsets(n), pa.py_buffer(values)])
        return pc.if_else(column.is_null(), pa.scalar(None, pa.binary()), as_bytes) if column.null_count else as_bytes
    try:
        return column.cast(pa.string())
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        return pa.array([None if value is None else str(value) for value in column.to_pylist()], type=pa.string())


def hashable(column: Any) -> Any:
    """A Parquet column as the split's hash reads it (:func:`preprocessing.hashing.raw_row_hashes`): a floating-point
    column as it is, which the hash reads as its canonical form's 8-byte cells without that copy of the column (40 MB
    a 100,000-row chunk of 50 float columns), any other in its canonical form."""
    import pyarrow as pa

    return column if pa.types.is_floating(column.type) else canonical(column)


@lru_cache(maxsize=2)
def _eight_byte_offsets(n: int) -> Any:
    """The offsets of ``n`` cells of 8 bytes each, as an Arrow buffer (immutable: shared by every column of a batch
    and every batch of that many rows)."""
    import numpy as np
    import pyarrow as pa

    return pa.py_buffer(np.arange(0, 8 * n + 1, 8, dtype="<i4"))
