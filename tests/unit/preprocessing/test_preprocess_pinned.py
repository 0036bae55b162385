"""Preprocess outputs pinned byte for byte: the digests were computed with the pandas-only reader (before the Arrow
CSV reader; the same in the project's environment and in the processing image's, pandas 1.1.3), so any change of
parsing, chunking, hashing, split or shuffle order shows up here. Taken again (the same in both environments) when
the split came to be decided from each row's raw cells and the test split to be written a chunk at a time with
its row ids (issue 40)."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from containerlib.tables import csv_reader, parquet_reader
from containerlib.tables.chunks import as_chunks
from containerlib.tables.csv_reader import csv_pieces
from containerlib.tables.header import read_header
from containerlib.tables.parquet_reader import parquet_pieces
from preprocessing.conversion import _numeric_block
from preprocessing.preprocess import main


def write_inputs(folder: Path) -> None:
    """Three files (CSV, gzip CSV, Parquet) with awkward values: many digits, -0.0, exponents, blank lines, NaN,
    categorical text, an id column; the CSV parts span several chunks."""
    rng = np.random.default_rng(11)
    rows = 2_500
    frame = pd.DataFrame(
        {
            "id": [f"user-{i:05d}" for i in range(rows)],
            "x1": rng.normal(size=rows) * 1e3,
            "x2": rng.integers(-5, 5, size=rows),
            "colour": rng.choice(["red", "green", " blue", "NA-ish"], size=rows),
            "x3": rng.normal(size=rows).astype(np.float32).astype(np.float64) * 1e-20,
            "target": rng.integers(0, 3, size=rows),
            "flag": rng.choice(["yes", "no"], size=rows),
        }
    )
    frame.loc[7, "x1"] = -0.0
    frame.loc[11, "x3"] = np.nan
    frame.loc[13, "colour"] = None
    folder.mkdir()
    text = frame.iloc[:1000].to_csv(index=False, float_format="%.17g")
    lines = text.splitlines()
    lines.insert(50, "")  # a blank line is not a row
    (folder / "a.csv").write_text("\n".join(lines) + "\n")
    frame.iloc[1000:2000].to_csv(folder / "b.csv.gz", index=False)
    frame.iloc[2000:].to_parquet(folder / "c.parquet", index=False)


CASES = {
    "multiclass, categorical, missing zero": (
        ["--label-column", "target", "--predictor-type", "multiclass_classifier", "--categorical-columns", "colour",
         "--hash-buckets", "5", "--missing", "zero", "--feature-columns", "x1,x2,colour,x3"],
        "43cb6f169677e3305d5482b11c1cca86c481803f68fe7e67c8b36998d4681a42",
    ),
    # without --feature-columns or a schema the features are the columns sorted by name (issue 11: one order on every
    # host); the pandas-era digest is kept below for the header's order, given explicitly
    "binary by label values, id split, missing drop": (
        ["--label-column", "flag", "--predictor-type", "binary_classifier", "--label-values", "no,yes",
         "--id-column", "id", "--categorical-columns", "colour", "--missing", "drop"],
        "60c03b6bfe32ec1463e1bb9e9f6979c218629bdc3dbfa52e9bb159bfc8f30843",
    ),
    "binary by label values, id split, missing drop, the header's order": (
        ["--label-column", "flag", "--predictor-type", "binary_classifier", "--label-values", "no,yes",
         "--id-column", "id", "--categorical-columns", "colour", "--missing", "drop",
         "--feature-columns", "x1,x2,colour,x3,target"],
        "cc1103be757f3aaeb84d0dc2835971ab376f3bf32e7dff99171071807e77a8b6",
    ),
    "regression, numeric only": (
        ["--label-column", "x1", "--predictor-type", "regressor", "--feature-columns", "x2,x3,target",
         "--missing", "zero"],
        "a5a4f8c31b6965f15d1c96084f3c6caf2dd9f9ef1f66a899fbb524c929c711f6",
    ),
}  # fmt: skip


# added to the summary after the digests were taken: DataVersion (issue 12), per-column category counts (issue 13),
# rows outside a vocabulary and imputed values per column (issue 40)
LATER_SUMMARY_KEYS = ("data_version", "categorical_stats", "unseen_values", "imputed_values")
# the data-quality baseline's sample (issue 30), tested in test_preprocess.py; the serving featurizer's model data
# (issue 28), tested in test_serve.py; the raw rows' sample for the raw-column baseline (issue 40), tested in
# tests/unit/preprocessing/test_raw_rows.py
LATER_OUTPUTS = ("baseline", "model", "rows")


def output_digest(output: Path) -> str:
    """SHA-256 over every output file: shards byte for byte, summaries as their JSON without the later keys."""
    digest = hashlib.sha256()
    for path in sorted(p for p in output.rglob("*") if p.is_file()):
        if path.relative_to(output).parts[0] in LATER_OUTPUTS:
            continue
        content = path.read_bytes()
        if path.suffix == ".json":
            summary = json.loads(content)
            for key in LATER_SUMMARY_KEYS:
                summary.pop(key, None)
            (summary.get("categorical") or {}).pop("encodings", None)  # each column's encoding (issue 40)
            content = json.dumps(summary, indent=2, sort_keys=True).encode() + b"\n"
        digest.update(path.relative_to(output).as_posix().encode() + b"\0" + content)
    return digest.hexdigest()


@pytest.mark.parametrize("case", list(CASES))
def test_outputs_are_byte_identical_to_the_pandas_reader(tmp_path: Path, case: str) -> None:
    arguments, expected = CASES[case]
    write_inputs(tmp_path / "in")
    code = main(
        ["--input-dir", str(tmp_path / "in"), "--output-dir", str(tmp_path / "out"), "--resource-config",
         str(tmp_path / "absent.json"), "--chunk-rows", "300", "--train-shards", "3", "--seed", "5", *arguments]
    )  # fmt: skip
    assert code == 0
    assert output_digest(tmp_path / "out") == expected


# ---------------------------------------------------------------------------------------------------------------------
# The Arrow CSV reader gives the chunks pandas' reader gives (values, dtypes, index), or hands over to pandas


def pandas_chunks(path: Path, text: list[str], chunk_rows: int) -> list[pd.DataFrame]:
    return list(pd.read_csv(path, dtype=dict.fromkeys(text, str), chunksize=chunk_rows))


def reader_chunks(path: Path, text: list[str], chunk_rows: int) -> list[pd.DataFrame]:
    header = read_header(path)
    chunks = list(as_chunks(csv_pieces(path, header, header, text, chunk_rows), text, []))
    assert all(chunk.numeric is None for chunk in chunks)  # no numeric features asked for: every column a frame's
    return [chunk.frame for chunk in chunks]


def as_job_reads(frame: pd.DataFrame) -> pd.DataFrame:
    """Number columns as float32, what the job keeps: pandas 1.x's default float parser (the processing image's) is
    off by one float64 ulp now and then where Arrow's (and pandas 2's) is correctly rounded; and a column whose
    integers turn to floats in a later range is float64 in every chunk Arrow parsed with those rows (pandas decides
    chunk by chunk), the same float32 values either way."""
    floats = [column for column in frame.columns if frame[column].dtype in (np.float64, np.int64)]
    with np.errstate(over="ignore"):  # 1e39 becomes inf, as in the job
        return frame.astype(dict.fromkeys(floats, np.float32))


def assert_same_chunks(ours: list[pd.DataFrame], theirs: list[pd.DataFrame]) -> None:
    assert [len(frame) for frame in ours] == [len(frame) for frame in theirs]
    for index, mine in enumerate(ours):  # these tests also run under the processing image's Python 3.9
        pd.testing.assert_frame_equal(as_job_reads(mine), as_job_reads(theirs[index]), check_exact=True)


AWKWARD = [
    "n,x,flag,big,cat,label",
    *(f"{i},{(i * 7919) % 1000 / 7 - 50:.17g},{'True' if i % 3 else 'false'},{2**40 + i},c{i % 5},{i % 2}"
      for i in range(400)),
    "5,-0.0,TRUE,7,,1",
    "6,1e39,False,8,NA,0",
    "7,NaN,True,9,<NA>,1",
    "8,-inf,True,10,\"quoted, text\",0",
    "",
    "9,#N/A,true,11,null,1",
    "10,,true,12,n/a,0",
]  # fmt: skip


def test_arrow_reader_gives_pandas_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(csv_reader, "ARROW_RANGE_BYTES", 2_000)  # many Arrow ranges per chunk and across chunks
    path = tmp_path / "awkward.csv"
    path.write_text("\n".join(AWKWARD) + "\n")
    for text in ([], ["cat"], ["cat", "label"]):
        assert_same_chunks(reader_chunks(path, text, 64), pandas_chunks(path, text, 64))
    gzipped = tmp_path / "awkward.csv.gz"
    gzipped.write_bytes(__import__("gzip").compress(path.read_bytes()))
    assert_same_chunks(reader_chunks(gzipped, ["cat"], 100), pandas_chunks(gzipped, ["cat"], 100))


@pytest.mark.parametrize(
    "late_line",
    ["1.5,2,0", "seven,2,0", "1,2,0,9", "2021-01-01,2,0"],
    ids=["int becomes float", "text in a number column", "long row", "date"],
)
def test_pandas_takes_over_where_arrow_would_differ(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, late_line: str
) -> None:
    monkeypatch.setattr(csv_reader, "ARROW_RANGE_BYTES", 1_000)
    path = tmp_path / "late.csv"
    path.write_text("a,b,label\n" + "".join(f"{i},{i * 2},{i % 2}\n" for i in range(300)) + late_line + "\n")
    try:
        expected = pandas_chunks(path, [], 40)
    except (ValueError, pd.errors.ParserError) as error:
        with pytest.raises(type(error), match=str(error)):
            reader_chunks(path, [], 40)
        return
    assert_same_chunks(reader_chunks(path, [], 40), expected)
    dated = tmp_path / "dated.csv"
    dated.write_text("a,when,label\n" + "".join(f"{i},2021-01-0{1 + i % 9},{i % 2}\n" for i in range(50)))
    assert_same_chunks(reader_chunks(dated, [], 40), pandas_chunks(dated, [], 40))


def test_every_missing_value_string_of_pandas_reads_as_missing(tmp_path: Path) -> None:
    from pandas._libs.parsers import STR_NA_VALUES

    path = tmp_path / "na.csv"
    path.write_text("x,cat,label\n" + "".join(f"{value},{value},1\n" for value in sorted(STR_NA_VALUES)) + "1,a,0\n")
    chunks = reader_chunks(path, ["cat"], 100)
    assert chunks[0]["x"].isna().sum() == chunks[0]["cat"].isna().sum() == len(STR_NA_VALUES)
    assert_same_chunks(chunks, pandas_chunks(path, ["cat"], 100))


def test_arrow_reads_columns_wanted_in_another_order_than_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The layout's feature order (sorted names) is rarely the file's: Arrow must still read it, not pandas."""
    monkeypatch.setattr(csv_reader, "ARROW_RANGE_BYTES", 1_000)
    path = tmp_path / "unsorted.csv"
    path.write_text("f2,f10,label,f1\n" + "".join(f"{i / 3:.6g},{i},{i % 2},{-i}\n" for i in range(200)))
    expected = pandas_chunks(path, [], 64)

    def pandas_is_not_used(*args: object, **kwargs: object) -> None:
        raise AssertionError("the CSV file was read by pandas' reader")

    monkeypatch.setattr(csv_reader.pd, "read_csv", pandas_is_not_used)
    header = read_header(path)
    chunks = as_chunks(csv_pieces(path, header, ["f1", "f10", "f2", "label"], [], 64), [], [])
    assert_same_chunks([chunk.frame for chunk in chunks], expected)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_numeric_features_straight_from_arrow_equal_pandas_block(tmp_path: Path, suffix: str) -> None:
    """The float32 matrix an Arrow reader builds equals the one made from pandas' frame: -0.0, 1e39 (inf in float32),
    missing, integers beyond float32's precision, a column with missing integers; a message shows the cell's value."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    lines = ["x,big,sparse,cat,label", *(f"{i / 7 - 3:.9g},{2**40 + 3 * i},{i if i % 4 else ''},c{i % 3},{i % 2}"
             for i in range(150)), "-0.0,16777217,,c1,1", "1e39,-9007199254740993,5,,0", ",7,,c2,1"]  # fmt: skip
    source = tmp_path / "in.csv"
    source.write_text("\n".join(lines) + "\n")
    numeric, columns = ["big", "sparse", "x"], ["x", "big", "sparse", "cat", "label"]
    if suffix == ".parquet":
        path = tmp_path / "in.parquet"
        pq.write_table(pacsv.read_csv(source), path, row_group_size=40)
        chunks = list(as_chunks(parquet_pieces(path, columns, ["cat"], 64), ["cat"], numeric))
    else:
        path = source
        chunks = list(as_chunks(csv_pieces(path, read_header(path), columns, ["cat"], 64), ["cat"], numeric))
    expected = pandas_chunks(source, ["cat"], 64)
    assert [len(chunk) for chunk in chunks] == [len(frame) for frame in expected]
    shown = 0
    for chunk, frame in zip(chunks, expected):  # noqa: B905 - lengths compared above
        assert chunk.numeric is not None and chunk.numeric.dtype == np.float32
        np.testing.assert_array_equal(
            chunk.numeric.view(np.uint32), _numeric_block(frame, numeric, None).view(np.uint32)
        )
        assert list(chunk.frame.columns) == ["cat", "label"]
        for row, index in np.argwhere(~np.isfinite(chunk.numeric)):  # the cells a message names
            column = numeric[index]
            value, expected = chunk.value(column, row), frame[column].iloc[row].item()
            if math.isnan(expected):
                assert math.isnan(value), (column, row, value)
            else:  # Arrow's value is correctly rounded; pandas 1.x's default parser (the image's) is off by an ulp
                assert abs(value - expected) <= np.spacing(abs(expected)), (column, row, value, expected)
            shown += 1
    assert shown == 38 + 4  # "sparse" empty in every 4th row and 2 of the last 3; x 1e39 and empty


def test_a_short_row_arrow_refuses_is_refused_not_filled_in_as_pandas_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one place the reader differs from pandas on purpose: pandas fills a row cut short with missing values
    (then imputed, or trained on as zeros); the reader names it, counting rows as pandas does (blank lines skipped)."""
    monkeypatch.setattr(csv_reader, "ARROW_RANGE_BYTES", 1_000)
    path = tmp_path / "late.csv"
    path.write_text("a,b,label\n\n" + "".join(f"{i},{i * 2},{i % 2}\n" for i in range(300)) + "1,2\n")
    assert pd.isna(pandas_chunks(path, [], 40)[-1]["label"].iloc[-1])  # pandas reads the short row, no label
    refused = r"^data row 301 has 2 field\(s\) but the header names 3 \(no value for 'label'"
    with pytest.raises(ValueError, match=refused):
        reader_chunks(path, [], 40)


