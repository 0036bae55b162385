"""Parquet files as pandas and other writers leave them: a pandas index stored as a column is not data (it became
a feature and a column every request had to send); the schema's sample is drawn from every row group (a first row
group of one class decided the label values); float16 columns, which the processing image cannot read, are refused
before the run; and what a data folder holds but is not read (``.csv.bz2``, symlinked folders) is named."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from containerlib.errors import TableError
from containerlib.tables.files import unread_entries
from containerlib.tables.header import read_header
from containerlib.tables.sample import parquet_sample
from containerlib.tables.scan import count_rows
from pipeline.definition.schema import decide, sample_local
from pipeline.local.data import user_data
from preprocessing.preprocess import main

VALUES = {"LabelColumn": "y", "PredictorType": "binary_classifier", "HashBuckets": 16, "MissingValues": "error"}


def table(rows: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=rows)
    return pd.DataFrame({"x": x, "w": rng.normal(size=rows), "y": np.where(x > 0, "yes", "no")})


@pytest.mark.parametrize(
    "index",
    [
        pd.Index(np.r_[0:150, 170:320]),  # a filtered frame: __index_level_0__
        pd.Index([f"r{i}" for i in range(300)], name="row_id"),  # a named index: a column named row_id
        pd.MultiIndex.from_arrays([range(300), [i % 3 for i in range(300)]], names=["a", None]),
        pd.DatetimeIndex(pd.date_range("2020-01-01", periods=300, freq="h"), name="when"),
    ],
    ids=["filtered", "named", "multi", "datetime"],
)
def test_a_pandas_index_stored_in_parquet_is_not_a_column(tmp_path: Path, index: pd.Index) -> None:
    frame = table(300).set_index(index)
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    assert len(pq.ParquetFile(path).schema_arrow.names) > 3, "pandas stored the index as column(s)"
    assert read_header(path) == ["x", "w", "y"]
    header, sample = parquet_sample(str(path), "t.parquet", 50)
    assert header == ["x", "w", "y"] and list(sample.columns) == ["x", "w", "y"]
    decision = decide(sample_local([path], tmp_path), VALUES, {"LabelColumn"})
    assert decision.document["feature_columns"] == ["x", "w"]


def test_preprocess_without_a_schema_leaves_the_index_out(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    frame = table(400).set_index(pd.Index([f"r{i}" for i in range(400)], name="key"))
    frame.to_parquet(tmp_path / "in" / "t.parquet")
    code = main(["--input-dir", str(tmp_path / "in"), "--output-dir", str(tmp_path / "out"), "--label-column", "y",
                 "--predictor-type", "binary_classifier", "--label-values", "no,yes"])  # fmt: skip
    assert code == 0
    summary = tmp_path / "out" / "summary" / "summary.json"
    assert json.loads(summary.read_text())["feature_names"] == ["w", "x"]


@pytest.mark.parametrize(("groups", "rows"), [(2, 100), (5, 40), (12, 1000)])
def test_the_sample_holds_rows_of_every_row_group(tmp_path: Path, groups: int, rows: int) -> None:
    """A file written in label order: its first row group is all one class."""
    frame = table(120 * groups).sort_values("y", kind="stable").reset_index(drop=True)
    path = tmp_path / "sorted.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=120)
    assert pq.ParquetFile(path).num_row_groups == groups
    _, sample = parquet_sample(str(path), "sorted.parquet", rows)
    assert len(sample) == min(rows, len(frame)) and set(sample["y"]) == {"no", "yes"}
    decision = decide(sample_local([path], tmp_path, rows), VALUES, {"LabelColumn"})
    assert decision.document["label_values"] == ["no", "yes"]


@pytest.mark.parametrize("columns", [["x"], ["x", "w"]])
def test_float16_columns_are_refused_before_the_run_naming_them(tmp_path: Path, columns: list[str]) -> None:
    frame = table(50).astype({column: "float16" for column in columns})
    path = tmp_path / "half.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
    named = ", ".join(repr(column) for column in columns)
    for read in (lambda: count_rows(path), lambda: parquet_sample(str(path), "half.parquet", 10)):
        with pytest.raises(TableError, match=f"column\\(s\\) {named} hold float16 values.*write them as float32"):
            read()


def test_tables_compressed_otherwise_and_symlinked_folders_are_named_as_skipped(tmp_path: Path) -> None:
    data, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    (data / "sub").mkdir(parents=True)
    elsewhere.mkdir()
    table(30).to_csv(data / "read.csv", index=False)
    table(30).to_csv(elsewhere / "linked.csv", index=False)
    for name in ("sub/a.csv.bz2", "b.CSV.ZIP", "c.parquet.gz", "d.csv.xz", ".hidden.csv.bz2", "notes.txt"):
        (data / name).write_bytes(b"x")
    (data / "more").symlink_to(elsewhere, target_is_directory=True)
    skipped = {path.relative_to(data).as_posix(): why for path, why in unread_entries(data)}
    assert set(skipped) == {"sub/a.csv.bz2", "b.CSV.ZIP", "c.parquet.gz", "d.csv.xz", "more"}
    assert "compressed as .bz2, which is not read" in skipped["sub/a.csv.bz2"]
    assert "symbolic link to a folder" in skipped["more"]
    source = user_data(data, "y", "binary_classifier")
    assert source.files == [data / "read.csv"]
    assert len(source.skipped) == 5 and any(f"{data / 'd.csv.xz'} is skipped" in line for line in source.skipped)


def test_an_s3_prefix_s_tables_compressed_otherwise_are_named_by_the_schema_s_sample() -> None:
    import io

    import boto3
    from botocore.response import StreamingBody
    from botocore.stub import Stubber

    from pipeline.core.errors import SchemaError
    from pipeline.definition.schema import sample_s3

    data = table(20).to_csv(index=False).encode()
    client = boto3.client("s3", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    contents = [{"Key": f"in/{name}", "Size": 10} for name in ("a.csv.bz2", "_b.csv.bz2", "notes.md", "sub/c.pq.zst")]
    with Stubber(client) as stubber:
        stubber.add_response("list_objects_v2", {"Contents": [*contents, {"Key": "in/d.csv", "Size": len(data)}]},
                             {"Bucket": "b", "Prefix": "in/"})  # fmt: skip
        stubber.add_response("get_object", {"Body": StreamingBody(io.BytesIO(data), len(data))},
                             {"Bucket": "b", "Key": "in/d.csv", "Range": f"bytes=0-{len(data) - 1}"})  # fmt: skip
        sample = sample_s3(client, "s3://b/in/", rows=10)
        stubber.add_response("list_objects_v2", {"Contents": contents}, {"Bucket": "b", "Prefix": "in/"})
        with pytest.raises(SchemaError, match=r"no .* objects under s3://b/in/ .*; s3://b/in/a\.csv\.bz2 is skipped"):
            sample_s3(client, "s3://b/in/", rows=10)
        stubber.assert_no_pending_responses()
    why = "which is not read; only .csv.gz is: recompress it"
    assert sample.skipped == [
        f"s3://b/in/a.csv.bz2 is skipped: a table compressed as .bz2, {why}",
        f"s3://b/in/sub/c.pq.zst is skipped: a table compressed as .zst, {why}",
    ]
    decision = decide(sample, VALUES, {"LabelColumn"})
    assert [note for note in decision.notes if "is skipped" in note] == [f"warning: {line}" for line in sample.skipped]


@pytest.mark.parametrize(
    ("budget_groups", "expected"),
    [(None, list(range(10))), (100, list(range(10))), (4, [0, 3, 6, 9]), (2, [0, 9]), (1, [0]), (0, [0])],
)
def test_row_groups_beyond_the_byte_budget_are_sampled_spread_from_first_to_last(
    tmp_path: Path, budget_groups: int | None, expected: list[int]
) -> None:
    from containerlib.tables.sample import sampled_row_groups

    path = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pandas(table(1000), preserve_index=False), path, row_group_size=100)
    metadata = pq.ParquetFile(path).metadata
    sizes = [sum(metadata.row_group(g).column(c).total_compressed_size for c in range(3)) for g in range(10)]
    budget = None if budget_groups is None else budget_groups * max(sizes) + min(sizes) // 2
    assert sampled_row_groups(metadata, budget) == expected
