"""A table's columns a chunk of rows at a time: the one chunked reader of CSV, gzip CSV and Parquet files.

Each chunk holds exactly ``chunk_rows`` rows (the last may hold fewer), whichever reader made it, so what is built
from the chunks does not depend on the reader. The file is read on a thread of its own, a few chunks ahead.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from containerlib.prefetch import InFlight, prefetched
from containerlib.tables.csv_reader import ArrowCannot, csv_pieces, csv_pieces_with_text
from containerlib.tables.files import is_parquet
from containerlib.tables.parquet_reader import parquet_pieces
from containerlib.tables.raw import raw_pieces


@dataclass
class Chunk:
    """Consecutive rows of one file: the used columns as pandas' reader gives them, except the numeric features when
    an Arrow reader gave those straight as one float32 matrix (no float64 pandas block in between)."""

    frame: pd.DataFrame
    numeric: np.ndarray | None = None  # float32 (rows, schema.numeric_columns), column-major, NaN where missing
    table: Any = None  # the Arrow table ``numeric`` came from, for a value shown in a message
    raw: Any = None  # every column of these rows as written (text; Parquet floats as read), when asked for: tables.raw

    def __len__(self) -> int:
        return len(self.frame)

    def release(self) -> None:
        """Drop the Arrow tables once the chunk is converted (its raw text and ``table``'s values, which hold their
        whole read range), keeping ``table``'s types: what is left is its frame and numeric matrix. A chunk waiting
        to be dealt then holds no Arrow memory."""
        self.raw = None
        if self.table is not None:
            self.table = self.table.schema.empty_table()

    def value(self, column: str, row: int) -> Any:
        """The cell as pandas would hold it (NaN for missing), for a message."""
        if column in self.frame:
            return self.frame[column].iloc[row]
        value = self.table.column(column)[row].as_py()
        return float("nan") if value is None else value


def read_chunks(
    path: Path,
    header: list[str],
    columns: list[str],
    text: list[str],
    numeric: Sequence[str],
    chunk_rows: int,
    centres: np.ndarray | None = None,
    raw: bool = False,
    in_flight: InFlight | None = None,
) -> Iterator[Chunk]:
    """``columns`` of one file (whose ``header`` is known: :func:`~containerlib.tables.header.read_header`),
    ``chunk_rows`` rows at a time: ``text`` columns as strings, the ``numeric`` ones as one float32 matrix where an
    Arrow reader gives them as numbers, each minus its centre (``centres``, float64, aligned with ``numeric``: see
    ``containerlib.encoding.FeatureLayout.centres``) taken before float32. Read on a thread of its own, which goes
    straight on to the next piece; the chunks are made on the caller's. With ``raw``, each chunk also holds every
    column of its rows as written (:mod:`~containerlib.tables.raw`), from the same read of the file (a CSV range's
    text gives its values too: :mod:`~containerlib.tables.csv_text`). A file that cannot be read raises what its
    reader raised (OSError, ValueError, UnicodeDecodeError, pandas' ParserError). With ``in_flight``, the reading
    thread hands on a piece only when there is room for it there (the caller leaves it once done with its chunk)."""
    if is_parquet(path):
        if raw:  # one read of the file gives both
            pieces = (_WithRaw(table, whole) for table, whole in parquet_pieces(path, columns, text, chunk_rows, True))
        else:
            pieces = parquet_pieces(path, columns, text, chunk_rows)
    elif raw:
        pieces = _csv_with_raw(path, header, columns, text, chunk_rows)
    else:
        pieces = csv_pieces(path, header, columns, text, chunk_rows)
    return as_chunks(prefetched(in_flight.entered(pieces) if in_flight else pieces), text, numeric, centres)


def _csv_with_raw(path: Path, header: list[str], columns: list[str], text: list[str], chunk_rows: int) -> Iterator[Any]:
    """A CSV file's pieces with their raw text, from one parse of each range while Arrow can read it as pandas would;
    from the first range it cannot, the two readers each on their own (each handing over to pandas where it must),
    from the first piece not yet given."""
    given = 0
    try:
        for piece, raw in csv_pieces_with_text(path, header, columns, text, chunk_rows):
            yield _WithRaw(piece, raw)
            given += 1
        return
    except ArrowCannot:
        pass
    yield from islice(
        _paired(csv_pieces(path, header, columns, text, chunk_rows), raw_pieces(path, header, chunk_rows)), given, None
    )


def _paired(pieces: Iterator[Any], raws: Iterator[Any]) -> Iterator[Any]:
    """Each piece with the raw text of the same rows; a count that differs (a reader that counted rows otherwise) is
    a ValueError rather than rows split by their neighbours' text."""
    for piece in pieces:
        raw = next(raws, None)
        rows = len(piece) if isinstance(piece, pd.DataFrame) else piece.num_rows
        if raw is None or raw.num_rows != rows:
            raise ValueError(
                f"the rows read as text ({0 if raw is None else raw.num_rows}) and as values ({rows}) differ"
            )
        yield _WithRaw(piece, raw)


@dataclass
class _WithRaw:
    """A piece read with the raw text of its rows."""

    piece: Any
    raw: Any


def as_chunks(
    pieces: Iterator[Any], text: list[str], numeric: Sequence[str], centres: np.ndarray | None = None
) -> Iterator[Chunk]:
    """Pieces read (Arrow tables, or pandas' frames where pandas took over; each maybe with its raw text) as chunks."""
    first = 0
    for piece in pieces:
        raw = None
        if isinstance(piece, _WithRaw):
            piece, raw = piece.piece, piece.raw
        chunk = Chunk(piece) if isinstance(piece, pd.DataFrame) else _arrow_chunk(piece, text, numeric, first, centres)
        chunk.raw = raw
        first += len(chunk)
        del piece, raw  # held by the chunk alone, which this frame does not keep while the next piece is read
        yield chunk
        del chunk


def _arrow_frame(table: Any, text: list[str], first: int) -> pd.DataFrame:
    """An Arrow table as the DataFrame pandas' reader would give: NaN (not None) for missing text, a running index."""
    frame = table.to_pandas()
    for column in text:
        if table.column(column).null_count:
            frame[column] = frame[column].where(frame[column].notna(), np.nan)
    frame.index = pd.RangeIndex(first, first + len(frame))
    return frame


def _arrow_chunk(
    table: Any, text: list[str], numeric: Sequence[str], first: int, centres: np.ndarray | None = None
) -> Chunk:
    """An Arrow table as a chunk: its numeric feature columns, when all are Arrow numbers, cast to float32 column by
    column as pandas would (integers directly, missing as NaN; a column with a centre minus it in float64 first),
    the other columns as a DataFrame."""
    import pyarrow as pa

    types = [table.schema.field(column).type for column in numeric]
    if not types or not all(pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_null(kind)
                            for kind in types):  # fmt: skip
        return Chunk(_arrow_frame(table, text, first))
    matrix = np.empty((table.num_rows, len(numeric)), dtype=np.float32, order="F")
    with np.errstate(over="ignore", invalid="ignore"):  # beyond float32's range becomes inf, as in pandas
        for index, column in enumerate(numeric):
            if pa.types.is_null(types[index]):  # every value missing, as pandas' all-NaN float column
                matrix[:, index] = np.nan
                continue
            start = 0
            centre = centres[index] if centres is not None else 0.0
            for piece in table.column(column).chunks:
                values = piece.to_numpy(zero_copy_only=False)
                if centre:
                    values = values.astype(np.float64) - centre
                matrix[start : start + len(piece), index] = values
                start += len(piece)
    wanted = set(numeric)
    rest = table.select([name for name in table.column_names if name not in wanted])
    return Chunk(_arrow_frame(rest, text, first), matrix, table)
