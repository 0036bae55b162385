"""A row's split from its raw cells (issue 40): the text of each CSV cell as written, Parquet values in a canonical
form, whatever the chunking, the reader (Arrow or pandas), the order of the columns in the file, the host, or the
parameters that say how cells are encoded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from test_preprocess_pinned import CASES, write_inputs

from containerlib.tables import csv_reader
from containerlib.tables.header import read_header
from containerlib.tables.raw import canonical, hashable, raw_pieces
from preprocessing.hashing import assign_splits, raw_row_hashes
from preprocessing.preprocess import main


def hashes(path: Path, chunk_rows: int, seed: int = 3) -> np.ndarray:
    pieces = list(raw_pieces(path, read_header(path), chunk_rows))
    assert all(piece.num_rows == chunk_rows for piece in pieces[:-1])
    return np.concatenate([raw_row_hashes(piece, seed) for piece in pieces])


ROWS = ["a,b,label", "1,x,0", "1.0,x,0", "NA,x,1", ",x,1", '"1",x,0', "1, x,0", '2,"y\nz",1', "2,y,1"]


def test_each_cell_counts_as_written(tmp_path: Path) -> None:
    """1 and 1.0, NA and an empty cell, ' x' and 'x' are different raw rows; quotes are not part of the text."""
    path = tmp_path / "t.csv"
    path.write_text("\n".join(ROWS) + "\n")
    (piece,) = raw_pieces(path, read_header(path), 100)
    assert piece.column("a").to_pylist() == ["1", "1.0", "NA", "", "1", "1", "2", "2"]
    assert piece.column("b").to_pylist() == ["x", "x", "x", "x", "x", " x", "y\nz", "y"]
    found = raw_row_hashes(piece, 0)
    assert found[0] == found[4]  # "1" quoted is the text 1
    assert len(set(found.tolist())) == 7


@pytest.mark.parametrize("chunk_rows", [1, 3, 7, 1000])
def test_the_hashes_do_not_depend_on_the_chunks(tmp_path: Path, chunk_rows: int) -> None:
    path = tmp_path / "t.csv"
    frame = pd.DataFrame({"x": np.arange(50) / 7, "t": [f"v{i % 6}" * (i % 4) for i in range(50)], "y": 1})
    frame.to_csv(path, index=False)
    assert (hashes(path, chunk_rows) == hashes(path, 50)).all()


def test_the_order_of_the_columns_in_the_file_does_not_matter_but_their_names_do(tmp_path: Path) -> None:
    frame = pd.DataFrame({"x": [1.5, 2.5, 3.0], "t": ["a", "bb", "a"], "y": [0, 1, 1]})
    frame.to_csv(tmp_path / "one.csv", index=False)
    frame[["y", "t", "x"]].to_csv(tmp_path / "two.csv", index=False)
    frame.rename(columns={"t": "u"}).to_csv(tmp_path / "three.csv", index=False)
    assert (hashes(tmp_path / "one.csv", 2) == hashes(tmp_path / "two.csv", 2)).all()
    assert not set(hashes(tmp_path / "one.csv", 2).tolist()) & set(hashes(tmp_path / "three.csv", 2).tolist())


def test_pandas_taking_over_from_arrow_reads_the_same_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A quoted line break cut by a range: Arrow cannot read that range, pandas reads the rest (same text)."""
    path = tmp_path / "t.csv"
    rows = [f'{i},"line {i}\nbreak, {i}",{i % 2}' if i % 9 == 0 else f"{i},plain {i},{i % 2}" for i in range(200)]
    path.write_text("n,text,label\n" + "\n".join(rows) + "\n")
    whole = hashes(path, 40)
    monkeypatch.setattr(csv_reader, "ARROW_RANGE_BYTES", 300)
    (piece, *_) = raw_pieces(path, read_header(path), 200)
    assert piece.column("text").to_pylist() == pd.read_csv(path, dtype=str)["text"].tolist()
    assert (hashes(path, 40) == whole).all()


def test_parquet_values_have_one_canonical_form_in_every_batch(tmp_path: Path) -> None:
    """Floats by their float64 bytes (no formatting that an Arrow version could change), nulls apart from text."""
    frame = pd.DataFrame(
        {
            "f": [0.1, 1e-20, np.nan, 5.0, -0.0, 2.5],
            "i": pd.array([1, None, 3, 4, 5, 6], dtype="Int64"),
            "s": ["a", None, "", "None", "nan", "a"],
            "b": [True, False, True, None, False, True],
            "t": [
                pd.Timestamp(2020, 1, 1),
                pd.Timestamp(2021, 5, 6, 7, 8, 9),
                None,
                pd.Timestamp(1999, 12, 31),
                pd.Timestamp(2020, 1, 1),
                pd.Timestamp(2000, 2, 29),
            ],  # fmt: skip
        }
    )
    path = tmp_path / "t.parquet"
    frame.to_parquet(path, index=False)
    (piece,) = raw_pieces(path, read_header(path), 100)
    assert piece.column("f").to_pylist()[0] == np.float64(0.1).tobytes()
    assert piece.column("s").to_pylist()[:3] == ["a", None, ""]
    assert (hashes(path, 2) == hashes(path, 100)).all()
    assert len(set(hashes(path, 100).tolist())) == len(frame)


