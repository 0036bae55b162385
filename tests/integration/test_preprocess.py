"""The Preprocess job, run as a script on real files: one host versus three hosts, label handling, bad input."""

from __future__ import annotations

import gzip
import io
import json
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris
from support.container import Container

from containerlib.hosts import Host
from containerlib.recordio import read, read_file
from pipeline.core.sharding import objects_for_instance
from preprocessing import PreprocessError
from preprocessing.preprocess import main
from preprocessing.summary import load_summary, merge_summaries
from preprocessing.transaction import OutputTransaction

SPLITS = ("train", "validation", "test")
HOSTS = ("algo-1", "algo-2", "algo-3")
BUCKETS = 8
CANCER_ARGS = [
    "--label-column", "diagnosis", "--predictor-type", "binary_classifier", "--label-values", "malignant,benign",
    "--categorical-columns", "size band", "--hash-buckets", str(BUCKETS), "--train-shards", "4",
    "--chunk-rows", "50", "--seed", "7",
]  # fmt: skip


def run_job(container: Container, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """The preprocess bundle as the scikit-learn image runs it (Python 3.9, pandas 1.1.3, pyarrow 14.0.1)."""
    return container.run("preprocess", *args)


def start_job(container: Container, *args: str | Path) -> subprocess.Popen[str]:
    return container.start("preprocess", *args)


def write_resource_config(path: Path, host: str, hosts: tuple[str, ...]) -> Path:
    path.write_text(json.dumps({"current_host": host, "hosts": list(hosts), "network_interface_name": "eth0"}))
    return path


def cancer_frame() -> pd.DataFrame:
    """Breast cancer with string labels and one categorical column, sorted by label so the job must shuffle."""
    frame = load_breast_cancer(as_frame=True).frame
    frame = frame.rename(columns={"target": "diagnosis"})
    frame["diagnosis"] = frame["diagnosis"].map({0: "malignant", 1: "benign"})
    frame["size band"] = pd.cut(frame["mean radius"], [0, 12, 16, 100], labels=["small", "medium", "large"]).astype(str)
    return frame.sort_values("diagnosis", kind="stable").reset_index(drop=True)


def write_parts(frame: pd.DataFrame, folder: Path) -> list[str]:
    """Six input files in three formats: CSV, gzip CSV and Parquet."""
    folder.mkdir(parents=True)
    names = []
    for index, rows in enumerate(np.array_split(np.arange(len(frame)), 6)):
        part = frame.iloc[rows]
        name = f"part-{index}" + (".csv", ".csv.gz", ".parquet")[index % 3]
        if name.endswith(".parquet"):
            part.to_parquet(folder / name, index=False)
        else:
            part.to_csv(folder / name, index=False)
        names.append(name)
    return names


def read_output(output_dirs: list[Path]) -> tuple[dict[str, list[tuple[np.ndarray, np.ndarray]]], list[str]]:
    """Every shard of every output dir, decoded, per split; plus every relative file name written."""
    shards: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {split: [] for split in SPLITS}
    names = []
    for output in output_dirs:
        assert not list(output.glob(".preprocess-work-*")), "the work folder is removed"
        for split in SPLITS:
            for path in sorted((output / split).iterdir()):
                names.append(f"{split}/{path.name}")
                with open(path, "rb") as handle:
                    features, labels = read(handle)
                shards[split].append((features, labels))
        names.extend(f"summary/{path.name}" for path in (output / "summary").iterdir())
    return shards, names


def row_multiset(shards: list[tuple[np.ndarray, np.ndarray]]) -> Counter[bytes]:
    return Counter(
        np.hstack([features, labels[:, None]]).astype(np.float32)[row].tobytes()
        for features, labels in shards
        for row in range(len(labels))
    )


def is_sorted(labels: np.ndarray) -> bool:
    steps = np.diff(labels)
    return bool((steps >= 0).all() or (steps <= 0).all())


def test_one_host_and_three_hosts_agree(tmp_path: Path, container: Container) -> None:
    """The same six files preprocessed by one host, and by three hosts each given its ShardedByS3Key share.

    One test (not a shared fixture) so that parallel test workers do not each pay for the four runs."""
    runs = run_cancer(tmp_path, container)
    check_same_rows_per_split(runs)
    check_records_decode_and_are_shuffled(runs)
    check_summaries_merge_to_the_single_host_summary(runs)


def run_cancer(root: Path, container: Container) -> dict[str, Any]:
    frame = cancer_frame()
    names = write_parts(frame, root / "input")
    (root / "input" / "_SUCCESS").write_text("")  # markers and other files next to the data are skipped
    (root / "input" / "README.txt").write_text("not data")
    single = run_job(
        container,
        "--input-dir", root / "input", "--output-dir", root / "one", "--resource-config", root / "absent.json",
        *CANCER_ARGS, "--feature-dim", "auto",
    )  # fmt: skip
    assert single.returncode == 0, single.stderr
    assert "ignoring 1 file(s) that are not CSV or Parquet" in single.stdout
    jobs, outputs = [], []
    for index, host in enumerate(HOSTS):
        share = root / host / "input"
        share.mkdir(parents=True)
        for name in objects_for_instance(names, "ShardedByS3Key", index, len(HOSTS)):
            shutil.copy(root / "input" / name, share / name)
        outputs.append(root / host / "output")
        config = write_resource_config(root / host / "resourceconfig.json", host, HOSTS)
        jobs.append(
            start_job(
                container,
                "--input-dir",
                share,
                "--output-dir",
                outputs[-1],
                "--resource-config",
                config,
                *CANCER_ARGS,
                "--feature-dim",
                str(30 + BUCKETS),
                "--shuffle-memory-mb",
                "0.002",  # forces the on-disk buckets
            )  # fmt: skip
        )
    for job in jobs:
        _, stderr = job.communicate(timeout=120)
        assert job.returncode == 0, stderr
    return {"frame": frame, "one": root / "one", "three": outputs}


def check_same_rows_per_split(cancer_runs: dict[str, Any]) -> None:
    one, one_names = read_output([cancer_runs["one"]])
    three, three_names = read_output(cancer_runs["three"])
    assert len(three_names) == len(set(three_names)), "no file name collides between hosts"
    assert len(three["train"]) == 3 * 2 and len(one["train"]) == 4, "at least --train-shards 4 train files"
    for split in SPLITS:
        assert row_multiset(one[split]) == row_multiset(three[split]), split
        assert sum(len(labels) for _, labels in one[split]) > 40
    # Every input row comes out exactly once, its numeric features and label unchanged.
    # Without a schema the feature order is the column names sorted: the same on every host whatever its files.
    frame = cancer_runs["frame"]
    names = load_summary(cancer_runs["one"] / "summary")["feature_names"]
    expected_names = sorted(frame.columns.drop("diagnosis"))
    assert [name.split("#")[0] for name in names if not name.startswith("size band#")] == [
        name for name in expected_names if name != "size band"
    ]
    numeric_positions = [index for index, name in enumerate(names) if not name.startswith("size band#")]
    numeric = frame[[names[index] for index in numeric_positions]].to_numpy(np.float32)
    labels = (frame["diagnosis"] == "benign").to_numpy(np.float32)
    expected = Counter(np.hstack([numeric, labels[:, None]])[row].tobytes() for row in range(len(frame)))
    written = Counter(
        np.hstack([x[:, numeric_positions], y[:, None]])[row].tobytes()
        for split in SPLITS
        for x, y in one[split]
        for row in range(len(y))
    )
    assert written == expected


def check_records_decode_and_are_shuffled(cancer_runs: dict[str, Any]) -> None:
    for outputs in ([cancer_runs["one"]], cancer_runs["three"]):
        summary = merge_summaries(
            [json.loads(p.read_text()) for output in outputs for p in (output / "summary").glob("summary-*.json")]
        )
        assert summary["feature_dim"] == 30 + BUCKETS
        block = summary["feature_names"].index("size band#0")
        assert summary["feature_names"][block : block + BUCKETS] == [f"size band#{b}" for b in range(BUCKETS)]
        shards, _ = read_output(outputs)
        for split in SPLITS:
            for features, labels in shards[split]:
                assert features.shape == (len(labels), summary["feature_dim"])
                assert np.isfinite(features).all() and set(np.unique(labels)) <= {0.0, 1.0}
                # the categorical column sets exactly one indicator in its block
                assert (features[:, block : block + BUCKETS].sum(axis=1) == 1).all()
                # the test split is shuffled a chunk at a time, with its row ids (issue 40): a host given a few
                # rows of a file sorted by label keeps them in that order across chunks
                assert split == "test" or not is_sorted(labels), f"a {split} shard is sorted by label"
            assert not is_sorted(np.concatenate([labels for _, labels in shards[split]]))
            assert summary["rows"][split] == sum(len(labels) for _, labels in shards[split])


def check_summaries_merge_to_the_single_host_summary(cancer_runs: dict[str, Any]) -> None:
    single = load_summary(cancer_runs["one"] / "summary")
    outputs = zip(HOSTS, cancer_runs["three"], strict=True)
    parts = [json.loads((out / "summary" / f"summary-{host}.json").read_text()) for host, out in outputs]
    merged = merge_summaries(parts)
    assert not any((out / "summary" / "summary.json").exists() for out in cancer_runs["three"])
    for key in ("rows", "label_counts", "feature_dim", "feature_names", "label_mapping", "input_files", "rows_read"):
        assert merged[key] == single[key], key
    assert single["label_mapping"] == {"malignant": 0, "benign": 1}
    totals = Counter()
    for split in SPLITS:
        totals.update({int(k): v for k, v in single["label_counts"][split].items()})
    assert totals == {0: 212, 1: 357}
    assert sum(single["rows"].values()) == 569 and single["predictor_type"] == "binary_classifier"
    assert sorted(single["input_files"]) == [f"part-{i}" + (".csv", ".csv.gz", ".parquet")[i % 3] for i in range(6)]
    assert 0.6 < single["rows"]["train"] / 569 < 0.8

    with pytest.raises(ValueError, match="missing \\['algo-3'\\]"):
        merge_summaries(parts[:2])
    with pytest.raises(ValueError, match="disagree on feature_dim"):
        merge_summaries([parts[0], parts[1], {**parts[2], "feature_dim": 99}])
    no_test = [{**part, "rows": {**part["rows"], "test": 0}} for part in parts]
    with pytest.raises(ValueError, match="the test split\\(s\\) are empty over all hosts"):
        merge_summaries(no_test)
    with pytest.raises(ValueError, match="processed by both algo-1 and algo-2"):
        merge_summaries([parts[0], {**parts[1], "input_files": parts[0]["input_files"]}, parts[2]])


def test_multiclass_and_regression_labels(tmp_path: Path, container: Container) -> None:
    iris = load_iris(as_frame=True).frame  # integer classes 0..2, sorted by class
    (tmp_path / "iris").mkdir()
    iris.to_csv(tmp_path / "iris" / "iris.csv", index=False)
    result = run_job(
        container,
        "--input-dir", tmp_path / "iris", "--output-dir", tmp_path / "iris-out", "--label-column", "target",
        "--predictor-type", "multiclass_classifier", "--resource-config", tmp_path / "none.json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = load_summary(tmp_path / "iris-out" / "summary")
    assert summary["num_classes"] == 3 and summary["label_mapping"] == {"0": 0, "1": 1, "2": 2}
    counts = Counter()
    for split in SPLITS:
        counts.update({int(k): v for k, v in summary["label_counts"][split].items()})
        with open(tmp_path / "iris-out" / split / f"{split}-algo-1-00000.pbr", "rb") as handle:
            features, labels = read(handle)
        assert features.shape[1] == 4 and set(np.unique(labels)) <= {0.0, 1.0, 2.0} and not is_sorted(labels)
    assert counts == {0: 50, 1: 50, 2: 50}
    # deterministic: the same input and arguments give the same bytes
    again = [
        "--input-dir", tmp_path / "iris", "--output-dir", tmp_path / "iris-again", "--label-column", "target",
        "--predictor-type", "multiclass_classifier", "--resource-config", tmp_path / "none.json",
    ]  # fmt: skip
    assert main(list(map(str, again))) == 0
    first = {p.relative_to(tmp_path / "iris-out"): p.read_bytes() for p in (tmp_path / "iris-out").rglob("*.*")}
    second = {p.relative_to(tmp_path / "iris-again"): p.read_bytes() for p in (tmp_path / "iris-again").rglob("*.*")}
    # 3 splits, 2 summaries, the test split's row ids, the data-quality baseline, the serving featurizer's model data;
    # and the raw rows' samples, Parquet files whose footer names the writing pyarrow (the image's 14, this one's
    # newer): equal tables
    samples = [path for path in first if path.parts[0] == "rows"]
    assert sorted(path.name for path in samples) == ["test-algo-1.parquet", "train-algo-1.parquet"]
    for path in samples:
        tables = [pq.read_table(folder / path) for folder in (tmp_path / "iris-out", tmp_path / "iris-again")]
        assert tables[0].equals(tables[1]) and tables[0].num_rows > 0, path
        first.pop(path), second.pop(path)
    assert first == second and len(first) == 8
    diabetes = load_diabetes(as_frame=True).frame
    (tmp_path / "diabetes").mkdir()
    diabetes.to_parquet(tmp_path / "diabetes" / "diabetes.parquet", index=False)
    result = run_job(
        container,
        "--input-dir", tmp_path / "diabetes", "--output-dir", tmp_path / "diabetes-out", "--label-column", "target",
        "--predictor-type", "regressor", "--resource-config", tmp_path / "none.json", "--train-shards", "2",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = load_summary(tmp_path / "diabetes-out" / "summary")
    assert summary["label_mapping"] is None and summary["label_counts"] is None and summary["feature_dim"] == 10
    labels = np.concatenate(
        [read_file(path)[1] for split in SPLITS for path in (tmp_path / "diabetes-out" / split).iterdir()]
    )
    assert sorted(labels.tolist()) == sorted(diabetes["target"].astype(np.float32).tolist())
    total = sum(summary["label_stats"][split]["sum"] for split in SPLITS)
    assert total == pytest.approx(diabetes["target"].sum())


def test_id_column_alone_decides_the_split(tmp_path: Path, container: Container) -> None:
    frame = load_iris(as_frame=True).frame.reset_index(names="row_id")
    shifted = frame.assign(**{"sepal length (cm)": frame["sepal length (cm)"] + 100.0}).iloc[::-1]
    splits = []
    for name, data, files in (("a", frame, 1), ("b", shifted, 3)):
        (tmp_path / name).mkdir()
        for index, rows in enumerate(np.array_split(np.arange(len(data)), files)):
            data.iloc[rows].to_csv(tmp_path / name / f"part-{index}.csv", index=False)
        result = run_job(
            container,
            "--input-dir", tmp_path / name, "--output-dir", tmp_path / f"{name}-out", "--label-column", "target",
            "--predictor-type", "multiclass_classifier", "--id-column", "row_id", "--resource-config", tmp_path / "x",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        shards, _ = read_output([tmp_path / f"{name}-out"])
        assert all(x.shape[1] == 4 for split in SPLITS for x, _ in shards[split]), "the id is not a feature"
        # petal length/width identify an iris row together with sepal width, whatever the shift of sepal length
        names = load_summary(tmp_path / f"{name}-out" / "summary")["feature_names"]
        others = [index for index, column in enumerate(names) if column != "sepal length (cm)"]
        splits.append(
            {
                split: sorted(map(tuple, np.vstack([x for x, _ in shards[split]])[:, others].tolist()))
                for split in SPLITS
            }  # noqa: E501
        )
    assert splits[0] == splits[1]


def run_in_process(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    """main() in this process (faster than a subprocess): exit code and what it printed to stderr."""
    code = main([str(arg) for arg in args])
    return code, capsys.readouterr().err


def test_missing_values_zero_and_drop(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "in").mkdir()
    rows = ["x,y,label"] + [f"{i},{i % 7},{i % 2}" for i in range(40)] + ["1,,0", "nan,2,1", "inf,3,0", "4,5,"]
    (tmp_path / "in" / "data.csv").write_text("\n".join(rows) + "\n")
    common = ["--input-dir", tmp_path / "in", "--resource-config", tmp_path / "x", *BINARY]
    code, stderr = run_in_process(capsys, *common, "--output-dir", tmp_path / "drop", "--missing", "drop")
    assert code == 0, stderr
    summary = load_summary(tmp_path / "drop" / "summary")
    assert summary["rows_dropped"] == 4 and sum(summary["rows"].values()) == 40
    code, stderr = run_in_process(capsys, *common, "--output-dir", tmp_path / "zero", "--missing", "zero")
    assert code == 1 and "data.csv row 44: label column 'label'" in stderr  # a label is never imputed
    assert not [p for p in (tmp_path / "zero").rglob("*") if p.is_file()]
    (tmp_path / "in" / "data.csv").write_text("\n".join(rows[:-1]) + "\n")
    code, stderr = run_in_process(capsys, *common, "--output-dir", tmp_path / "zero2", "--missing", "zero")
    assert code == 0, stderr
    shards, _ = read_output([tmp_path / "zero2"])
    features = np.vstack([x for split in SPLITS for x, _ in shards[split]])
    assert len(features) == 43 and np.isfinite(features).all()
    assert {(1.0, 0.0), (0.0, 2.0), (0.0, 3.0)} <= set(map(tuple, features.tolist()))


def _csv(folder: Path, name: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)


GOOD = "a,b,label\n" + "".join(f"{i},{i * 2},{i % 2}\n" for i in range(12))
BINARY = ["--label-column", "label", "--predictor-type", "binary_classifier"]


@pytest.mark.parametrize(
    ("files", "extra", "message"),
    [
        ({}, BINARY, r"no CSV \(\.csv, \.csv\.gz\) or Parquet .* files under"),
        ({"d.csv": "a,b,target\n1,2,0\n"}, BINARY, r"d\.csv: missing column\(s\) \['label'\]"),
        ({"d.csv": ""}, BINARY, r"d\.csv: empty file, expected a header row"),
        ({"d.csv": "a,b,label\n"}, BINARY, r"no data rows in 1 input file\(s\)"),
        ({"d.csv": GOOD + "1,2,0,9\n"}, BINARY, r"d\.csv: unreadable .*Expected 3 fields in line 14, saw 4"),
        ({"d.parquet": "not parquet"}, BINARY, r"d\.parquet: unreadable"),
        (
            {"d.csv.gz": "not gzip"},
            BINARY,
            r"d\.csv\.gz: named \.gz but not gzip-compressed: its first bytes 'not gzip'",
        ),
        (
            {"d.csv": GOOD + "7,seven,1\n"},
            [*BINARY, "--chunk-rows", "5"],
            r"d\.csv row 13: column 'b' has non-numeric value 'seven'; .*\(pipeline parameter CategoricalColumns\), "
            r"adding b",
        ),
        # an empty cell, the text NaN and a number float32 cannot hold are each said as such, not as "value nan"
        (
            {"d.csv": GOOD + "7,,1\n"},
            BINARY,
            r"d\.csv row 13: column 'b' is empty; a value is needed: set --missing \(pipeline parameter "
            r"MissingValues\) to impute \(the training median, a missing category and indicator\), zero \(features\) "
            r"or drop \(rows\)",
        ),
        ({"d.csv": GOOD + "\n7,NaN,1\n"}, BINARY, r"d\.csv row 13: column 'b' holds the text 'NaN', read as a missing"),
        ({"d.csv": GOOD + "7,1,\n"}, BINARY, r"d\.csv row 13: label column 'label' is empty; a value is needed"),
        ({"d.csv": GOOD + "7,1e39,1\n"}, BINARY, r"d\.csv row 13: column 'b' value 1e\+39 is not a finite float32; a"),
        (
            {"d.csv": "a,b,label\n1,,0\n2,,1\n"},
            [*BINARY, "--missing", "drop"],
            r"all 2 rows .* dropped by --missing \(pipeline parameter MissingValues\) drop",
        ),
        ({"d.csv": GOOD}, [*BINARY, "--train-shards", "50"], r"has \d+ rows, fewer than the 50 train shards"),
        (
            {"d.csv": GOOD},
            [*BINARY, "--validation-fraction", "0.001"],
            r"the validation split is empty \(12 rows, --validation-fraction \(pipeline parameter ValidationFraction\) "
            r"0\.001; .*\): give more rows, a larger validation fraction or another --seed \(pipeline parameter "
            r"SplitSeed\)",
        ),
        (
            {"d.csv": GOOD},
            [*BINARY, "--feature-dim", "3"],
            r"the data has 2 features .* but --feature-dim \(pipeline parameter FeatureDim\) is 3",
        ),
        (
            {"d.csv": GOOD + "7,1,2\n"},
            BINARY,
            r"d\.csv row 13: label 2(\.0)? is not 0 or 1 for binary_classifier; labels seen in this chunk: 0, 1, 2; "
            r"a binary classifier takes two classes: correct or drop the rows with other labels, or train a "
            r"multiclass_classifier: --predictor-type \(pipeline parameter PredictorType\) multiclass_classifier and "
            r"--label-values \(pipeline parameter LabelValues\) 0,1,2$",
        ),
        (
            {"d.csv": GOOD + "7,1,yes\n"},
            [*BINARY[:2], "--predictor-type", "regressor"],
            r"d\.csv row 13: label column 'label' has non-numeric value 'yes'; labels seen .*: 0, 1, yes",
        ),
        (
            {"d.csv": GOOD + "7,1,1.5\n"},
            ["--label-column", "label", "--predictor-type", "multiclass_classifier"],
            r"d\.csv row 13: label 1\.5 is not an integer class",
        ),
        (
            {"d.csv": GOOD},
            [*BINARY, "--label-values", "no,yes"],
            r"d\.csv row 1: label '0' is not one of the label values \['no', 'yes'\]; labels seen in this chunk: 0, 1; "
            r"map them to classes in order with --label-values \(pipeline parameter LabelValues\) 0,1",
        ),
        (
            {"d.csv": GOOD, "e.csv": "a,b,c,label\n1,2,3,0\n"},
            BINARY,
            r"e\.csv: columns differ from the layout every host uses \(the columns of d\.csv sorted by name\): "
            r"missing \[\], unexpected \['c'\]",
        ),
        # Issue 11: pandas renames a repeated name to "label.1", which then trained as a feature (AUC 1.0).
        ({"d.csv": "a,b,label,label\n1,2,0,0\n"}, BINARY, r"d\.csv: duplicate column name\(s\) \['label'\] in"),
        ({"d.csv": "f0,f0,f1,label\n1,1,2,0\n"}, BINARY, r"d\.csv: duplicate column name\(s\) \['f0'\]"),
        ({"d.csv": "a,,label\n1,2,0\n"}, BINARY, r"d\.csv: header column\(s\) \[2\] .* have no name"),
    ],
)
def test_bad_input_fails_naming_file_and_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str], extra: list[str], message: str
) -> None:
    for name, text in files.items():
        _csv(tmp_path / "in", name, text)
    (tmp_path / "in").mkdir(exist_ok=True)
    output = tmp_path / "out"
    code = main(["--input-dir", str(tmp_path / "in"), "--output-dir", str(output), "--resource-config",
                 str(tmp_path / "absent.json"), *extra])  # fmt: skip
    stderr = capsys.readouterr().err
    assert code == 1
    assert stderr.startswith("preprocess: error: ") and stderr.count("\n") == 1, stderr
    assert re.search(message, stderr), stderr
    left = [p for p in output.rglob("*") if p.is_file()] if output.exists() else []
    assert not left, "nothing is left behind"


NON_NUMERIC = (
    "row 13: column 'b' has non-numeric value 'seven'; declare text columns as categorical (feature-hashed) with "
    "--categorical-columns (pipeline parameter CategoricalColumns), adding b to the columns already declared"
)


@pytest.mark.parametrize(
    ("source", "where", "named"),
    [
        ("s3://bucket/in/", "sub/d.csv", "s3://bucket/in/sub/d.csv"),  # a prefix: the object's key after it
        ("s3://bucket/in", "sub/d.csv", "s3://bucket/in/sub/d.csv"),
        ("s3://bucket/in/d.csv", "d.csv", "s3://bucket/in/d.csv"),  # a whole key lands at its last part
    ],
)
def test_errors_name_the_input_by_its_source(
    tmp_path: Path, container: Container, source: str, where: str, named: str
) -> None:
    """Before: on SageMaker the message named /opt/ml/processing/input/data/d.csv, a path the user never saw."""
    data = tmp_path / "in"
    if source.endswith("/in/"):
        _csv(data, "e.csv", GOOD)  # read before sub/d.csv: every file is named by its source, not only the first
    _csv((data / where).parent, Path(where).name, GOOD + "7,seven,1\n")
    args = ["--output-dir", tmp_path / "out", "--resource-config", tmp_path / "absent.json", *BINARY]
    result = run_job(container, "--input-dir", data, "--input-source", source, *args)
    assert result.returncode == 1
    assert result.stderr == f"preprocess: error: {named} {NON_NUMERIC}\n"
    if source.endswith("/in/"):  # the progress lines of the log name the source too
        assert "[algo-1] read file 1/2 s3://bucket/in/e.csv (12 rows)" in result.stdout
    without = run_job(container, "--input-dir", data, *args)  # outside SageMaker: the path here
    assert without.stderr == f"preprocess: error: {data / where} {NON_NUMERIC}\n"


def test_the_error_is_also_the_exit_message_sagemaker_shows(tmp_path: Path, container: Container) -> None:
    """Before: on SageMaker the job's FailureReason said only "AlgorithmError: See job logs"; the first 1 KB of
    /opt/ml/output/message is its ExitMessage. The line stderr gets, after the host's name (SageMaker concatenates
    every instance's message); written only where the folder exists, so a run by hand elsewhere writes nothing."""
    _csv(tmp_path / "in", "d.csv", GOOD + "7,seven,1\n")
    config = write_resource_config(tmp_path / "resourceconfig.json", "algo-2", HOSTS)
    (tmp_path / "output").mkdir()
    message = tmp_path / "output" / "message"
    args = ["--input-dir", tmp_path / "in", "--input-source", "s3://bucket/in/", "--resource-config", config, *BINARY]
    result = run_job(container, *args, "--output-dir", tmp_path / "out", "--exit-message-file", message)
    assert result.returncode == 1
    assert result.stderr == f"preprocess: error: s3://bucket/in/d.csv {NON_NUMERIC}\n"
    assert message.read_bytes() == f"algo-2: preprocess: error: s3://bucket/in/d.csv {NON_NUMERIC}\n".encode()
    elsewhere = tmp_path / "no-such-folder" / "message"
    by_hand = run_job(container, *args, "--output-dir", tmp_path / "out2", "--exit-message-file", elsewhere)
    assert by_hand.returncode == 1 and by_hand.stderr == result.stderr
    assert not elsewhere.parent.exists()


def test_an_unexpected_failure_still_says_what_it_was_in_the_exit_message(tmp_path: Path, container: Container) -> None:
    """A defect rather than bad input (here the output folder is a file) keeps its traceback in the log and puts its
    last line in ExitMessage, instead of leaving SageMaker's "See job logs" alone."""
    _csv(tmp_path / "in", "d.csv", GOOD)
    config = write_resource_config(tmp_path / "resourceconfig.json", "algo-1", HOSTS)
    (tmp_path / "output").mkdir()
    message, not_a_folder = tmp_path / "output" / "message", tmp_path / "out"
    not_a_folder.write_text("")
    args = ["--input-dir", tmp_path / "in", "--resource-config", config, "--output-dir", not_a_folder, *BINARY]
    result = run_job(container, *args, "--exit-message-file", message)
    assert result.returncode == 1 and "Traceback (most recent call last)" in result.stderr
    assert message.read_text() == (
        f"algo-1: preprocess: unexpected NotADirectoryError: [Errno 20] Not a directory: '{not_a_folder}/train' "
        "(traceback in the log)\n"
    )


def test_the_exit_message_is_cut_to_1_kb_of_utf_8_between_characters(tmp_path: Path, container: Container) -> None:
    """SageMaker keeps 1 KB and fails a job whose message is not UTF-8: a two-byte character across byte 1024 is
    left out whole, not cut in half."""
    value = "x" + "é" * 600
    _csv(tmp_path / "in", "d.csv", GOOD + f"7,{value},1\n")
    config = write_resource_config(tmp_path / "resourceconfig.json", "algo-2", HOSTS)
    (tmp_path / "output").mkdir()
    message = tmp_path / "output" / "message"
    args = ["--input-dir", tmp_path / "in", "--input-source", "s3://bucket/in/", "--resource-config", config, *BINARY]
    result = run_job(container, *args, "--output-dir", tmp_path / "out", "--exit-message-file", message)
    line = f"preprocess: error: s3://bucket/in/d.csv {NON_NUMERIC.replace(repr('seven'), repr(value))}"
    assert result.returncode == 1 and result.stderr == line + "\n"
    full = f"algo-2: {line}\n".encode()
    assert full[1023:1025] == "é".encode(), "the message's layout puts a character across byte 1024"
    written = message.read_bytes()
    assert written == full[:1023] and written.decode("utf-8").endswith("'xé" + "é" * 465)  # 1023 bytes, all of them


def test_header_and_empty_input_errors_name_the_source_too(tmp_path: Path, container: Container) -> None:
    args = ["--output-dir", tmp_path / "out", "--resource-config", tmp_path / "absent.json", *BINARY]
    _csv(tmp_path / "in", "d.csv", "a,b,target\n1,2,0\n")
    result = run_job(container, "--input-dir", tmp_path / "in", "--input-source", "s3://bucket/in/", *args)
    assert result.stderr == (
        "preprocess: error: s3://bucket/in/d.csv: missing column(s) ['label']; the header has ['a', 'b', 'target']\n"
    )
    (tmp_path / "empty").mkdir()
    result = run_job(container, "--input-dir", tmp_path / "empty", "--input-source", "s3://bucket/empty/", *args)
    assert result.stderr == (
        "preprocess: error: no CSV (.csv, .csv.gz) or Parquet (.parquet, .pq) files under s3://bucket/empty/\n"
    )


def test_a_host_without_input_files_says_so(tmp_path: Path, container: Container) -> None:
    _csv(tmp_path / "in", "d.csv", GOOD)
    config = write_resource_config(tmp_path / "rc.json", "algo-3", HOSTS)
    shutil.move(tmp_path / "in" / "d.csv", tmp_path / "d.csv")  # algo-3's share of a 1-object input is empty
    result = run_job(
        container,
        "--input-dir",
        tmp_path / "in",
        "--output-dir",
        tmp_path / "out",
        "--resource-config",
        config,
        *BINARY,
    )
    assert result.returncode == 1
    assert "host algo-3 (3 of 3) received no CSV or Parquet files" in result.stderr
    assert "more processing instances than input objects" in result.stderr


def test_gzip_csv_is_read(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "d.csv.gz").write_bytes(gzip.compress(GOOD.encode()))
    assert main(["--input-dir", str(tmp_path / "in"), "--output-dir", str(tmp_path / "out"), "--resource-config",
                 str(tmp_path / "x"), *BINARY, "--validation-fraction", "0", "--test-fraction", "0"]) == 0  # fmt: skip
    assert load_summary(tmp_path / "out" / "summary")["rows"] == {"train": 12, "validation": 0, "test": 0}


def test_parquet_categories_hash_alike_in_every_batch(tmp_path: Path, container: Container) -> None:
    # pandas reads an integer column as float in a batch with nulls; Arrow's string cast keeps 5 as "5" everywhere.
    frame = pd.DataFrame(
        {"x": np.arange(8.0), "code": pd.array([5, 5, None, 5, 7, 5, 7, 5], dtype="Int64"), "label": [0, 1] * 4}
    )
    (tmp_path / "in").mkdir()
    frame.to_parquet(tmp_path / "in" / "d.parquet", index=False)
    args = ["--input-dir", tmp_path / "in", "--output-dir", tmp_path / "out", "--resource-config", tmp_path / "x"]
    args += [*BINARY, "--categorical-columns", "code", "--hash-buckets", "4", "--missing", "zero", "--chunk-rows", "2"]
    result = run_job(container, *args, "--validation-fraction", "0", "--test-fraction", "0")  # pyarrow 14, pandas 1.1
    assert result.returncode == 0, result.stderr
    with open(tmp_path / "out" / "train" / "train-algo-1-00000.pbr", "rb") as handle:
        features, _ = read(handle)
    block_of = {int(row[-1]): tuple(row[:-1]) for row in features.tolist()}  # sorted names: code#0..3, then x
    assert {block_of[i] for i in (0, 1, 3, 5, 7)} == {block_of[0]} and sum(block_of[0]) == 1
    assert block_of[4] == block_of[6] and sum(block_of[4]) == 1
    assert block_of[2] == (0.0, 0.0, 0.0, 0.0), "a missing category sets no indicator under --missing zero"


def test_a_bundle_without_one_of_its_modules_fails_as_in_the_container(tmp_path: Path, container: Container) -> None:
    """The container has only the bundle: preprocess.py imports its packages from its own folder, nothing else."""
    code = tmp_path / "code"
    shutil.copytree(container.bundle("preprocess").parent, code)
    (code / "containerlib" / "recordio" / "writer.py").unlink()  # left out of the bundle
    _csv(tmp_path / "in", "d.csv", GOOD)
    result = subprocess.run(
        [str(container.environment.python), str(code / "preprocess.py"), "--input-dir", str(tmp_path / "in")],
        capture_output=True, text=True, timeout=60, check=False, env=container.variables(), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1
    assert (
        result.stderr.strip().splitlines()[-1] == "ModuleNotFoundError: No module named 'containerlib.recordio.writer'"
    )


def test_a_failed_host_removes_the_files_it_already_moved_into_place(tmp_path: Path) -> None:
    host = Host("algo-2", 1, HOSTS)
    transaction = OutputTransaction(tmp_path / "out", host)
    transaction.begin()
    (tmp_path / "out" / "train" / "train-algo-1-00000.pbr").write_bytes(b"another host's file")
    built = transaction.work_dir / "train-algo-2-00000.pbr"
    built.write_bytes(b"complete")
    assert transaction.commit(built, "train") == "train/train-algo-2-00000.pbr"
    transaction.cleanup(failed=True)
    assert sorted(p.name for p in (tmp_path / "out").rglob("*") if p.is_file()) == ["train-algo-1-00000.pbr"]
    assert not transaction.work_dir.exists()
    # and a host refuses to start over output it wrote before
    transaction.begin()
    (tmp_path / "out" / "test" / "test-algo-2-00000.pbr").write_bytes(b"old")
    with pytest.raises(PreprocessError, match="already holds output of host algo-2"):
        OutputTransaction(tmp_path / "out", host).begin()


def test_the_baseline_sample_is_raw_feature_rows_split_over_hosts(tmp_path: Path, container: Container) -> None:
    """baseline/: each host's share of --baseline-rows raw rows (features in the schema's order, no label or id),
    values as read (integers stay integers, floats keep a fraction, text stays text, missing stays missing)."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "label": rng.integers(0, 2, 900),
            "count": rng.integers(0, 50, 900),
            "ratio": np.round(rng.normal(size=900), 3),
            "city": rng.choice(["Paris", "Lyon", "Nice"], 900),
            "key": [f"k{i}" for i in range(900)],
        }
    )
    frame.loc[3, "ratio"], frame.loc[4, "ratio"], frame.loc[5, "city"] = np.nan, 2.0, None
    names = write_parts(frame, tmp_path / "in")
    args = [
        "--label-column", "label", "--predictor-type", "binary_classifier", "--categorical-columns", "city",
        "--id-column", "key", "--missing", "zero", "--feature-columns", "ratio,city,count", "--baseline-rows", "500",
    ]  # fmt: skip
    parts = []
    for index, host in enumerate(HOSTS[:2]):
        share = tmp_path / f"in-{host}"
        share.mkdir()
        for name in objects_for_instance(names, "ShardedByS3Key", index, 2):
            shutil.copy(tmp_path / "in" / name, share / name)
        config = write_resource_config(tmp_path / f"{host}.json", host, HOSTS[:2])
        result = run_job(
            container, "--input-dir", share, "--output-dir", tmp_path / "out", "--resource-config", config, *args
        )
        assert result.returncode == 0, result.stderr
        parts.append((tmp_path / "out" / "baseline" / f"baseline-{host}.csv").read_text())
    samples = [pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False) for text in parts]
    assert [list(sample.columns) for sample in samples] == [["ratio", "city", "count"]] * 2
    assert [len(sample) for sample in samples] == [250, 250]
    sample = pd.concat(samples)
    assert sample["count"].str.fullmatch(r"\d+").all()  # read as integers: written as integers
    assert sample["ratio"].str.fullmatch(r"-?\d+\.\d+|").all()  # floats keep their fraction (2.0, not 2)

    def text(value: float) -> str:
        return "" if np.isnan(value) else repr(float(value))

    raw = {(text(r), c or "", str(n)) for r, c, n in zip(frame["ratio"], frame["city"], frame["count"], strict=True)}
    assert set(sample.itertuples(index=False, name=None)) <= raw  # rows of the input, as they were


def test_a_row_cut_short_far_into_the_file_fails_naming_it_instead_of_being_zero_filled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The pre-scan checks a file's first rows only. Before: Arrow refused the short row, pandas took over and filled
    its missing fields with NaN, which --missing zero then trained on as zeros without a word."""
    rows = ["label,a,b,c"] + [f"{i % 2},{i},{i * 2},{i * 3}" for i in range(3_000)]
    rows[2_500] = "1,0.5"  # data row 2,500: no b, no c
    _csv(tmp_path / "in", "t.csv", "\n\n".join(rows[:10]) + "\n" + "\n".join(rows[10:]) + "\n")  # blank lines too
    output = tmp_path / "out"
    arguments = ["--input-dir", str(tmp_path / "in"), "--output-dir", str(output), "--resource-config",
                 str(tmp_path / "absent.json"), *BINARY, "--missing", "zero"]  # fmt: skip
    assert main(arguments) == 1
    stderr = capsys.readouterr().err
    assert "t.csv" in stderr and "data row 2500 has 2 field(s) but the header names 4 (no value for 'b', 'c'" in stderr
    assert not output.exists()
