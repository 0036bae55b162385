"""A user-given SchemaUrl is read before anything runs, as Preprocess will read it (issue 42): a missing object, a
prefix of several schemas, text that is not JSON, a foreign document, or a schema decided for another label, predictor
type or table is refused naming the parameter, what is wrong and the way out; nothing is staged or recorded. Before,
the run staged, sized and started, and Preprocess failed with the reason in its log."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline import cli

GOOD = {"format": "llpipe-schema/1", "label_column": "label", "predictor_type": "binary_classifier",
        "feature_columns": ["a", "b"], "categorical_columns": []}  # fmt: skip
PREFIX = "s3://llpipe-local/my-schemas"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"a": rng.normal(size=60), "b": rng.normal(size=60)})
    frame["label"] = (frame["a"] > 0).astype(int)
    frame.to_csv(tmp_path / "table.csv", index=False)
    return tmp_path / "table.csv"


def _put(workdir: Path, key: str, text: str) -> None:
    path = workdir / "s3" / "llpipe-local" / "my-schemas" / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.mark.parametrize(
    ("objects", "url", "said"),
    [
        ({}, f"{PREFIX}/none.json", "no object there in the local S3 folder"),
        ({"a/1.json": json.dumps(GOOD), "a/2.json": json.dumps(GOOD)}, f"{PREFIX}/a", "holds 2 .json objects"),
        ({"s.json": '{"format": "llpipe-schema/1", '}, f"{PREFIX}/s.json", "not a readable JSON file"),
        ({"s.json": json.dumps({"columns": ["a"]})}, f"{PREFIX}/s.json", "not an llpipe schema"),
        ({"s.json": json.dumps({**GOOD, "times": {"a": "epoch"}})}, f"{PREFIX}/s.json", "times must map"),
        ({"s.json": json.dumps({**GOOD, "label_column": "y"})}, f"{PREFIX}/s.json", "label column 'y'"),
        ({"s.json": json.dumps({**GOOD, "predictor_type": "regressor"})}, f"{PREFIX}/s.json", "decided for regressor"),
        ({"s.json": json.dumps({**GOOD, "feature_columns": ["a", "c"]})}, f"{PREFIX}/s.json", "['c'] are not columns"),
    ],
)
def test_a_schema_the_run_cannot_use_is_refused_before_anything_runs(
    tmp_path: Path, data: Path, objects: dict[str, str], url: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    workdir = tmp_path / "work"
    for key, text in objects.items():
        _put(workdir, key, text)
    argv = ["run", "--data", str(data), "--label-column", "label", "--predictor-type", "binary_classifier",
            "--workdir", str(workdir), "--quiet", "--param", f"SchemaUrl={url}"]  # fmt: skip
    code = cli.main(argv)
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2, err
    assert f"SchemaUrl={url}" in err and said in err and "leave SchemaUrl unset" in err, err
    assert "Traceback" not in err
    assert not (workdir / "executions").exists() or list((workdir / "executions").iterdir()) == []
    assert not (workdir / "s3" / "llpipe-local" / "linear-learner-pipeline").exists(), "nothing staged"


def test_a_schema_that_fits_passes_the_check(tmp_path: Path, data: Path) -> None:
    from pipeline.local import preflight
    from pipeline.local.s3 import LocalS3

    s3 = LocalS3(tmp_path / "work" / "s3")
    _put(tmp_path / "work", "prefix/one.json", json.dumps(GOOD))
    values = {"LabelColumn": "label", "PredictorType": "binary_classifier"}
    for url in (f"{PREFIX}/prefix/one.json", f"{PREFIX}/prefix"):  # the object, or a prefix holding only it
        preflight.check_schema_url(s3, url, values, [data])
