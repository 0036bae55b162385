"""Issue 40's encoding, end to end on a crafted crash table: text columns one-hot by the vocabulary schema inference
decided, identical on two processing hosts; missing ages imputed with the train sample's median (stored in the
model data); a served row without an age scored; an unseen category answered as ``column=(other)`` and counted in the
answer, the capture and the monitor's report, or refused when the endpoint says so.

Before: 16 hash buckets merged small columns (a Yes/No column could become a constant), a missing age failed the run
(MissingValues=error) and the served model answered 400 for every row without one.
"""

from __future__ import annotations

import io
import json
import tarfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from support.settings import FAST

from containerlib.recordio.reader import read_file
from pipeline import cli, serve_local
from pipeline.local.executions import ExecutionStore
from pipeline.local.registry import LocalRegistry
from serving.model import feature_names

ROWS = 1600


def crash_table(rows: int, seed: int) -> pd.DataFrame:
    """Whether the airbag deployed alone decides the label; a Yes/No column, a speed band, ages with gaps."""
    rng = np.random.default_rng(seed)
    airbag = rng.choice(["deployed", "not deployed"], rows)
    age = pd.Series(rng.normal(45, 15, rows).round(0), dtype=object)
    age[rng.random(rows) < 0.2] = None
    return pd.DataFrame(
        {
            "airbag": airbag,
            "speed": rng.choice(["0-20", "20-40", "40-60", "60+"], rows),
            "seatbelt": rng.choice(["Yes", "No"], rows),
            "age": age,
            "dead": np.where(airbag == "not deployed", "dead", "alive"),
        }
    )


