"""A CSV file parsed once for both its raw cells and its values (``containerlib/tables/csv_text.py``): the chunks are
those of the typed reader and of the raw reader run each on its own, bit for bit, whatever the values, the ranges,
and where Arrow hands over to pandas."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from containerlib.tables import csv_reader
from containerlib.tables.chunks import Chunk, _paired, as_chunks, read_chunks
from containerlib.tables.csv_reader import csv_pieces
from containerlib.tables.header import read_header
from containerlib.tables.raw import raw_pieces

AWKWARD = [
    "n,x,flag,big,cat,label,sparse,nan,late",
    *(f"{i},{(i * 7919) % 1000 / 7 - 50:.17g},{'True' if i % 3 else 'false'},{2**53 + 3 * i},c{i % 5},{i % 2},"
      f"{i if i % 4 else ''},{'nan' if i % 6 == 0 else i / 8},{'' if i < 300 else i / 3}" for i in range(400)),
    "5,-0.0,TRUE,7,,1,NA,NaN,1e39",
    "6,1e39,False,-9007199254740993,NA,0,,-nan,-0.0",
    "7,NaN,True,9,<NA>,1,#N/A,inf,NAN",
    '8,-inf,True,10,"quoted, text",0,"12",1,2',
    "",
    "9,#N/A,true,11,null,1,n/a,2,3",
    "10,,true,12,n/a,0,null,3,4",
]  # fmt: skip


def old_chunks(path: Path, columns: list[str], text: list[str], numeric: list[str], rows: int) -> list[Chunk]:
    """The chunks from the typed reader and the raw reader, each parsing the file on its own (the reference)."""
    header = read_header(path)
    pairs = _paired(csv_pieces(path, header, columns, text, rows), raw_pieces(path, header, rows))
    return list(as_chunks(pairs, text, numeric))


def assert_same(ours: list[Chunk], theirs: list[Chunk]) -> None:
    assert [len(chunk) for chunk in ours] == [len(chunk) for chunk in theirs]
    for mine, reference in zip(ours, theirs):  # noqa: B905 - lengths compared above
        assert (mine.numeric is None) == (reference.numeric is None)
        if mine.numeric is not None:
            np.testing.assert_array_equal(mine.numeric.view(np.uint32), reference.numeric.view(np.uint32))
            assert mine.table.schema == reference.table.schema
        assert mine.frame.dtypes.to_dict() == reference.frame.dtypes.to_dict()
        assert mine.frame.equals(reference.frame)
        assert mine.raw.equals(reference.raw)


@pytest.mark.parametrize("range_bytes", [300, 2_000, 8 << 20])
@pytest.mark.parametrize("gzipped", [False, True])
def test_one_parse_gives_the_two_readers_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, range_bytes: int,
                                               gzipped: bool) -> None:  # fmt: skip
    """Integers beyond 2**53, -0.0, 1e39, every kind of missing value, NaN and inf as text, booleans, quoted numbers,
    a column empty in the first ranges, ranges cut anywhere."""
    monkeypatch.setattr(csv_reader, "ARROW_RANGE_BYTES", range_bytes)
    path = tmp_path / ("awkward.csv.gz" if gzipped else "awkward.csv")
    content = ("\n".join(AWKWARD) + "\n").encode()
    path.write_bytes(gzip.compress(content) if gzipped else content)
    header = read_header(path)
    for text, numeric in (
        ([], ["big", "late", "n", "nan", "sparse", "x"]),
        (["cat"], ["big", "x"]),
        (["cat", "label"], []),
    ):
        for rows in (7, 64, 1000):
            ours = list(read_chunks(path, header, header, text, numeric, rows, raw=True))
            assert_same(ours, old_chunks(path, header, text, numeric, rows))


def test_a_plain_numeric_file_is_parsed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Numbers, integers and missing values: each range parsed as text only, the values cast from it."""
    monkeypatch.setattr(csv_reader, "ARROW_RANGE_BYTES", 500)
    path = tmp_path / "plain.csv"
    path.write_text(
        "a,b,c,label\n" + "".join(f"{i / 3:.6g},{'' if i % 5 == 0 else i},{-i},{i % 2}\n" for i in range(300))
    )
    parses = []
    real_read_csv = pacsv.read_csv

    def counted(*args: object, **kwargs: object) -> pa.Table:
        parses.append(kwargs["convert_options"].include_columns)
        return real_read_csv(*args, **kwargs)

    monkeypatch.setattr(pacsv, "read_csv", counted)
    header = read_header(path)
    ours = list(read_chunks(path, header, header, [], ["a", "b", "c"], 64, raw=True))
    assert parses and all(columns == [] for columns in parses)  # text only: no typed parse
    monkeypatch.setattr(pacsv, "read_csv", real_read_csv)
    assert_same(ours, old_chunks(path, header, [], ["a", "b", "c"], 64))


@pytest.mark.parametrize("late_line", ["1.5,2,0", "seven,2,0", "2021-01-01,2,0", f"{2**53 + 1},2,0", " 3,2,0"])
def test_where_arrow_hands_over_to_pandas_the_chunks_are_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, late_line: str
) -> None:
    """A late range the text cannot give the typed values of (or pandas must read): the two readers take over from
    the first chunk not yet given, with the same chunks."""
    monkeypatch.setattr(csv_reader, "ARROW_RANGE_BYTES", 1_000)
    path = tmp_path / "late.csv"
    path.write_text("a,b,label\n" + "".join(f"{i},{i * 2},{i % 2}\n" for i in range(300)) + late_line + "\n")
    header = read_header(path)
    ours = list(read_chunks(path, header, header, [], ["a", "b"], 40, raw=True))
    assert_same(ours, old_chunks(path, header, [], ["a", "b"], 40))


def test_a_quoted_line_break_cut_by_a_range_gives_the_same_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "quoted.csv"
    lines = [f"{i},c{i},{i % 2}" for i in range(80)]
    lines[41] = '41,"two\nlines, and\nthree",1'
    path.write_text("x,cat,label\n" + "\n".join(lines) + "\n")
    header = read_header(path)
    for size in range(20, 1_000, 37):
        monkeypatch.setattr(csv_reader, "ARROW_RANGE_BYTES", size)
        ours = list(read_chunks(path, header, header, ["cat"], ["x"], 16, raw=True))
        assert_same(ours, old_chunks(path, header, ["cat"], ["x"], 16))


def test_a_short_row_is_still_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(csv_reader, "ARROW_RANGE_BYTES", 1_000)
    path = tmp_path / "short.csv"
    path.write_text("a,b,label\n\n" + "".join(f"{i},{i * 2},{i % 2}\n" for i in range(300)) + "1,2\n")
    header = read_header(path)
    with pytest.raises(ValueError, match=r"^data row 301 has 2 field\(s\) but the header names 3"):
        list(read_chunks(path, header, header, [], ["a", "b"], 40, raw=True))
