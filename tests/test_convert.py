"""``llpipe convert`` on real CSV, gzipped CSV and Parquet files, read back with the RecordIO codec."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse

from containerlib import recordio
from pipeline import convert as convert_module
from pipeline.cli import main


def table(rows: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.standard_normal((rows, 4)).round(3), columns=["f1", "f2", "f3", "f4"])
    frame.loc[rng.random(rows) < 0.5, "f2"] = 0.0
    frame.insert(2, "target", rng.integers(0, 2, rows))
    return frame


def expected(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    return (
        frame.drop(columns="target").to_numpy(dtype=np.float32),
        frame["target"].to_numpy(dtype=np.float32),
    )


def read_shards(folder: Path) -> list[tuple[np.ndarray, np.ndarray]]:
    return [recordio.read_file(path) for path in sorted(folder.glob("part-*.pbr"))]


def convert(*args: str | Path) -> int:
    return main(["convert", *[str(a) for a in args]])


def test_csv_to_round_robin_shards(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    frame = table(23)
    frame.to_csv(tmp_path / "data.csv", index=False)
    assert convert(tmp_path / "data.csv", "--label-column", "target", "--output", tmp_path / "out", "--shards", 3) == 0
    X, y = expected(frame)
    shards = read_shards(tmp_path / "out")
    assert len(shards) == 3
    for shard, (X_shard, y_shard) in enumerate(shards):
        assert np.array_equal(X_shard, X[shard::3]) and np.array_equal(y_shard, y[shard::3])
    assert "converted 23 rows x 4 features to 3 dense" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [f"part-0000{i}.pbr" for i in range(3)]


def test_mixed_csv_gzip_parquet_in_many_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(convert_module, "CHUNK_ROWS", 7)  # several chunks per file: round robin across chunks
    monkeypatch.setattr(convert_module, "PROGRESS_MIN_BYTES", 0)  # and the progress bar on
    parts = [table(30, seed) for seed in range(3)]
    parts[0].to_csv(tmp_path / "a.csv", index=False)
    with gzip.open(tmp_path / "b.csv.gz", "wt") as handle:
        parts[1].to_csv(handle, index=False)
    parts[2].to_parquet(tmp_path / "c.parquet", index=False)
    inputs = [tmp_path / "a.csv", tmp_path / "b.csv.gz", tmp_path / "c.parquet"]
    assert convert(*inputs, "--label-column", "target", "--output", tmp_path / "out", "--shards", 2) == 0
    X, y = expected(pd.concat(parts, ignore_index=True))
    for shard, (X_shard, y_shard) in enumerate(read_shards(tmp_path / "out")):
        assert np.array_equal(X_shard, X[shard::2]) and np.array_equal(y_shard, y[shard::2])


def test_sparse_records_from_a_folder(tmp_path: Path) -> None:
    frame = table(12)
    (tmp_path / "in" / "nested").mkdir(parents=True)
    frame.iloc[:5].to_csv(tmp_path / "in" / "1.csv", index=False)
    frame.iloc[5:].to_csv(tmp_path / "in" / "nested" / "2.csv", index=False)
    (tmp_path / "in" / "_SUCCESS.csv").write_text("not,data\n")  # hidden/marker files are not input
    assert convert(tmp_path / "in", "--label-column", "target", "--output", tmp_path / "out", "--sparse") == 0
    [(X_read, y_read)] = read_shards(tmp_path / "out")
    X, y = expected(frame)
    assert scipy.sparse.issparse(X_read)
    assert np.array_equal(X_read.toarray(), X) and X_read.nnz == np.count_nonzero(X)
    assert np.array_equal(y_read, y)


def error_of(capsys: pytest.CaptureFixture[str], *args: str | Path) -> str:
    assert convert(*args) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("llpipe convert: ")
    return captured.err


@pytest.mark.parametrize(
    ("cell", "message"),
    [("abc", "'abc' is not a number"), ("", "is empty or NaN"), ("nan", "is empty or NaN"), ("1e39", "float32")],
)
def test_bad_values_name_file_row_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cell: str, message: str
) -> None:
    good = tmp_path / "good.csv"
    table(4).to_csv(good, index=False)
    bad = tmp_path / "bad.csv"
    bad.write_text(f"f1,f2,target,f3,f4\n1,2,0,3,4\n1,2,1,{cell},4\n")
    err = error_of(capsys, good, bad, "--label-column", "target", "--output", tmp_path / "out", "--shards", 2)
    assert f"{bad}: row 2, column 'f3'" in err and message in err
    assert not (tmp_path / "out").exists()  # no partial output, not even the folder it created


def test_bad_label_value_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "data.parquet"
    pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": ["1", "0", "yes"]}).to_parquet(path)
    err = error_of(capsys, path, "--label-column", "y", "--output", tmp_path / "out")
    assert f"{path}: row 3, column 'y': 'yes' is not a number" in err


def test_missing_label_column_and_mismatched_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = tmp_path / "first.csv"
    table(3).to_csv(first, index=False)
    err = error_of(capsys, first, "--label-column", "label", "--output", tmp_path / "out")
    assert f"{first}: no label column 'label'" in err
    other = tmp_path / "other.csv"
    table(3).drop(columns="f4").to_csv(other, index=False)
    err = error_of(capsys, first, other, "--label-column", "target", "--output", tmp_path / "out")
    assert f"{other}: feature columns differ" in err
    assert not (tmp_path / "out").exists()


def test_shards_rows_and_existing_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data.csv"
    table(3).to_csv(data, index=False)
    out = tmp_path / "out"
    err = error_of(capsys, data, "--label-column", "target", "--output", out, "--shards", 4)
    assert "--shards 4 is more than the 3 input rows" in err
    err = error_of(capsys, tmp_path / "missing.csv", "--label-column", "target", "--output", out)
    assert "missing.csv: no such file or folder" in err
    assert convert(data, "--label-column", "target", "--output", out, "--shards", 3) == 0
    capsys.readouterr()
    err = error_of(capsys, data, "--label-column", "target", "--output", out)
    assert "already holds shards" in err and "--overwrite" in err
    assert convert(data, "--label-column", "target", "--output", out, "--overwrite") == 0
    assert [p.name for p in out.iterdir()] == ["part-00000.pbr"]  # stale shards of the earlier run removed
    X, y = expected(table(3))
    [(X_read, y_read)] = read_shards(out)
    assert np.array_equal(X_read, X) and np.array_equal(y_read, y)
