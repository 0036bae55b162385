"""Evaluate's scikit-learn baseline: fitted on the real RecordIO train shards, scored on the test shards, its report
section equal to scikit-learn's own metrics on the same arrays; the sample bound, read only as far as it needs, from
a folder or from S3; the BaselineTolerance gate.

Evaluate runs once per predictor type (module-scoped) and every test reads those reports; the classifiers' tables
are small generated ones on which LogisticRegressionCV's 50 fits converge quickly (the real tables' weakly
regularised fits ran to max_iter and made this file take minutes on a loaded machine)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn import metrics as skm
from sklearn.datasets import load_diabetes, make_classification
from sklearn.linear_model import LogisticRegressionCV, RidgeCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from support.aws_stubs import aws_session
from support.container import Container

from containerlib.recordio import write_dense
from evaluation.baseline import Shard, find_train_shards, list_train_shards, read_train_sample
from evaluation.evaluate import main
from evaluation.gate import GateSettings, decide


def split(predictor_type: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    if predictor_type == "regressor":
        X, y = load_diabetes(return_X_y=True)
    else:
        classes = 2 if predictor_type == "binary_classifier" else 3
        X, y = make_classification(
            300, 8, n_informative=5, n_classes=classes, flip_y=0.05, class_sep=0.8, random_state=1
        )  # fmt: skip
    order = np.random.default_rng(3).permutation(len(y))
    X, y = X[order].astype(np.float32), y[order].astype(np.float32)
    cut = int(len(y) * 0.7)
    return X[:cut], y[:cut], X[cut:], y[cut:]


def write_shards(folder: Path, features: np.ndarray, labels: np.ndarray, parts: int = 2) -> None:
    folder.mkdir(parents=True)
    for index, rows in enumerate(np.array_split(np.arange(len(labels)), parts)):
        with (folder / f"part-{index}.pbr").open("wb") as shard:
            write_dense(shard, features[rows], labels[rows])


def challenger_predictions(predictor_type: str, X_test: np.ndarray, y_test: np.ndarray) -> list[dict[str, Any]]:
    """Some other model's predictions (a noisy one): the baseline must not depend on them."""
    rng = np.random.default_rng(5)
    if predictor_type == "binary_classifier":
        scores = np.clip(0.7 * y_test + rng.uniform(0, 0.3, len(y_test)), 0, 1)
        return [{"score": float(s), "predicted_label": int(s > 0.5)} for s in scores]
    if predictor_type == "multiclass_classifier":
        records = []
        for label in y_test.astype(int):
            row = rng.dirichlet(np.ones(3))
            row[label] += 0.5
            row /= row.sum()
            records.append({"score": [float(v) for v in row], "predicted_label": int(row.argmax())})
        return records
    return [{"score": float(value + rng.normal(scale=80))} for value in y_test]


# the regressor's run also gates with BaselineTolerance 0 (its challenger is far below the baseline)
GATE_ARGUMENTS = {"regressor": ("--metric-threshold", "-10", "--baseline-tolerance", "0")}


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Evaluate's report per predictor type, run once for the module: (report, arrays, the run's folder)."""
    runs: dict[str, tuple[dict[str, Any], tuple, Path]] = {}

    def get(predictor_type: str) -> tuple[dict[str, Any], tuple, Path]:
        if predictor_type not in runs:
            folder = tmp_path_factory.mktemp(predictor_type)
            report, arrays = run_evaluate(folder, predictor_type, *GATE_ARGUMENTS.get(predictor_type, ()))
            runs[predictor_type] = (report, arrays, folder)
        return runs[predictor_type]

    return get


def run_evaluate(tmp_path: Path, predictor_type: str, *extra: str) -> tuple[dict[str, Any], tuple]:
    X_train, y_train, X_test, y_test = split(predictor_type)
    write_shards(tmp_path / "train", X_train, y_train)
    write_shards(tmp_path / "test", X_test, y_test, parts=1)
    (tmp_path / "predictions").mkdir()
    lines = "".join(json.dumps(r) + "\n" for r in challenger_predictions(predictor_type, X_test, y_test))
    (tmp_path / "predictions" / "part-0.pbr.out").write_text(lines)
    args = ["--predictions-dir", tmp_path / "predictions", "--test-dir", tmp_path / "test"]
    args += ["--train-dir", tmp_path / "train", "--output-dir", tmp_path / "out", "--predictor-type", predictor_type]
    assert main([*map(str, args), *extra]) == 0
    return json.loads((tmp_path / "out" / "evaluation.json").read_text()), (X_train, y_train, X_test, y_test)


def sklearn_reference(predictor_type: str, X_train, y_train):
    """The baseline as a notebook writes it, independently of evaluation/baseline.py."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if predictor_type == "regressor":
            return make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-3, 3, 13))).fit(X_train, y_train)
        model = LogisticRegressionCV(Cs=10, cv=5, scoring="neg_log_loss", max_iter=1000)
        return make_pipeline(StandardScaler(), model).fit(X_train, y_train.astype(int))