def test_a_quoted_line_break_cut_by_a_range_reads_as_pandas_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ranges end at a line break, which may sit inside a quoted value: the range then ends in an open quote, Arrow
    refuses it and pandas reads on; wherever the cut falls, the values are pandas'."""
    path = tmp_path / "quoted.csv"
    lines = [f"{i},c{i},{i % 2}" for i in range(80)]
    lines[41] = '41,"two\nlines, and\nthree",1'
    path.write_text("x,cat,label\n" + "\n".join(lines) + "\n")
    expected = pd.concat(pandas_chunks(path, ["cat"], 16))
    header = read_header(path)
    pandas_took_over = 0
    for size in range(20, 1_000, 7):  # cuts before, inside and after the quoted value
        monkeypatch.setattr(csv_reader, "ARROW_RANGE_BYTES", size)
        chunks = list(as_chunks(csv_pieces(path, header, header, ["cat"], 16), ["cat"], ["x"]))
        pandas_took_over += any(chunk.numeric is None for chunk in chunks)
        read = pd.concat([chunk.frame for chunk in chunks])
        assert read["cat"].tolist() == expected["cat"].tolist(), size
        assert read["label"].tolist() == expected["label"].tolist(), size
    assert pandas_took_over > 0  # some cut fell inside the quotes


