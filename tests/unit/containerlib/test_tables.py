"""The container library's table reading: one rule of which files are data, used by every reader of tables."""

from __future__ import annotations

import gzip
from pathlib import Path

import boto3
import pandas as pd
import pytest
from botocore.stub import Stubber

from containerlib.errors import TableError
from containerlib.hosts import Host
from containerlib.tables.files import data_files, is_data_file, path_below_prefix
from containerlib.tables.header import read_header
from containerlib.tables.scan import count_rows
from pipeline.definition.schema import _list_data_objects
from pipeline.local.data import data_files as run_data_files
from preprocessing.inputs import list_input_files

TREE = {
    "a.csv": "data",
    "b.CSV.GZ": "data",
    "c.parquet": "data",
    "d.pq": "data",
    "sub/e.csv": "data",
    "notes.txt": "not data: the suffix",
    "_SUCCESS": "a marker",
    ".hidden.csv": "hidden",
    "_temporary/0/part.csv": "Spark's work folder",
    ".git/f.csv": "a hidden folder",
    "sub/_g.csv": "hidden below a folder",
}
DATA = sorted(name for name, kind in TREE.items() if kind == "data")


def write_tree(root: Path) -> None:
    for name in TREE:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"")


def test_the_rule_skips_hidden_and_underscore_files_and_folders(tmp_path: Path) -> None:
    write_tree(tmp_path)
    assert [path.relative_to(tmp_path).as_posix() for path in data_files(tmp_path)] == DATA
    assert [name for name in TREE if is_data_file(name)] == [name for name in TREE if TREE[name] == "data"]


def test_preprocess_a_local_run_and_schema_sampling_take_the_same_files(tmp_path: Path) -> None:
    """Preprocess's input listing, `llpipe run --data` and the client's S3 listing agree, file for file."""
    write_tree(tmp_path)
    preprocess = list_input_files(tmp_path, Host("algo-1", 0, ("algo-1",)))
    _, run = run_data_files(tmp_path)
    client = boto3.client("s3", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stubber:
        contents = [{"Key": f"in/{name}", "Size": 1} for name in sorted(TREE)]
        stubber.add_response(
            "list_objects_v2", {"Contents": contents, "IsTruncated": False}, {"Bucket": "b", "Prefix": "in/"}
        )
        sampled = _list_data_objects(client, "b", "in/", len(TREE))
    assert [path.relative_to(tmp_path).as_posix() for path in preprocess] == DATA
    assert [path.relative_to(tmp_path).as_posix() for path in run] == DATA
    assert sorted(key.removeprefix("in/") for key, _ in sampled) == DATA


@pytest.mark.parametrize(
    ("prefix", "key", "below"),
    [
        ("in/", "in/a/b.csv", "a/b.csv"),
        ("in", "in/a/b.csv", "a/b.csv"),
        ("in/da", "in/data.csv", "data.csv"),  # the prefix ends inside a name: the whole name is judged
        ("t", "t.parquet", "t.parquet"),
        ("_in/", "_in/a.csv", "a.csv"),  # what the prefix names is the user's choice, not judged
        ("in/a.csv", "in/a.csv", "a.csv"),
        ("", "x/_y.csv", "x/_y.csv"),
    ],
)
def test_an_s3_object_is_judged_by_its_path_below_the_prefix(prefix: str, key: str, below: str) -> None:
    assert path_below_prefix(prefix, key) == below


def test_rows_are_counted_alike_in_csv_gzip_and_parquet(tmp_path: Path) -> None:
    frame = pd.DataFrame({"x": range(7), "label": [0, 1] * 3 + [0]})
    frame.to_csv(tmp_path / "a.csv", index=False)
    (tmp_path / "b.csv.gz").write_bytes(gzip.compress((tmp_path / "a.csv").read_bytes().rstrip(b"\n")))  # no final \n
    frame.to_parquet(tmp_path / "c.parquet", index=False)
    assert [count_rows(tmp_path / name) for name in ("a.csv", "b.csv.gz", "c.parquet")] == [7, 7, 7]
    (tmp_path / "d.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(TableError, match=r"d\.parquet: not a readable Parquet file"):
        count_rows(tmp_path / "d.parquet")


def test_a_row_cut_short_is_named_with_the_columns_it_lacks(tmp_path: Path) -> None:
    """Before: a row with fewer fields than the header passed the scan; pandas filled the missing fields, so the
    run failed on a misleading "column 'label' is empty" or "'class_0' is not a number" in another column, or, with
    MissingValues=zero, trained on the row zero-filled without a word."""
    (tmp_path / "short.csv").write_text("a,b,c,label\n1,2,3,0\n\n4,5\n6,7,8,1\n")
    with pytest.raises(
        TableError,
        match=r"short\.csv: data row 3 has 2 field\(s\) but the header names 4 "
        r"\(no value for 'c', 'label'; a row cut short\?\)",
    ):
        count_rows(tmp_path / "short.csv")
    (tmp_path / "blank.csv").write_text("a,b,c,label\n1,2,3,0\n\n4,,,1\n")  # blank lines and empty fields are fine
    assert count_rows(tmp_path / "blank.csv") == 3
    quoted = "a,label\n" + "".join(f'"{"x" * 5000}\n{i}",1\n' for i in range(900))  # the head ends mid-field
    (tmp_path / "long.csv").write_text(quoted)
    assert count_rows(tmp_path / "long.csv") == 1800  # lines after the header, as counted before


def test_a_file_named_gz_that_is_not_gzip_is_said_to_be_so_not_damaged(tmp_path: Path) -> None:
    (tmp_path / "plain.csv.gz").write_text("label,a,b\n1,2,3\n")
    (tmp_path / "table.csv.gz").write_bytes(b"PAR1 a parquet body")
    (tmp_path / "cut.csv.gz").write_bytes(gzip.compress(b"label,a\n1,2\n" * 100)[:30])  # gzip, truncated
    plain = r"plain\.csv\.gz: named \.gz but not gzip-compressed: its first bytes 'label,a,b' look like text \(a plain"
    plain += r" CSV\?\); rename it to \.csv, or compress it"
    for read in (count_rows, read_header):  # the preflight's row count and every job's header read say the same
        with pytest.raises(TableError, match=plain):
            read(tmp_path / "plain.csv.gz")
        with pytest.raises(
            TableError, match=r"table\.csv\.gz: named \.gz but not gzip-compressed: it is a Parquet file"
        ):
            read(tmp_path / "table.csv.gz")
    with pytest.raises(TableError, match=r"cut\.csv\.gz: the gzip data is truncated or damaged"):
        count_rows(tmp_path / "cut.csv.gz")


def test_a_header_is_checked_the_same_for_every_reader(tmp_path: Path) -> None:
    (tmp_path / "twice.csv").write_text("a,b,a\n1,2,3\n")
    with pytest.raises(TableError, match=r"shown\.csv: duplicate column name\(s\) \['a'\] in the header"):
        read_header(tmp_path / "twice.csv", "shown.csv")
    (tmp_path / "unnamed.csv").write_text(",b\n1,2\n")
    with pytest.raises(TableError, match=r"header column\(s\) \[1\] \(counted from 1\) have no name"):
        read_header(tmp_path / "unnamed.csv")