def value(section: dict[str, Any], name: str) -> float:
    return section[name]["value"]


@pytest.mark.parametrize("predictor_type", ["binary_classifier", "multiclass_classifier", "regressor"])
def test_baseline_section_equals_scikit_learns_metrics_on_the_same_arrays(evaluated: Any, predictor_type: str) -> None:
    report, (X_train, y_train, X_test, y_test), _ = evaluated(predictor_type)
    baseline = report["baseline"]
    assert baseline["train_records"] == baseline["train_channel_records"] == len(y_train)
    reference = sklearn_reference(predictor_type, X_train, y_train)
    if predictor_type == "binary_classifier":
        section = baseline["binary_classification_metrics"]
        probabilities = reference.predict_proba(X_test)[:, 1]
        predicted = reference.predict(X_test)
        assert value(section, "auc") == pytest.approx(skm.roc_auc_score(y_test, probabilities), abs=1e-9)
        assert value(section, "accuracy") == pytest.approx(skm.accuracy_score(y_test, predicted), abs=1e-12)
        assert value(section, "f1") == pytest.approx(skm.f1_score(y_test, predicted), abs=1e-12)
        assert value(section, "recall") == pytest.approx(skm.recall_score(y_test, predicted), abs=1e-12)
        assert "standard_deviation" in section["auc"]  # NaN under 200 test records, as Model Monitor writes it
    elif predictor_type == "multiclass_classifier":
        section = baseline["multiclass_classification_metrics"]
        predicted = reference.predict(X_test)
        assert value(section, "accuracy") == pytest.approx(skm.accuracy_score(y_test, predicted), abs=1e-12)
        weighted = skm.f1_score(y_test, predicted, average="weighted")
        assert value(section, "weighted_f1") == pytest.approx(weighted, abs=1e-12)
    else:
        section = baseline["regression_metrics"]
        predicted = reference.predict(X_test)
        rmse = skm.mean_squared_error(y_test, predicted) ** 0.5
        assert value(section, "rmse") == pytest.approx(rmse, rel=1e-6)
        assert value(section, "r2") == pytest.approx(skm.r2_score(y_test, predicted), rel=1e-6)
    gate = baseline["gate"]
    assert gate["metric"] == report["gate"]["metric"]
    assert gate["value"] == value(section, gate["metric"])
    assert gate["challenger_minus_baseline"] == pytest.approx(report["gate"]["value"] - gate["value"])


class CountingFile:
    """A shard's file that counts the bytes read from it."""

    def __init__(self, path: Path, counts: dict[str, int]) -> None:
        self.file, self.name, self.counts = path.open("rb"), path.name, counts

    def read(self, size: int = -1) -> bytes:
        chunk = self.file.read(size)
        self.counts[self.name] = self.counts.get(self.name, 0) + len(chunk)
        return chunk

    def close(self) -> None:
        self.file.close()


def numbered_shards(folder: Path, rows: int, parts: int = 3, width: int = 1) -> list[Path]:
    """Dense shards whose first feature is the record's number in the channel (``width`` features)."""
    features = np.zeros((rows, width), dtype=np.float32)
    features[:, 0] = np.arange(rows)
    write_shards(folder, features, np.zeros(rows, dtype=np.float32), parts)
    return sorted(folder.iterdir())


