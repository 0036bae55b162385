"""The raw-column baseline end to end on real files: Preprocess samples the raw train and test rows (the test rows are
exactly the test shard's), Evaluate fits scikit-learn on their raw columns, and the report's section equals what a
notebook's own pipeline gets on the same rows; it sees what hashing into one bucket lost, which the encoded-feature
baseline cannot."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from sklearn import metrics as skm
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegressionCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from containerlib.recordio import iter_batches
from evaluation.evaluate import main as evaluate_main
from preprocessing.preprocess import main as preprocess_main

ROWS = 800


def write_table(path: Path) -> pd.DataFrame:
    """A table whose label a two-value text column mostly decides, with gaps in a number and a text column."""
    rng = np.random.default_rng(12)
    flag = rng.choice(["yes", "no"], size=ROWS)
    frame = pd.DataFrame(
        {
            "x1": rng.normal(size=ROWS).round(6),
            "x2": rng.normal(size=ROWS).round(6),
            "colour": rng.choice(["red", "green", "blue"], size=ROWS).astype(object),
            "flag": flag,
        }
    )
    signal = 2.5 * (flag == "yes") - 1.25 + 0.5 * frame["x1"] + rng.normal(scale=0.8, size=ROWS)
    frame["target"] = (signal > 0).astype(int)
    frame.loc[rng.random(ROWS) < 0.1, "x2"] = np.nan
    frame.loc[rng.random(ROWS) < 0.1, "colour"] = None
    path.parent.mkdir(parents=True)
    frame.to_csv(path, index=False)
    return frame


def shard_records(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    features, labels = [], []
    for path in sorted(folder.glob("*.pbr")):
        with path.open("rb") as stream:
            for block, values in iter_batches(stream, 10_000):
                features.append(np.asarray(block.todense() if hasattr(block, "todense") else block))
                labels.append(values)
    return np.concatenate(features), np.concatenate(labels)


def notebook_model(train: pd.DataFrame) -> Any:
    """The raw-column model as a data scientist writes it, independently of evaluation/raw_baseline.py."""
    encode = ColumnTransformer(
        [
            ("numbers", make_pipeline(SimpleImputer(strategy="median", add_indicator=True), StandardScaler()),
             ["x1", "x2"]),
            ("text", make_pipeline(SimpleImputer(strategy="constant", fill_value="missing"),
                                   OneHotEncoder(handle_unknown="ignore")), ["colour", "flag"]),
        ]
    )  # fmt: skip
    model = LogisticRegressionCV(Cs=10, cv=5, scoring="neg_log_loss", max_iter=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make_pipeline(encode, model).fit(train[["x1", "x2", "colour", "flag"]], train["target"].astype(int))


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("raw")
    frame = write_table(folder / "in" / "table.csv")
    code = preprocess_main(
        ["--input-dir", str(folder / "in"), "--output-dir", str(folder / "out"), "--resource-config",
         str(folder / "absent.json"), "--label-column", "target", "--predictor-type", "binary_classifier",
         "--feature-columns", "x1,x2,colour,flag", "--categorical-columns", "colour,flag", "--hash-buckets", "1",
         "--missing", "zero", "--test-fraction", "0.3", "--seed", "3"]
    )  # fmt: skip
    assert code == 0
    features, labels = shard_records(folder / "out" / "test")
    predictions = folder / "predictions"
    predictions.mkdir()
    for path in sorted((folder / "out" / "test").glob("*.pbr")):  # a model that sees x1 only
        shard_features, _ = shard_records_of(path)
        scores = 1 / (1 + np.exp(-shard_features[:, 0]))
        lines = "".join(json.dumps({"score": float(s), "predicted_label": int(s > 0.5)}) + "\n" for s in scores)
        (predictions / f"{path.name}.out").write_text(lines)
    arguments = ["--predictions-dir", predictions, "--test-dir", folder / "out" / "test", "--train-dir",
                 folder / "out" / "train", "--rows-dir", folder / "out" / "rows", "--output-dir", folder / "report",
                 "--predictor-type", "binary_classifier", "--metric-threshold", "-1"]  # fmt: skip
    assert evaluate_main([str(argument) for argument in arguments]) == 0
    report = json.loads((folder / "report" / "evaluation.json").read_text())
    assert len(labels) == report["dataset"]["item_count"] and features.shape[0] == len(labels)
    return folder, frame, report


def shard_records_of(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with path.open("rb") as stream:
        parts = list(iter_batches(stream, 10_000))
    return np.concatenate([np.asarray(block) for block, _ in parts]), np.concatenate([values for _, values in parts])


def test_the_sampled_test_rows_are_the_test_shards_rows_raw(evaluated: Any) -> None:
    folder, frame, _ = evaluated
    rows = folder / "out" / "rows"
    assert sorted(path.name for path in rows.iterdir()) == ["test-algo-1.parquet", "train-algo-1.parquet"]
    test = pq.read_table(rows / "test-algo-1.parquet").to_pandas()
    train = pq.read_table(rows / "train-algo-1.parquet").to_pandas()
    assert list(test.columns) == ["x1", "x2", "colour", "flag", "target"]
    features, labels = shard_records(folder / "out" / "test")
    # the same records: x1 (feature 0) and the labels as multisets; the raw values, gaps and text as read
    assert np.array_equal(np.sort(test["x1"].to_numpy(np.float32)), np.sort(features[:, 0]))
    assert np.array_equal(np.sort(test["target"].to_numpy()), np.sort(labels.astype(np.float64)))
    both = pd.concat([train, test])
    assert len(train) + len(test) < ROWS  # the validation split is in neither sample
    # numbers as the reader gives them (float32, as the shards hold them), widened
    original = frame.set_index(frame["x1"].astype(np.float32).astype(np.float64)).loc[both["x1"]]
    assert original["colour"].isna().to_numpy().tolist() == both["colour"].isna().tolist()
    assert original["flag"].tolist() == both["flag"].tolist()
    assert np.array_equal(original["x2"].isna().to_numpy(), both["x2"].isna().to_numpy())
    assert test["x2"].dtype == np.float64 and not pd.api.types.is_numeric_dtype(test["colour"])


def test_the_raw_column_baseline_is_a_notebooks_model_on_the_same_rows(evaluated: Any) -> None:
    folder, _, report = evaluated
    section = report["baseline_raw_columns"]
    rows = folder / "out" / "rows"
    train = pq.read_table(rows / "train-algo-1.parquet").to_pandas()
    test = pq.read_table(rows / "test-algo-1.parquet").to_pandas()
    assert section["train_rows"] == len(train) and section["test_rows"] == len(test)
    assert section["same_test_records"] is True and section["test_split_records"] == report["dataset"]["item_count"]
    assert (section["numeric_columns"], section["text_columns"]) == (["x1", "x2"], ["colour", "flag"])
    model = notebook_model(train)
    probabilities = model.predict_proba(test[["x1", "x2", "colour", "flag"]])[:, 1]
    metrics = section["binary_classification_metrics"]
    assert metrics["auc"]["value"] == pytest.approx(skm.roc_auc_score(test["target"], probabilities), abs=1e-9)
    predicted = (probabilities > 0.5).astype(int)
    assert metrics["accuracy"]["value"] == pytest.approx(skm.accuracy_score(test["target"], predicted), abs=1e-12)
    assert section["gate"]["challenger_minus_baseline"] == pytest.approx(
        report["gate"]["value"] - metrics["auc"]["value"]
    )
    # one hash bucket makes "yes" and "no" one feature: the encoded baseline cannot see the flag, the raw one does,
    # and the decision notes the encoding may lose what the raw columns hold (said, not gated on)
    assert metrics["auc"]["value"] > report["baseline"]["gate"]["value"] + 0.1
    assert "below scikit-learn on the raw columns" in report["decision"]["raw_columns_note"]


def test_the_raw_rows_sample_is_bounded_and_drawn_from_its_split(tmp_path: Path) -> None:
    """Past ``--raw-rows`` each split's sample keeps that many rows (a bottom-k sample over chunks), every one of
    them a row of that split; with 0 no sample is written."""
    write_table(tmp_path / "in" / "table.csv")
    common = ["--input-dir", str(tmp_path / "in"), "--resource-config", str(tmp_path / "absent.json"),
              "--label-column", "target", "--predictor-type", "binary_classifier", "--feature-columns",
              "x1,x2,colour,flag", "--categorical-columns", "colour,flag", "--missing", "zero", "--test-fraction",
              "0.3", "--chunk-rows", "100"]  # fmt: skip
    assert preprocess_main([*common, "--output-dir", str(tmp_path / "out"), "--raw-rows", "60"]) == 0
    for split in ("train", "test"):
        sample = pq.read_table(tmp_path / "out" / "rows" / f"{split}-algo-1.parquet").to_pandas()
        features, _ = shard_records(tmp_path / "out" / split)
        assert len(sample) == 60 < len(features)
        shard_x1 = set(features[:, 0].tolist())  # x1: the first feature
        assert set(sample["x1"].astype(np.float32).tolist()) <= shard_x1, split
    assert preprocess_main([*common, "--output-dir", str(tmp_path / "none"), "--raw-rows", "0"]) == 0
    assert not list((tmp_path / "none" / "rows").glob("*"))