def test_a_column_empty_at_first_takes_the_type_found_later_and_arrow_reads_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A column empty in the first ranges (a feature that starts late) is missing there, as in pandas; Arrow does
    not hand the rest of the file to pandas because of it."""
    monkeypatch.setattr(csv_reader, "ARROW_RANGE_BYTES", 300)
    path = tmp_path / "late.csv"
    lines = [f"{i},{'' if i < 90 else i / 4},{'' if i < 150 else 'c' + str(i % 3)},{i % 2}" for i in range(200)]
    path.write_text("n,late,cat,label\n" + "\n".join(lines) + "\n")
    expected = pandas_chunks(path, ["cat"], 32)
    header = read_header(path)
    chunks = list(as_chunks(csv_pieces(path, header, header, ["cat"], 32), ["cat"], ["late", "n"]))
    assert all(chunk.numeric is not None for chunk in chunks)  # Arrow read every row
    assert [len(chunk) for chunk in chunks] == [len(frame) for frame in expected]
    for chunk, frame in zip(chunks, expected):  # noqa: B905 - lengths compared above
        block = _numeric_block(frame, ["late", "n"], None)
        np.testing.assert_array_equal(chunk.numeric.view(np.uint32), block.view(np.uint32))
        pd.testing.assert_series_equal(chunk.frame["cat"], frame["cat"])


def test_integers_then_floats_widen_in_arrow_as_in_pandas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A column of integers that shows a float in a later range is read on by Arrow as floats (integers up to 2**53
    are exact), not handed to pandas; beyond 2**53 a cast would round, so pandas takes over there."""
    monkeypatch.setattr(csv_reader, "ARROW_RANGE_BYTES", 300)
    header = ["n", "price", "label"]
    for big, arrow_throughout in ((10, True), (2**53 + 1, False)):
        path = tmp_path / f"prices-{arrow_throughout}.csv"
        lines = [f"{i},{big + i if i < 120 else i / 4},{i % 2}" for i in range(200)]
        path.write_text("n,price,label\n" + "\n".join(lines) + "\n")
        expected = pandas_chunks(path, [], 32)
        chunks = list(as_chunks(csv_pieces(path, header, header, [], 32), [], ["n", "price"]))
        assert all(chunk.numeric is not None for chunk in chunks) == arrow_throughout
        assert [len(chunk) for chunk in chunks] == [len(frame) for frame in expected]
        for chunk, frame in zip(chunks, expected):  # noqa: B905 - lengths compared above
            block = _numeric_block(frame, ["n", "price"], None)
            got = chunk.numeric if chunk.numeric is not None else _numeric_block(chunk.frame, ["n", "price"], None)
            np.testing.assert_array_equal(got.view(np.uint32), block.view(np.uint32))


def test_parquet_chunks_are_the_same_read_in_large_requests_or_page_by_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Row groups above PARQUET_PRE_BUFFER_BYTES are read page by page (bounded memory); the chunks do not change."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "groups.parquet"
    rows = 500
    table = pa.table(
        {"x": np.arange(rows) / 7, "cat": [f"c{i % 4}" for i in range(rows)], "label": np.arange(rows) % 2}
    )
    pq.write_table(table, path, row_group_size=70)  # chunks of 64 cross row groups
    columns, read = ["x", "cat", "label"], []
    for limit in (parquet_reader.PARQUET_PRE_BUFFER_BYTES, 0):
        monkeypatch.setattr(parquet_reader, "PARQUET_PRE_BUFFER_BYTES", limit)
        read.append(list(as_chunks(parquet_pieces(path, columns, ["cat"], 64), ["cat"], ["x"])))
    assert [len(chunk) for chunk in read[0]] == [len(chunk) for chunk in read[1]] == [64] * 7 + [52]
    for large, paged in zip(*read):  # noqa: B905 - lengths compared above
        np.testing.assert_array_equal(large.numeric, paged.numeric)
        pd.testing.assert_frame_equal(large.frame, paged.frame)