def test_the_sample_takes_each_shards_first_records_in_proportion_and_stops_reading_there(tmp_path: Path) -> None:
    paths = numbered_shards(tmp_path / "train", rows=150_000, width=16)  # 5 MB shards
    counts: dict[str, int] = {}
    shards = [Shard(str(p), p.stat().st_size, lambda p=p: CountingFile(p, counts)) for p in paths]
    sample = read_train_sample(shards, limit=600)
    rows = sample.features[:, 0].astype(int)
    expected = [*range(0, 200), *range(50_000, 50_200), *range(100_000, 100_200)]
    assert list(rows) == expected and (sample.channel_records, sample.file_count) == (None, 3)
    # read only what the sample needed: the reader's first read (1 MB) of each 5 MB shard, not the channel
    assert all(counts[p.name] <= (1 << 20) < p.stat().st_size / 4 for p in paths), counts
    again = read_train_sample(find_train_shards(tmp_path / "train"), limit=600)
    np.testing.assert_array_equal(again.features, sample.features)  # deterministic: no seed, no randomness


def test_a_channel_within_the_bound_is_read_whole_in_channel_order(tmp_path: Path) -> None:
    numbered_shards(tmp_path / "train", rows=3000)
    sample = read_train_sample(find_train_shards(tmp_path / "train"), limit=5000)
    assert list(sample.features[:, 0].astype(int)) == list(range(3000))
    assert (sample.channel_records, sample.file_count) == (3000, 3)


# 3 shards of 30,000 numbered records (48 bytes each, 1,440,000 bytes a shard), a sample of 30,000: the first 10,000
# records of each. The first shard's first range is FIRST_RANGE bytes, the next is sized by the reader from the
# records in them (10% and 64 KB over); each next shard is then asked for the same share of its bytes at once.
S3_SHARD_ROWS, S3_SAMPLE = 30_000, 30_000
S3_RANGES = [
    ("run/train/part-0.pbr", "bytes=0-65535"),
    ("run/train/part-0.pbr", "bytes=65536-586999"),
    ("run/train/part-1.pbr", "bytes=0-586999"),
    ("run/train/part-2.pbr", "bytes=0-586999"),
]
S3_SAMPLE_ROWS = [*range(0, 10_000), *range(30_000, 40_000), *range(60_000, 70_000)]


def test_the_sample_is_read_from_s3_as_far_as_it_needs(tmp_path: Path) -> None:
    """The real local S3 endpoint behind a real boto3 client: one listing, then ranged GetObjects of the shards'
    first bytes, as many as the sample takes."""

    from pipeline.local.aws_endpoint import serve
    from pipeline.local.s3 import LocalS3

    s3 = LocalS3(tmp_path / "s3")
    paths = numbered_shards(s3.path("s3://bucket/run/train"), rows=3 * S3_SHARD_ROWS)
    s3.path("s3://bucket/run/train/.hidden").write_bytes(b"not a shard")
    (tmp_path / "registry").mkdir()
    with serve(s3, tmp_path / "registry" / "registry.db", "us-east-1") as running:
        session = aws_session()
        client = session.client("s3", endpoint_url=running.url)
        shards = list_train_shards("s3://bucket/run/train", client)
        sample = read_train_sample(shards, limit=S3_SAMPLE)
        requests = running.endpoint.requests
    assert [shard.name for shard in shards] == [f"s3://bucket/run/train/part-{i}.pbr" for i in range(3)]
    assert list(sample.features[:, 0].astype(int)) == S3_SAMPLE_ROWS
    assert requests == [
        {"service": "s3", "operation": "ListObjectsV2", "parameters": {"Bucket": "bucket", "Prefix": "run/train/"}},
        *(
            {"service": "s3", "operation": "GetObject", "parameters": {"Bucket": "bucket", "Key": key, "Range": span}}
            for key, span in S3_RANGES
        ),
    ]
    assert {path.stat().st_size for path in paths} == {1_440_000}  # no shard read past its first half:
    assert all(int(span.rsplit("-", 1)[1]) < 720_000 for _, span in S3_RANGES)