@pytest.fixture(scope="module")
def crash_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run at the defaults but FAST, two processing hosts over four files."""
    folder = tmp_path_factory.mktemp("crash")
    data = folder / "data"
    data.mkdir()
    frame = crash_table(ROWS, 0)
    for part in range(4):
        frame.iloc[part::4].to_csv(data / f"part-{part}.csv", index=False)
    workdir = folder / "work"
    params = [f"{name}={value}" for name, value in {**FAST, "ProcessingInstanceCount": "2"}.items()]
    args = ["run", "--data", str(data), "--label-column", "dead", "--predictor-type", "binary_classifier"]
    code = cli.main([*args, "--workdir", str(workdir), *(item for p in params for item in ("--param", p))])
    assert code == 0
    (record,) = ExecutionStore(workdir / "executions").list()
    assert record.status == "Succeeded", record.failure_reason
    (run,) = (workdir / "s3").glob(f"*/*/{record.id}")
    schema = json.loads((workdir / "s3" / record.parameters["SchemaUrl"].removeprefix("s3://")).read_text())
    return {"workdir": workdir, "record": record, "run": run, "schema": schema, "frame": frame, "args": args,
            "params": params}  # fmt: skip


def test_the_deciding_two_value_column_is_separated_exactly(crash_run: dict[str, Any]) -> None:
    report = json.loads(next(crash_run["run"].glob("evaluate/**/evaluation.json")).read_text())
    metrics = report["binary_classification_metrics"]
    assert metrics["auc"]["value"] == 1.0 and metrics["accuracy"]["value"] == 1.0


def test_one_hot_from_the_schema_identical_on_both_hosts_and_yes_no_not_constant(crash_run: dict[str, Any]) -> None:
    schema = crash_run["schema"]
    encodings = schema["encodings"]
    assert encodings["airbag"] == {"kind": "one_hot", "values": ["deployed", "not deployed"], "boolean": False}
    assert encodings["seatbelt"] == {"kind": "one_hot", "values": ["No", "Yes"], "boolean": True}
    assert encodings["speed"]["values"] == ["0-20", "20-40", "40-60", "60+"]
    parts = [
        json.loads(path.read_text()) for path in sorted(crash_run["run"].glob("preprocess/summary/summary-*.json"))
    ]
    assert [part["host"] for part in parts] == ["algo-1", "algo-2"]
    assert parts[0]["feature_names"] == parts[1]["feature_names"]
    assert parts[0]["categorical"]["encodings"] == parts[1]["categorical"]["encodings"]
    names = parts[0]["feature_names"]
    assert names[:3] == ["airbag=deployed", "airbag=not deployed", "airbag=(other)"]
    assert "age=(missing)" in names and "seatbelt=Yes" in names
    # every row of the written splits sets exactly one of the airbag indicators, and the Yes/No column varies
    rows = np.vstack(
        [np.asarray(read_file(path)[0], dtype=np.float32) for path in crash_run["run"].glob("preprocess/*/*.pbr")]
    )
    assert len(rows) == ROWS and rows.shape[1] == len(names)
    airbag = rows[:, :2]
    assert (airbag.sum(axis=1) == 1).all() and 0 < airbag[:, 0].mean() < 1
    yes = rows[:, names.index("seatbelt=Yes")]
    assert set(np.unique(yes)) == {0.0, 1.0}
    assert (rows[:, names.index("seatbelt=(other)")] == 0).all()


def test_imputation_values_are_the_schemas_on_every_host_and_in_the_model_data(crash_run: dict[str, Any]) -> None:
    fill = crash_run["schema"]["encodings"]["age"]["fill"]
    assert crash_run["schema"]["encodings"]["age"]["indicator"] is True
    frame = crash_run["frame"]
    assert abs(fill - pd.to_numeric(frame["age"]).median()) < 5, "the median of (the train part of) the ages"
    with tarfile.open(next(crash_run["run"].glob("preprocess/model/model.tar.gz"))) as archive:
        member = archive.extractfile("schema.json")
        assert member is not None
        model_schema = json.load(io.BytesIO(member.read()))
    assert model_schema["encodings"]["age"] == {"kind": "number", "fill": fill, "indicator": True}
    assert model_schema["missing_policy"] == "impute"
    assert feature_names(model_schema) == model_schema["feature_names"]
    parts = [
        json.loads(path.read_text()) for path in sorted(crash_run["run"].glob("preprocess/summary/summary-*.json"))
    ]
    assert all(part["categorical"]["encodings"]["age"]["fill"] == fill for part in parts)
    assert sum(part["imputed_values"]["age"] for part in parts) == int(frame["age"].isna().sum())
    # the imputed rows hold the fill and their indicator
    names = parts[0]["feature_names"]
    rows = np.vstack(
        [np.asarray(read_file(path)[0], dtype=np.float32) for path in crash_run["run"].glob("preprocess/*/*.pbr")]
    )
    missing = rows[:, names.index("age=(missing)")] == 1
    assert missing.sum() == frame["age"].isna().sum()
    assert (rows[missing, names.index("age")] == np.float32(fill)).all()


def post(url: str, body: Any) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_served_rows_missing_age_scored_unseen_values_counted_or_refused(
    crash_run: dict[str, Any], image_environment: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    workdir = crash_run["workdir"]
    rows = [
        {"airbag": "not deployed", "speed": "60+", "seatbelt": "NO", "age": None},
        {"airbag": "deployed", "speed": "0-20", "seatbelt": "y", "age": 30},
        {"airbag": "deployed", "speed": "90+", "seatbelt": "maybe", "age": 50},
    ]
    with serve_local("1", port=0, workdir=workdir, endpoint_name="crash") as running:
        status, answer = post(running.url + "/invocations", rows)
    assert status == 200, answer
    first, second, third = answer["predictions"]
    assert first["label"] == "dead" and second["label"] == "alive" and third["label"] == "alive"
    assert "unseen_categories" not in first and "unseen_categories" not in second, "yes/no spellings by meaning"
    assert third["unseen_categories"] == {"speed": "90+", "seatbelt": "maybe"}
    captured = [
        json.loads(line)
        for path in (workdir / "s3").rglob("datacapture/crash/**/*.jsonl")
        for line in path.read_text().splitlines()
    ]
    (record,) = captured
    assert json.loads(record["captureData"]["endpointOutput"]["data"]) == answer
    assert cli.main(
        ["monitor", "--endpoint", "crash", "--model-package", "1", "--workdir", str(workdir), "--json"]
    ) in (
        0,
        1,
    )
    (part,) = json.loads(capsys.readouterr().out)["parts"]
    assert part["unseen_categories"] == {"seatbelt": 1, "speed": 1}

    with serve_local("1", port=0, workdir=workdir, endpoint_name="strict", unseen_categories="refuse") as running:
        status, answer = post(running.url + "/invocations", rows[2:])
        assert status == 400
        assert answer["message"].startswith("row 1, column 'speed': value '90+' was not seen in training")
        status, answer = post(running.url + "/invocations", rows[:2])
        assert status == 200 and len(answer["predictions"]) == 2


def test_a_version_run_with_unseen_categories_refuse_refuses_them_when_served(
    crash_run: dict[str, Any], image_environment: Any
) -> None:
    """``UnseenCategories=refuse`` is the registered version's setting (its featurizer container's environment, as a
    SageMaker endpoint of it gets): served without saying, that version refuses an unseen value; version 1, run at
    the default, scores it; a server's own setting wins."""
    workdir, params = crash_run["workdir"], [*crash_run["params"], "UnseenCategories=refuse"]
    code = cli.main([*crash_run["args"], "--workdir", str(workdir), *(i for p in params for i in ("--param", p))])
    assert code == 0
    unseen = [{"airbag": "deployed", "speed": "90+", "seatbelt": "Yes", "age": 50}]
    package = LocalRegistry(workdir / "registry.db").describe("linear-learner-models/2")  # this run's version
    (featurizer, *_) = package.containers
    assert featurizer["Environment"]["LLPIPE_UNSEEN_CATEGORIES"] == "refuse"
    with serve_local("2", port=0, workdir=workdir, endpoint_name="strict-run", capture_percentage=0) as running:
        status, answer = post(running.url + "/invocations", unseen)
        assert status == 400 and "value '90+' was not seen in training" in answer["message"], answer
    with serve_local("1", port=0, workdir=workdir, endpoint_name="lenient-run", capture_percentage=0) as running:
        status, answer = post(running.url + "/invocations", unseen)
        assert status == 200 and answer["predictions"][0]["unseen_categories"] == {"speed": "90+"}, answer
    with serve_local(
        "2", port=0, workdir=workdir, endpoint_name="overridden", capture_percentage=0, unseen_categories="other"
    ) as running:
        assert post(running.url + "/invocations", unseen)[0] == 200


def test_drop_says_how_many_rows_it_removed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    frame = crash_table(400, 1)
    frame.to_csv(tmp_path / "crash.csv", index=False)
    workdir = tmp_path / "work"
    params = [f"{name}={value}" for name, value in {**FAST, "MissingValues": "drop"}.items()]
    args = ["run", "--data", str(tmp_path / "crash.csv"), "--label-column", "dead"]
    args += ["--predictor-type", "binary_classifier", "--workdir", str(workdir)]
    assert cli.main([*args, *(item for p in params for item in ("--param", p))]) == 0
    out = capsys.readouterr().out
    gaps = int(frame["age"].isna().sum())
    expected = f"MissingValues=drop removed {gaps:,} of 400 row(s) ({gaps / 400:.1%}) with a missing value"
    assert expected in out.replace("\n", " ")
    (record,) = ExecutionStore(workdir / "executions").list()
    (run,) = (workdir / "s3").glob(f"*/*/{record.id}")
    summary = json.loads(next(run.glob("preprocess/summary/summary.json")).read_text())
    assert summary["rows_dropped"] == gaps and summary["rows_read"] == 400