_MASK = (1 << 64) - 1


def _finalised(h: int) -> int:
    h ^= h >> 30
    h = (h * 0xBF58476D1CE4E5B9) & _MASK
    h ^= h >> 27
    h = (h * 0x94D049BB133111EB) & _MASK
    return h ^ (h >> 31)


def stored_cells(column: Any) -> list[tuple[bytes, bool]]:
    """Each cell of an Arrow text or binary column as its buffers hold it: its bytes (a null's too: a canonical
    float column's nulls keep 8 bytes) and whether it is null."""
    cells = []
    for chunk in column.chunks if isinstance(column, pa.ChunkedArray) else [column]:
        _, offsets_buffer, data_buffer = chunk.buffers()
        offsets = np.frombuffer(offsets_buffer, dtype="<i4", count=len(chunk) + 1, offset=4 * chunk.offset).tolist()
        data = data_buffer.to_pybytes() if data_buffer is not None else b""
        cells += [(data[offsets[i] : offsets[i + 1]], not chunk[i].is_valid) for i in range(len(chunk))]
    return cells


def reference_hashes(table: Any, seed: int) -> list[int]:
    """The raw-row hash as its docstring defines it, one row and one cell at a time in plain Python: each cell's
    bytes 8 at a time (little-endian, zero-padded), then its length (a null's: 2**63) xor its column name's hash."""
    from containerlib.stable_hash import stable_hash64

    columns = {name: stored_cells(table.column(name)) for name in table.column_names}
    found = []
    for row in range(table.num_rows):
        h = _finalised(seed & _MASK)
        for name in sorted(columns):
            data, null = columns[name][row]
            for at in range(0, len(data), 8):
                h = (h ^ int.from_bytes(data[at : at + 8].ljust(8, b"\0"), "little")) * 0xBF58476D1CE4E5B9 & _MASK
                h ^= h >> 29
            mark = (1 << 63 if null else len(data)) ^ stable_hash64(name)
            h = (h ^ mark) * 0x94D049BB133111EB & _MASK
            h ^= h >> 29
        found.append(_finalised(h))
    return found


@pytest.mark.parametrize("seed", [0, 7, -3])
def test_the_hash_is_its_definition_whatever_the_columns_layout(seed: int) -> None:
    """Every way a column reaches the hash (fixed 8-byte cells read in place, 8-byte cells with nulls, text of any
    length or of 8 bytes each, several chunks, a slice of a batch) hashes as the definition does, cell by cell."""
    floats = [0.1, -0.0, float("nan"), 1e300, 5.0, 2.5, -7.25, 3.0, 1e-20]
    table = pa.table(
        {
            "f": canonical(pa.array(floats)),  # a Parquet float column's canonical form: fixed 8-byte cells
            "g": canonical(pa.array([None if index % 4 == 1 else value for index, value in enumerate(floats)])),
            "h": pa.chunked_array(
                [
                    pa.array([b"abcdefgh", None, b"12345678", b"ABCDEFGH"], pa.binary()),
                    pa.array([None, b"zzzzzzzz", b"00000000", b"-1.5e-07", b"qwertyui"], pa.binary()),
                ]
            ),
            "t": ["", "a", "twelve chars", "exactly8", None, "sixteen chars!!!", "é", "x" * 17, "0.123456"],
            "u": [
                "0.123456",
                "1.234567",
                "exactly8",
                "abcdefgh",
                "ABCDEFGH",
                "        ",
                "-1.5e-07",
                "12345678",
                "q" * 8,
            ],
        }
    )
    assert table.column("f").to_pylist() == [np.float64(value).tobytes() for value in floats]
    assert table.column("g").null_count == 2
    assert raw_row_hashes(table, seed).tolist() == reference_hashes(table, seed)
    window = table.slice(2, 5)  # offsets that start past 0, in every kind of column
    assert raw_row_hashes(window, seed).tolist() == reference_hashes(window, seed)


@pytest.mark.parametrize("seed", [0, -3])
def test_float_columns_as_read_hash_as_their_canonical_form(seed: int) -> None:
    """The job hands the hash a Parquet file's float columns as read (no 8-byte copy of each): float32 and float64,
    with NaN, -0.0 and nulls, in several chunks or sliced, they hash as their canonical cells do."""
    values = [0.1, -0.0, float("nan"), None, 1e30, 2.5, None, -7.25, 3.0e-20]
    read = pa.table(
        {
            "a": pa.array(values, pa.float32()),
            "b": pa.chunked_array([pa.array(values[:4], pa.float64()), pa.array(values[4:], pa.float64())]),
            "c": pa.array([value if value is not None else 1.0 for value in values], pa.float32()),
            "s": ["x", None, "", "yy", "x", "z", "w", "v", "u"],
        }
    )
    as_hashed = pa.table({name: hashable(read.column(name)) for name in read.column_names})
    as_canonical = pa.table({name: canonical(read.column(name)) for name in read.column_names})
    assert [as_hashed.column(name).type for name in "abc"] == [pa.float32(), pa.float64(), pa.float32()]
    for rows in (slice(0, 9), slice(3, 8)):
        hashed, written = as_hashed[rows], as_canonical[rows]
        assert raw_row_hashes(hashed, seed).tolist() == reference_hashes(written, seed)
        assert raw_row_hashes(written, seed).tolist() == reference_hashes(written, seed)