def test_the_sample_makes_the_same_ranged_requests_of_s3_itself(tmp_path: Path) -> None:
    """As on SageMaker, against botocore's Stubber: the exact ListObjectsV2 and GetObject (Bucket, Key, Range)
    requests, answered with the ranges' bytes as S3 answers them (206, ContentRange)."""
    import io

    from botocore.response import StreamingBody
    from botocore.stub import Stubber

    paths = numbered_shards(tmp_path / "train", rows=3 * S3_SHARD_ROWS)
    client = aws_session().client("s3")
    stub = Stubber(client)
    contents = [{"Key": f"run/train/{path.name}", "Size": path.stat().st_size} for path in paths]
    contents.append({"Key": "run/train/.hidden", "Size": 11})
    stub.add_response(
        "list_objects_v2", {"Contents": contents, "IsTruncated": False}, {"Bucket": "bucket", "Prefix": "run/train/"}
    )
    for key, span in S3_RANGES:
        data = (tmp_path / key.replace("run/", "")).read_bytes()
        first, last = (int(value) for value in span[len("bytes=") :].split("-"))
        body = data[first : last + 1]
        response = {
            "Body": StreamingBody(io.BytesIO(body), len(body)),
            "ContentLength": len(body),
            "ContentRange": f"bytes {first}-{last}/{len(data)}",
        }
        stub.add_response("get_object", response, {"Bucket": "bucket", "Key": key, "Range": span})
    with stub:
        sample = read_train_sample(list_train_shards("s3://bucket/run/train", client), limit=S3_SAMPLE)
    stub.assert_no_pending_responses()
    assert list(sample.features[:, 0].astype(int)) == S3_SAMPLE_ROWS


def sparse_shard(path: Path, first: int, rows: int, nonzeros: int) -> None:
    """A sparse shard of ``rows`` records of 200 features with ``nonzeros`` values each, feature 0 numbering them."""
    import scipy.sparse as sp

    from containerlib.recordio import write_sparse

    columns = np.tile(np.arange(nonzeros), rows)
    values = np.ones(rows * nonzeros, dtype=np.float32)
    values[::nonzeros] = np.arange(first, first + rows)
    matrix = sp.csr_matrix((values, columns, np.arange(0, rows * nonzeros + 1, nonzeros)), shape=(rows, 200))
    with path.open("wb") as shard:
        write_sparse(shard, matrix, np.zeros(rows, dtype=np.float32))


def test_the_top_up_pass_reads_the_same_sample_from_s3_as_from_a_folder(tmp_path: Path) -> None:
    """Records of unequal sizes: the wide shard ends short of its share, the narrow ones are read again for the rest
    (a new ranged read from their start); the sample is the folder reader's, record for record."""

    from pipeline.local.aws_endpoint import serve
    from pipeline.local.s3 import LocalS3

    s3 = LocalS3(tmp_path / "s3")
    folder = s3.path("s3://bucket/train")
    folder.mkdir(parents=True)
    for index, (rows, nonzeros) in enumerate([(1000, 100), (6000, 4), (6000, 4)]):
        sparse_shard(folder / f"part-{index}.pbr", 100_000 * index, rows, nonzeros)
    expected = read_train_sample(find_train_shards(folder), limit=9000)
    with serve(s3, tmp_path / "registry.db", "us-east-1") as running:
        session = aws_session()
        sample = read_train_sample(
            list_train_shards("s3://bucket/train", session.client("s3", endpoint_url=running.url)), limit=9000
        )
        requests = running.endpoint.requests
    assert (sample.features != expected.features).nnz == 0 and sample.features.shape == (9000, 200)
    assert sample.channel_records is None and list(sample.labels) == list(expected.labels)
    # the wide shard is read whole (555,999 is its last byte) and teaches nothing; part-1 is cut at its share, and
    # part-2 asked for the same share of it at once; the top-up pass reads part-1 again from its start, then on
    assert [(request["parameters"].get("Key"), request["parameters"].get("Range")) for request in requests] == [
        (None, None),
        ("train/part-0.pbr", "bytes=0-65535"),
        ("train/part-0.pbr", "bytes=65536-555999"),
        ("train/part-1.pbr", "bytes=0-65535"),
        ("train/part-1.pbr", "bytes=65536-275927"),
        ("train/part-2.pbr", "bytes=0-275927"),
        ("train/part-1.pbr", "bytes=0-275927"),
        ("train/part-1.pbr", "bytes=275928-431999"),
    ]
    assert [path.stat().st_size for path in sorted(folder.iterdir())] == [556_000, 432_000, 432_000]


