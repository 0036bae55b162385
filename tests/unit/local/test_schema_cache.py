"""A local run's schema kept by what decided it: a rerun on the same bytes, values and code gets the same decision
without deciding again; any change of those decides again; a refused table is refused every time alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.definition.schema import SchemaError, sample_local
from pipeline.definition.schema_inference import infer
from pipeline.local import schema_cache

PREFIX = "s3://llpipe-local/linear-learner-pipeline"
VALUES = {"LabelColumn": "y", "PredictorType": "binary_classifier", "HashBuckets": 0, "MissingValues": "drop"}


def table(folder: Path, rows: int = 60, flip: int = -1) -> list[Path]:
    """A CSV with a No/Yes label, a number and a text column (``flip``: one row's text changed)."""
    folder.mkdir(exist_ok=True)
    lines = ["y,x,colour"]
    for row in range(rows):
        colour = "green" if row == flip else ("red" if row % 3 else "blue")
        lines.append(f"{'Yes' if row % 2 else 'No'},{row * 1.5},{colour}")
    path = folder / "part.csv"
    path.write_text("\n".join(lines) + "\n")
    return [path]


def test_a_rerun_reuses_the_decision_it_kept(tmp_path: Path) -> None:
    files = table(tmp_path / "data")
    direct = infer(sample_local(files, tmp_path / "data", 100), VALUES, set(), PREFIX)
    kept = tmp_path / "schemas"
    first = schema_cache.inferred(kept, files, tmp_path / "data", 100, VALUES, set(), PREFIX)
    assert first == direct
    (entry,) = kept.iterdir()
    again = schema_cache.inferred(kept, files, tmp_path / "data", 100, VALUES, set(), PREFIX)
    assert again == direct and list(kept.iterdir()) == [entry]


def test_other_bytes_values_or_rows_decide_again(tmp_path: Path) -> None:
    base = tmp_path / "data"
    kept = tmp_path / "schemas"
    files = table(base)
    first = schema_cache.inferred(kept, files, base, 100, VALUES, set(), PREFIX)
    table(base, flip=4)  # a third colour
    changed = schema_cache.inferred(kept, files, base, 100, VALUES, set(), PREFIX)
    assert changed == infer(sample_local(files, base, 100), VALUES, set(), PREFIX) and changed.body != first.body
    given = {**VALUES, "CategoricalColumns": ""}
    assert (
        json.loads(schema_cache.inferred(kept, files, base, 100, given, {"CategoricalColumns"}, PREFIX).body)[
            "categorical_columns"
        ]
        == []
    )
    fewer = schema_cache.inferred(kept, files, base, 3, VALUES, set(), PREFIX)
    assert fewer == infer(sample_local(files, base, 3), VALUES, set(), PREFIX)
    assert len(list(kept.iterdir())) == 4


def test_a_damaged_entry_is_decided_again(tmp_path: Path) -> None:
    base = tmp_path / "data"
    kept = tmp_path / "schemas"
    files = table(base)
    first = schema_cache.inferred(kept, files, base, 100, VALUES, set(), PREFIX)
    (entry,) = kept.iterdir()
    document = json.loads(entry.read_text())
    entry.write_text(json.dumps({**document, "body": document["body"].replace("colour", "color")}))
    assert schema_cache.inferred(kept, files, base, 100, VALUES, set(), PREFIX) == first
    entry.write_text("{")
    assert schema_cache.inferred(kept, files, base, 100, VALUES, set(), PREFIX) == first


def test_a_refused_table_keeps_nothing_and_is_refused_alike(tmp_path: Path) -> None:
    base = tmp_path / "data"
    kept = tmp_path / "schemas"
    files = table(base)
    values = {**VALUES, "LabelColumn": "label"}
    messages = []
    for _ in range(2):
        with pytest.raises(SchemaError) as refused:
            schema_cache.inferred(kept, files, base, 100, values, set(), PREFIX)
        messages.append(str(refused.value))
    assert messages[0] == messages[1] and "no label column (LabelColumn) 'label'" in messages[0]
    assert not kept.exists()


def test_the_code_digest_covers_the_deciding_packages() -> None:
    root = Path(schema_cache.__file__).resolve().parents[2]
    assert all((root / package).is_dir() for package in schema_cache.CODE_PACKAGES)
    assert len(schema_cache.code_digest()) == 64


def test_a_parquet_file_is_keyed_by_its_size_and_change_time_not_read_whole(tmp_path: Path) -> None:
    """A Parquet file can hold gigabytes: its key is its size and change time (as the data version's), so a rewrite
    decides again and the key never reads the file (a file the key read would fail here: it is not Parquet)."""
    import os

    import pandas as pd

    base = tmp_path / "data"
    base.mkdir()
    path = base / "part.parquet"
    frame = pd.DataFrame({"y": ["No", "Yes"] * 30, "x": [float(row) for row in range(60)], "colour": ["red"] * 60})
    frame.to_parquet(path, index=False)
    kept = tmp_path / "schemas"
    first = schema_cache.inferred(kept, [path], base, 100, VALUES, set(), PREFIX)
    assert first == infer(sample_local([path], base, 100), VALUES, set(), PREFIX)
    frame.assign(colour=["red", "blue", "green"] * 20).to_parquet(path, index=False)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000_000))
    rewritten = schema_cache.inferred(kept, [path], base, 100, VALUES, set(), PREFIX)
    assert rewritten.body != first.body and len(list(kept.iterdir())) == 2
    stat = path.stat()
    path.write_bytes(b"x" * stat.st_size)  # the same size and change time, other bytes: the key does not read them
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    key = schema_cache.decision_key([path], base, 100, VALUES, set(), PREFIX)
    assert key is not None and (kept / f"{key}.json").is_file()
