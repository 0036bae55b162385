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