def test_baseline_tolerance_fails_the_gate_naming_both_values_and_is_off_by_default() -> None:
    baseline = {"gate": {"metric": "auc", "value": 0.735}}
    off = decide("auc", 0.69, GateSettings(0.6), None, None, baseline)
    assert off["promote"] and off["baseline_floor"] == 0.69
    assert "below the scikit-learn baseline (auc 0.735" in off["reason"]
    gated = decide("auc", 0.69, GateSettings(0.6, baseline_tolerance=0.01), None, None, baseline)
    assert not gated["promote"] and gated["baseline_floor"] == pytest.approx(0.725)
    assert "auc 0.69 reaches MetricThreshold 0.6" in gated["reason"]
    assert "NOT within BaselineTolerance 0.01 of the scikit-learn baseline (auc 0.735" in gated["reason"]
    near = decide("auc", 0.73, GateSettings(0.6, baseline_tolerance=0.01), None, None, baseline)
    assert near["promote"] and "within BaselineTolerance 0.01" in near["reason"]


def test_the_gate_with_baseline_tolerance_runs_from_the_report(evaluated: Any) -> None:
    """--baseline-tolerance 0 with a challenger far below the baseline: the decision says do not promote."""
    report, _, _ = evaluated("regressor")
    decision = report["decision"]
    assert report["gate"]["value"] < report["baseline"]["gate"]["value"]
    assert not decision["promote"]
    assert decision["baseline_value"] == report["baseline"]["gate"]["value"] == decision["baseline_floor"]


def test_baseline_runs_from_its_code_bundle_on_python_3_9(tmp_path: Path, evaluated: Any, container: Container) -> None:
    report, _, here = evaluated("binary_classifier")
    args = ["--predictions-dir", here / "predictions", "--test-dir", here / "test", "--train-dir", here / "train"]
    result = container.run("evaluate", *args, "--predictor-type", "binary_classifier", "--output-dir", tmp_path / "img")
    assert result.returncode == 0, result.stderr
    assert "evaluate: baseline (scikit-learn" in result.stdout
    in_image = json.loads((tmp_path / "img" / "evaluation.json").read_text())["baseline"]
    # scikit-learn 1.2.1's lbfgs stops at a slightly different optimum than this interpreter's scikit-learn
    assert in_image["gate"]["value"] == pytest.approx(report["baseline"]["gate"]["value"], abs=2e-3)


def test_sparse_train_shards_fit_a_baseline_without_centring(tmp_path: Path) -> None:
    import scipy.sparse as sp

    from containerlib.recordio import write_sparse
    from evaluation.baseline import fit_baseline

    # non-negative features, half of them zero: a sparse table (breast cancer's unscaled fits took minutes here)
    X, y = make_classification(300, 8, n_informative=5, flip_y=0.05, class_sep=1.5, random_state=1)
    X_train, y_train = np.maximum(X, 0).astype(np.float32), y.astype(np.float32)
    (tmp_path / "train").mkdir()
    with (tmp_path / "train" / "part-0.pbr").open("wb") as shard:
        write_sparse(shard, sp.csr_matrix(X_train), y_train)
    sample = read_train_sample(find_train_shards(tmp_path / "train"))
    assert sp.issparse(sample.features) and sample.features.shape == X_train.shape
    estimator = fit_baseline(sample, "binary_classifier")
    assert estimator.steps[0][1].with_mean is False
    assert skm.roc_auc_score(y_train, estimator.predict_proba(X_train)[:, 1]) > 0.9


def test_train_shards_without_labels_fail_naming_the_shard(tmp_path: Path) -> None:
    from evaluation import EvaluationError

    (tmp_path / "train").mkdir()
    with (tmp_path / "train" / "part-0.pbr").open("wb") as shard:
        write_dense(shard, np.ones((5, 2), dtype=np.float32), None)
    with pytest.raises(EvaluationError, match=r"train shard .*part-0.pbr: records from 0 on have no label"):
        read_train_sample(find_train_shards(tmp_path / "train"))
