"""Issue 40, on real local runs: a row's split is decided from its raw cells, so HashBuckets, CategoricalColumns and
MissingValues leave the test rows as they were (rows MissingValues=drop removes aside) and identical raw rows share a
split; every prediction carries the id of its input row (file and row, or the IdColumn value) and joins back to it;
compare() warns when two executions were scored on different test rows."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.partial_runs import UP_TO_THE_REPORT, partial_run
from support.settings import fast

import pipeline
from containerlib.encoding import category_text
from containerlib.stable_hash import stable_hash64
from pipeline import cli
from pipeline.api.comparison import NotComparableWarning
from pipeline.api.execution import LocalExecution
from pipeline.definition.config import load_config
from pipeline.local.data import user_data
from pipeline.local.runner import LocalRun, build_local_run
from pipeline.local.workdir import Workdir


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> LocalRun:
    return build_local_run(load_config(env={}), Workdir(tmp_path_factory.mktemp("unused")))


def table(rows: int = 700) -> pd.DataFrame:
    """A text column, a small-integer column, a number with gaps, a 0/1 label, a key (unique but for the first 30
    rows, which come twice)."""
    rng = np.random.default_rng(40)
    x = rng.normal(size=rows).round(4)
    frame = pd.DataFrame(
        {
            "key": [f"k{index:05d}" for index in range(rows)],
            "colour": rng.choice(["red", "green", "blue", "grey"], size=rows),
            "size": rng.integers(1, 5, size=rows),
            "x": np.where(rng.random(rows) < 0.1, np.nan, x),
            "label": ((x + rng.normal(scale=0.7, size=rows)) > 0).astype(int),
        }
    )
    return pd.concat([frame, frame.iloc[:30]], ignore_index=True)


def write_files(frame: pd.DataFrame, folder: Path) -> dict[tuple[str, int], int]:
    """Two files; returns each (file, 1-based data row) -> the frame's row index."""
    folder.mkdir(parents=True)
    where = {}
    for part, chunk in enumerate((frame.iloc[: len(frame) // 2], frame.iloc[len(frame) // 2 :])):
        chunk.to_csv(folder / f"part-{part}.csv", index=False)
        where.update({(f"part-{part}.csv", row): index for row, index in enumerate(chunk.index, start=1)})
    return where


def run(built: LocalRun, workdir: Path, folder: Path, **parameters: object) -> LocalExecution:
    """The run up to Evaluate's report (its predictions and coefficients; the data-quality check and the registration
    read no row id)."""
    local = partial_run(built, workdir, UP_TO_THE_REPORT)
    record = local.execute(
        user_data(folder, "label", "binary_classifier"),
        fast(MetricThreshold=0, TrainingInstanceCount=1, **parameters),
    )
    assert record.status == "Succeeded", record.failure_reason
    return LocalExecution.in_workdir(record, Workdir(workdir))


def predictions_file(execution: LocalExecution) -> list[dict]:
    path = execution.report_path
    assert path is not None
    return [json.loads(line) for line in (path.parent / "predictions.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def three_encodings(built: LocalRun, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The table run three times in one work dir: at CategoricalColumns=colour, HashBuckets=4, MissingValues=zero
    (``first``), rehashed (colour and size in 64 buckets) and with MissingValues=drop. The tests read these runs."""
    folder = tmp_path_factory.mktemp("three-encodings")
    frame = table().drop(columns="key")
    where = write_files(frame, folder / "data")
    work = folder / "work"
    first = run(built, work, folder / "data", CategoricalColumns="colour", HashBuckets=4, MissingValues="zero")
    rehashed = run(built, work, folder / "data", CategoricalColumns="colour,size", HashBuckets=64, MissingValues="zero")
    dropped = run(built, work, folder / "data", CategoricalColumns="colour", HashBuckets=4, MissingValues="drop")
    return {"frame": frame, "where": where, "work": work, "first": first, "rehashed": rehashed, "dropped": dropped}


def test_encoding_parameters_leave_the_test_rows_and_each_prediction_joins_back_to_its_row(
    three_encodings: dict,
) -> None:
    frame, where = three_encodings["frame"], three_encodings["where"]
    first, rehashed, dropped = (three_encodings[name] for name in ("first", "rehashed", "dropped"))

    test_rows = {}
    for name, execution in (("first", first), ("rehashed", rehashed), ("dropped", dropped)):
        lines = predictions_file(execution)
        ids = [(line["file"], line["row"]) for line in lines]
        assert len(set(ids)) == len(ids)  # one prediction per input row
        for line in lines:  # joined back by its id, each prediction is of its own input row
            assert line["label"] == frame["label"].iloc[where[line["file"], line["row"]]]
        report = execution.report
        assert report is not None
        assert report["test_rows"]["count"] == len(lines)
        test_rows[name] = {where[row_id] for row_id in ids}

    assert test_rows["rehashed"] == test_rows["first"]
    missing = set(np.flatnonzero(frame["x"].isna().to_numpy()).tolist())
    assert missing & test_rows["first"]  # the table leaves drop something to remove from the test split
    assert test_rows["dropped"] == test_rows["first"] - missing
    assert first.report["test_rows"] == rehashed.report["test_rows"]  # type: ignore[index]

    # identical raw rows share a split: a row and its copy are both in the test split or neither is
    for original in range(30):
        assert (original in test_rows["first"]) == (len(frame) - 30 + original in test_rows["first"])

    # the API's predictions carry the same ids, in the same order as the labels they go with
    api = first.predictions()
    assert list(zip(api["file"], api["row"], strict=True)) == [
        (line["file"], line["row"]) for line in predictions_file(first)
    ]
    assert (
        api["label"].to_numpy()
        == frame["label"].to_numpy()[[where[r] for r in zip(api["file"], api["row"], strict=True)]]
    ).all()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same = pipeline.compare(first, rehashed)
    assert same.attrs["warning"] is None
    with pytest.warns(NotComparableWarning, match="scored on different test rows: .*not comparable"):
        other = pipeline.compare(first, dropped)
    assert other.loc["test rows", "differs"]


def test_the_coefficients_name_the_weights_that_made_each_prediction(
    three_encodings: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    """The report's weights, looked up by feature name (numbers by column, a text value by its hash bucket), give
    back every score of predictions.jsonl (of the run at CategoricalColumns=colour, HashBuckets=4,
    MissingValues=zero); execution show and the API list them."""
    frame, where, execution = three_encodings["frame"], three_encodings["where"], three_encodings["first"]
    coefficients = execution.coefficients().set_index("feature")
    assert {"x", "size", "(bias)"} <= set(coefficients.index)
    assert {name for name in coefficients.index if name.startswith("colour#")} <= {f"colour#{b}" for b in range(4)}
    assert coefficients.loc["x", "standardised_weight"] == pytest.approx(
        coefficients.loc["x", "weight"] * coefficients.loc["x", "standard_deviation"]
    )
    weight = coefficients["weight"].to_dict()
    for line in predictions_file(execution):
        row = frame.iloc[where[line["file"], line["row"]]]
        bucket = stable_hash64(f"colour={category_text(row['colour'])}") % 4
        x = 0.0 if np.isnan(row["x"]) else row["x"]  # MissingValues=zero
        margin = weight["(bias)"] + weight["size"] * row["size"] + weight["x"] * x + weight[f"colour#{bucket}"]
        assert line["score"] == pytest.approx(1 / (1 + np.exp(-margin)), abs=1e-5)

    assert cli.main(["execution", "show", execution.id, "--workdir", str(three_encodings["work"])]) == 0
    shown = capsys.readouterr().out
    assert "Coefficients: the" in shown and "(bias)" in shown
    top = str(coefficients.drop(index="(bias)")["standardised_weight"].abs().idxmax())
    assert top in shown


def test_with_an_id_column_each_prediction_carries_its_value(built: LocalRun, tmp_path: Path) -> None:
    frame = table(300)
    frame = frame.drop_duplicates("key")
    write_files(frame, tmp_path / "data")
    execution = run(built, tmp_path / "work", tmp_path / "data", CategoricalColumns="colour", IdColumn="key",
                    MissingValues="zero")  # fmt: skip
    lines = predictions_file(execution)
    labels = dict(zip(frame["key"], frame["label"], strict=True))
    assert lines and all(set(line) == {"id", "label", "score", "predicted_label"} for line in lines)
    assert all(line["label"] == labels[line["id"]] for line in lines)
    assert list(execution.predictions()["id"]) == [line["id"] for line in lines]