def test_the_split_fractions_are_kept_over_distinct_rows(tmp_path: Path) -> None:
    """Over 20,000 distinct raw rows each split's share is its fraction within four standard deviations."""
    path = tmp_path / "t.csv"
    pd.DataFrame({"x": np.arange(20_000), "t": "same", "y": 0}).to_csv(path, index=False)
    codes = assign_splits(hashes(path, 5000), (0.7, 0.15, 0.15))
    for code, fraction in enumerate((0.7, 0.15, 0.15)):
        share = float(np.mean(codes == code))
        assert abs(share - fraction) < 4 * np.sqrt(fraction * (1 - fraction) / len(codes))


def test_identical_raw_rows_share_a_split(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    pd.DataFrame({"x": np.arange(300) % 40, "y": np.arange(300) % 40 % 2}).to_csv(path, index=False)
    codes = assign_splits(hashes(path, 64), (0.5, 0.25, 0.25))
    for value in range(40):
        assert len(set(codes[np.arange(300) % 40 == value].tolist())) == 1


def test_ids(out: Path) -> set[str]:
    return {line for path in (out / "summary").glob("*.ids.jsonl") for line in path.read_text().splitlines()}


test_ids.__test__ = False  # type: ignore[attr-defined]


def run(root: Path, *arguments: str) -> set[str]:
    """Preprocess on the pinned inputs (CSV, gzip CSV and Parquet); the test split's row ids."""
    if not (root.parent / "in").exists():
        write_inputs(root.parent / "in")
    code = main(
        ["--input-dir", str(root.parent / "in"), "--output-dir", str(root), "--resource-config",
         str(root / "absent.json"), "--chunk-rows", "300", "--seed", "5", "--label-column", "target",
         "--predictor-type", "multiclass_classifier", "--feature-columns", "x1,x2,colour,x3", *arguments]
    )  # fmt: skip
    assert code == 0
    return test_ids(root)


def test_encoding_parameters_leave_the_test_rows_as_they_were(tmp_path: Path) -> None:
    """HashBuckets, CategoricalColumns and MissingValues change the features, not the split (drop aside). The seed
    is the first that puts a row with a gap (a.csv's data row 12, x3 missing, or 14, colour missing) in the test
    split, so that drop has one to remove."""
    gaps = {json.dumps({"file": "a.csv", "row": row}) for row in (12, 14)}
    for seed in range(5, 40):
        first = run(tmp_path / f"a{seed}", "--categorical-columns", "colour", "--hash-buckets", "5", "--missing",
                    "zero", "--seed", str(seed))  # fmt: skip
        if gaps & first:
            break
    assert gaps & first
    assert len(first) > 300
    assert all(json.loads(line)["file"] in ("a.csv", "b.csv.gz", "c.parquet") for line in first)
    same = ("--missing", "zero", "--seed", str(seed))
    assert run(tmp_path / "b", "--categorical-columns", "colour", "--hash-buckets", "64", *same) == first
    assert run(tmp_path / "c", "--categorical-columns", "colour,x2", *same) == first
    dropped = run(tmp_path / "d", "--categorical-columns", "colour", "--missing", "drop", "--seed", str(seed))
    assert dropped == first - gaps
    assert run(tmp_path / "e", "--categorical-columns", "colour", "--missing", "zero", "--seed", str(seed + 1)) != first


def test_the_test_shard_and_its_ids_line_up(tmp_path: Path) -> None:
    from containerlib.recordio import read as read_recordio

    run(tmp_path / "a", "--categorical-columns", "colour", "--missing", "zero")
    (shard,) = (tmp_path / "a" / "test").glob("*.pbr")
    with shard.open("rb") as handle:
        _, labels = read_recordio(handle)
    ids = [
        json.loads(line) for line in (tmp_path / "a" / "summary" / (shard.name + ".ids.jsonl")).read_text().splitlines()
    ]
    frame = pd.concat([pd.read_csv(tmp_path / "in" / "a.csv"), pd.read_csv(tmp_path / "in" / "b.csv.gz"),
                       pd.read_parquet(tmp_path / "in" / "c.parquet")], ignore_index=True)  # fmt: skip
    offsets = {"a.csv": 0, "b.csv.gz": 1000, "c.parquet": 2000}
    expected = [frame["target"].iloc[offsets[item["file"]] + item["row"] - 1] for item in ids]
    assert labels.tolist() == expected
    assert CASES  # the same inputs as the pinned outputs
