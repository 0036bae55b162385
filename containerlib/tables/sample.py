"""The first rows of a table as text, for deciding a schema from them (``pipeline/schema.py``).

Every value is kept as its text, missing values as NaN where Preprocess reads them as missing: CSV through pandas'
reader with its default missing-value strings (those Preprocess's reader takes, see
:mod:`~containerlib.tables.csv_reader`), Parquet cast to text by Arrow (as Preprocess hashes categorical values).
Headers are checked as Preprocess checks them (:func:`~containerlib.tables.header.check_header`).
"""

from __future__ import annotations

import csv
import gzip
import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from containerlib.errors import TableError
from containerlib.tables.files import is_gzip, is_parquet
from containerlib.tables.header import check_header, csv_text_error
from containerlib.tables.parquet_types import as_seconds, check_flat_columns, data_columns, is_time

if TYPE_CHECKING:
    import pandas as pd


CSV_TEXT = "csv_text"  # a CSV sample frame's attrs key: the text it was read from
# a local Parquet file's sample reads row groups spread over the file within this many bytes of column chunks (all of
# them in a smaller file): a sample of a large file must not read the whole file
LOCAL_PARQUET_SAMPLE_BYTES = 64 << 20


@dataclass(frozen=True)
class TableSample:
    """A file's header, its first rows as text, and how many bytes were read for them."""

    header: list[str]
    frame: pd.DataFrame
    bytes_read: int


def sample_file(path: Path, name: str, rows: int) -> TableSample:
    """The header and first ``rows`` rows of a local file, named ``name`` in messages (an unreadable file by its
    path): a CSV file's first lines only, a Parquet file's first rows of every row group."""
    try:
        if is_parquet(path):
            header, frame = parquet_sample(str(path), name, rows, max_bytes=LOCAL_PARQUET_SAMPLE_BYTES)
            return TableSample(header, frame, path.stat().st_size)
        opener: Any = gzip.open if is_gzip(path) else open
        with opener(path, "rb") as handle:
            data = read_lines(handle, rows + 1)
        header, frame = csv_sample(data, name, rows)
        return TableSample(header, frame, len(data))
    except (OSError, EOFError, UnicodeDecodeError) as error:
        raise TableError(f"{path}: unreadable ({error})") from None


def csv_sample(data: bytes, name: str, rows: int) -> tuple[list[str], pd.DataFrame]:
    """The header and up to ``rows`` rows of CSV text (whole lines), every value a string, missing values NaN."""
    import pandas as pd

    text = data.decode("utf-8-sig", errors="strict") if data else ""
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader, None)
    except csv.Error as error:
        raise csv_text_error(name, text, error, reader.line_num) from None
    if not header or header == [""]:
        raise TableError(f"{name}: empty file, expected a header row")
    check_header(header, name)
    try:
        frame = pd.read_csv(io.StringIO(text), dtype=str, nrows=rows)
    except (ValueError, pd.errors.ParserError) as error:
        raise TableError(f"{name}: not a readable CSV sample ({error})") from None
    frame.attrs[CSV_TEXT] = text  # kept, not parsed: a message tells an empty cell from the text 'NaN' by it
    return header, frame


def missing_cell_text(frame: pd.DataFrame, column: str, row: int) -> str | None:
    """The text as written of a cell ``csv_sample`` read as missing ('' for an empty cell, 'NaN', 'NA', ...); None
    when the frame holds no CSV text (a Parquet sample: a null)."""
    import pandas as pd

    text = frame.attrs.get(CSV_TEXT)
    if text is None:
        return None
    raw = pd.read_csv(io.StringIO(text), dtype=str, nrows=row + 1, keep_default_na=False, usecols=[column])
    return str(raw[column].iloc[row])


def parquet_sample(
    handle: Any,
    name: str,
    rows: int,
    passthrough: tuple[type[BaseException], ...] = (),
    max_bytes: int | None = None,
) -> tuple[list[str], pd.DataFrame]:
    """Up to ``rows`` rows of a Parquet file (a path or a seekable file object) drawn from its row groups, the first
    ``rows / groups`` of each (a file written in label order has one class in its first group): every row group, or
    with ``max_bytes`` (what reading may take, less what ``handle.bytes_read`` says the footer took) as many as it
    holds, spread evenly from the first to the last (:func:`sampled_row_groups`). Every column cast to text by
    Arrow; a pandas index stored as a column left out (:func:`parquet_types.data_columns`). ``passthrough``: errors
    of ``handle`` itself (e.g. a byte budget) that reach the caller as they are, not as an unreadable file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    batches = []
    try:
        parquet = pq.ParquetFile(handle)
        header = data_columns(parquet.schema_arrow)
        check_header(header, name)
        check_flat_columns(parquet.schema_arrow, name)
        left = None if max_bytes is None else max_bytes - int(getattr(handle, "bytes_read", 0))
        groups = sampled_row_groups(parquet.metadata, left)
        per_group = -(-max(rows, 1) // max(len(groups), 1))
        for group in groups:
            batch = next(parquet.iter_batches(batch_size=per_group, row_groups=[group], columns=header), None)
            if batch is not None:
                batches.append(batch)
    except passthrough:
        raise
    except (OSError, ValueError, pa.ArrowException) as error:
        raise TableError(f"{name}: not a readable Parquet file ({error})") from None
    import pandas as pd

    if not batches:
        return header, pd.DataFrame(columns=header, dtype=object)
    table = pa.Table.from_batches(batches).slice(0, rows)
    columns = {}
    for column in header:
        values = table.column(column).combine_chunks()
        if is_time(values.type):
            values = as_seconds(values)
        text = values.cast(pa.string()) if not pa.types.is_string(values.type) else values
        columns[column] = pd.Series(text.to_numpy(zero_copy_only=False), dtype=object)
    return header, pd.DataFrame(columns)


def sampled_row_groups(metadata: Any, max_bytes: int | None) -> list[int]:
    """The row groups a sample reads: all of them, or when their column chunks take more than ``max_bytes``, as many
    as the largest fits that many times, spread evenly from the first to the last (at least the first)."""
    count = metadata.num_row_groups
    if max_bytes is None or count <= 1:
        return list(range(count))
    sizes = [
        sum(metadata.row_group(group).column(column).total_compressed_size for column in range(metadata.num_columns))
        for group in range(count)
    ]
    if sum(sizes) <= max_bytes:
        return list(range(count))
    fits = min(count, max(1, max_bytes // max(max(sizes), 1)))
    if fits == 1:
        return [0]
    return sorted({round(index * (count - 1) / (fits - 1)) for index in range(fits)})


def read_lines(handle: Any, lines: int) -> bytes:
    """The first ``lines`` lines of a binary file (quoted newlines may make it fewer rows: enough for a sample)."""
    chunks = []
    for _ in range(lines):
        line = handle.readline()
        if not line:
            break
        chunks.append(line)
    return b"".join(chunks)


def complete_lines(data: bytes, whole: bool) -> bytes:
    """A prefix of a CSV file cut after its last complete line (everything when the file was read whole)."""
    if whole:
        return data
    end = data.rfind(b"\n")
    return data[: end + 1] if end >= 0 else b""
