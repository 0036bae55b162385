"""The local Linear Learner as a job: one process per instance on real RecordIO shards, synchronous gradients,
failure paths (bad hyperparameters, more instances than shards, a corrupt shard, a crashed peer), batch transform
from the artifact alone, and the ``llpipe linear-learner`` command."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris
from sklearn.linear_model import LogisticRegressionCV
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from support.mxnet_oracle import check_service_layout

from containerlib.linear_learner.model import read_model
from containerlib.recordio import write_dense
from pipeline.cli import main as llpipe
from pipeline.linear_learner.artifact import save_model
from pipeline.linear_learner.collective import ClientCollective, CollectiveAborted, ParameterServer
from pipeline.linear_learner.hyperparameters import parse_hyperparameters
from pipeline.linear_learner.launcher import Channel, TrainingError, train, transform
from pipeline.linear_learner.trainer import Dataset, fit

BINARY = {"predictor_type": "binary_classifier", "epochs": "12", "num_models": "8"}


def write_recordio(path, X, y=None):
    with path.open("wb") as stream:
        write_dense(stream, np.asarray(X, dtype=np.float32), None if y is None else np.asarray(y, dtype=np.float32))
    return path


@pytest.fixture(scope="module")
def cancer(tmp_path_factory):
    """Breast cancer as RecordIO: 4 uneven train shards, validation, test, and test features without labels."""
    root = tmp_path_factory.mktemp("cancer")
    X, y = load_breast_cancer(return_X_y=True)
    X_rest, X_test, y_rest, y_test = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    X_train, X_val, y_train, y_val = train_test_split(X_rest, y_rest, test_size=0.2, random_state=0, stratify=y_rest)
    bounds = [0, 130, 230, 300, len(y_train)]  # 130, 100, 70 and 40 records: uneven shards
    shards = [
        write_recordio(root / f"train-{i}.pbr", X_train[a:b], y_train[a:b])
        for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True))
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        baseline = make_pipeline(StandardScaler(), LogisticRegressionCV(Cs=5, cv=3, max_iter=5000)).fit(X_rest, y_rest)
    return {
        "train": shards,
        "validation": [write_recordio(root / "validation.pbr", X_val, y_val)],
        "test": [write_recordio(root / "test.pbr", X_test, y_test)],
        "features": write_recordio(root / "features.pbr", X_test),
        "y_test": y_test,
        "baseline_auc": roc_auc_score(y_test, baseline.predict_proba(X_test)[:, 1]),
    }


def channels(data, train_distribution="ShardedByS3Key"):
    return {
        "train": Channel(data["train"], train_distribution),
        "validation": Channel(data["validation"]),
        "test": Channel(data["test"]),
    }


@pytest.mark.parametrize("instances", [1, 2, 4])
def test_one_two_and_four_instances_reach_the_same_quality(cancer, tmp_path, instances):
    lines: list[str] = []
    # the same global batch (64 records per step) whatever the instance count
    hyperparameters = {**BINARY, "mini_batch_size": str(64 // instances)}
    result = train(
        hyperparameters,
        channels(cancer),
        tmp_path / "out",
        instance_count=instances,
        work_dir=tmp_path / "work",
        on_log=lines.append,
    )
    assert result.model_path == tmp_path / "out" / "model.tar.gz" and result.model_path.is_file()
    assert json.loads((tmp_path / "out" / "metrics.json").read_text()) == pytest.approx(result.metrics)
    # the artifact is the service's; what the run needs beyond it lies beside it
    check_service_layout(result.model_path.read_bytes())
    training = json.loads((tmp_path / "out" / "training.json").read_text())
    assert training == {"epochs_run": result.epochs_run, "hyperparameters": result.hyperparameters}
    assert 1 <= result.epochs_run <= int(BINARY.get("epochs", "15"))
    assert result.hyperparameters["predictor_type"] == "binary_classifier"
    assert result.metrics["test:roc_auc_score"] >= cancer["baseline_auc"] - 0.01
    assert result.metrics["validation:objective_loss"] < 0.2
    for index in range(instances):
        host = f"algo-{index + 1}"
        assert any(
            f"[{host}]" in line and f"#throughput_metric: host={host}, train throughput=" in line for line in lines
        )
        # every host saw only its ShardedByS3Key share of the train files
        shard = sorted(p.name for p in (tmp_path / "work" / host / "input" / "data" / "train").iterdir())
        assert len(shard) == len(cancer["train"][index::instances])
    assert any("#test_score (algo-1) : ('roc_auc_score', " in line for line in lines)


def test_two_instances_are_one_instance_with_a_double_batch(tmp_path):
    """Gradients summed over hosts every step: host batches of 2 + 2 equal one batch of 4 (same records). Batches
    this small keep the 80 records at the trainer's minimum of 20 updates an epoch, so no batch is shrunk."""
    X, y = load_iris(return_X_y=True)
    X, y = X[y < 2], y[y < 2]  # setosa vs versicolor as a binary problem
    order = np.random.default_rng(0).permutation(len(y))
    X, y = X[order][:80], y[order][:80]
    first, second = (X[:40], y[:40]), (X[40:], y[40:])
    # one file whose k-th 4-record batch is the k-th 2-record batch of each shard
    interleaved = np.concatenate([np.r_[2 * k : 2 * k + 2, 40 + 2 * k : 42 + 2 * k] for k in range(20)])
    single = write_recordio(tmp_path / "all.pbr", X[interleaved], y[interleaved])
    shards = [write_recordio(tmp_path / "a.pbr", *first), write_recordio(tmp_path / "b.pbr", *second)]
    common = {
        "predictor_type": "binary_classifier",
        "epochs": "3",
        "num_models": "4",
        "use_lr_scheduler": "false",
        "binary_classifier_model_selection_criteria": "loss_function",
    }
    one = train(
        {**common, "mini_batch_size": "4"},
        {"train": Channel([single], "ShardedByS3Key")},
        tmp_path / "one",
        instance_count=1,
    )
    two = train(
        {**common, "mini_batch_size": "2"},
        {"train": Channel(shards, "ShardedByS3Key")},
        tmp_path / "two",
        instance_count=2,
    )
    model_one, model_two = read_model(one.model_path), read_model(two.model_path)
    np.testing.assert_allclose(model_two.weights, model_one.weights, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(model_two.bias, model_one.bias, rtol=1e-5, atol=1e-5)


def test_a_killed_trainings_exchange_folder_is_removed_by_the_next_one(tmp_path, monkeypatch):
    """Before: the shared-memory exchange folder had a random name, so one left by a launcher killed with SIGKILL
    (which skips the clean-up) stayed in /dev/shm for good: 24 of them there after a day of tests."""
    from pipeline.core.stale import LEGACY_AGE_SECONDS
    from pipeline.linear_learner import shared

    monkeypatch.setattr(shared, "exchange_folder", lambda: tmp_path / "shm")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    kept = ["new", f"llpipe-exchange-{os.getpid()}-live", "llpipe-exchange-fresh0ab"]
    for name in [f"llpipe-exchange-{int(dead.stdout)}-dead", "llpipe-exchange-old1x2y3", *kept]:
        (tmp_path / "shm" / name).mkdir(parents=True)
    old = time.time() - LEGACY_AGE_SECONDS - 60
    os.utime(tmp_path / "shm" / "llpipe-exchange-old1x2y3", (old, old))
    X, y = load_iris(return_X_y=True)
    shards = [write_recordio(tmp_path / f"{i}.pbr", X[i::2][:20], (y[i::2][:20] > 0).astype(float)) for i in (0, 1)]
    with pytest.raises(TrainingError, match="mini_batch_size"):  # fails at once, after the exchange was made
        train(
            {**BINARY, "mini_batch_size": "0"},
            {"train": Channel(shards, "ShardedByS3Key")},
            tmp_path / "out",
            instance_count=2,
        )
    assert sorted(path.name for path in (tmp_path / "shm").iterdir()) == sorted(kept)


def test_more_instances_than_shards_fails_the_job_clearly(cancer, tmp_path):
    with pytest.raises(TrainingError) as error:
        train(BINARY, {"train": Channel(cancer["train"][:2], "ShardedByS3Key")}, tmp_path / "out", instance_count=3)
    assert "algo-3" in str(error.value) and "more instances (3) than shards" in str(error.value)
    assert not (tmp_path / "out" / "model.tar.gz").exists()


def test_invalid_hyperparameters_fail_before_reading_data_with_output_failure(cancer, tmp_path):
    with pytest.raises(TrainingError) as error:
        train({**BINARY, "mini_batch_size": "0"}, channels(cancer), tmp_path / "out", work_dir=tmp_path / "work")
    message = str(error.value)
    assert "algo-1" in message and "ClientError: Hyperparameter 'mini_batch_size' has the invalid value '0'" in message
    failure = (tmp_path / "work" / "algo-1" / "output" / "failure").read_text()
    assert "mini_batch_size" in failure and not (tmp_path / "out").exists()


def _timed_out(lines: list[str]) -> list[str]:
    """The lines saying an instance or the parameter server gave up waiting (a heartbeat or a connection timed
    out): a job that ends promptly because an instance failed says none; one left hanging until then does."""
    return [line for line in lines if "sent no update" in line or "in time" in line or "did not connect" in line]


def test_a_corrupt_shard_fails_the_job_naming_the_host_and_file(cancer, tmp_path):
    corrupt = tmp_path / "train-1.pbr"
    corrupt.write_bytes(cancer["train"][1].read_bytes()[:-7])  # truncated mid-record
    lines: list[str] = []
    with pytest.raises(TrainingError) as error:
        train(
            BINARY,
            {"train": Channel([cancer["train"][0], corrupt], "ShardedByS3Key")},
            tmp_path / "out",
            instance_count=2,
            on_log=lines.append,
        )
    assert "algo-2 failed" in str(error.value) and "train-1.pbr" in str(error.value)
    assert _timed_out([str(error.value), *lines]) == []  # algo-1, blocked in the scaler allreduce, did not hang


def test_an_instance_killed_mid_training_fails_the_job_promptly_naming_it(cancer, tmp_path):
    killed: list[int] = []

    def kill_algo_2_at_epoch_2(line: str) -> None:
        # log lines carry the instance's pid: "[algo-2] [date time INFO <pid>] #quality_metric: ..., epoch=2, ..."
        if not killed and line.startswith("[algo-2]") and "epoch=2," in line:
            pid = int(line.split("]")[1].split()[-1])
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    lines: list[str] = []

    def log(line: str) -> None:
        lines.append(line)
        kill_algo_2_at_epoch_2(line)

    with pytest.raises(TrainingError) as error:
        train(
            {**BINARY, "epochs": "500", "mini_batch_size": "8"},
            channels(cancer),
            tmp_path / "out",
            instance_count=2,
            on_log=log,
        )
    assert killed and "algo-2 was killed (SIGKILL, not sent by llpipe)" in str(error.value)
    assert _timed_out([str(error.value), *lines]) == []  # 500 epochs not waited for; algo-1 did not hang
    assert not (tmp_path / "out").exists()


def test_a_crashed_peer_makes_the_others_fail_promptly():
    server = ParameterServer(2, b"secret-key", timeout=30)
    server.start()
    host, port = server.address
    peer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import os, numpy as np\n"
                "from pipeline.linear_learner.collective import ClientCollective\n"
                f"c = ClientCollective(({host!r}, {port}), b'secret-key', 1, 2)\n"
                "c.allreduce(np.ones(3))\n"
                "os._exit(17)  # crash without closing anything\n"
            ),
        ]
    )
    try:
        with contextlib.closing(ClientCollective((host, port), b"secret-key", 0, 2, timeout=30)) as collective:
            np.testing.assert_array_equal(collective.allreduce(np.arange(3.0)), [1.0, 2.0, 3.0])
            with pytest.raises(CollectiveAborted, match="another instance failed"):
                collective.allreduce(np.arange(3.0))
        assert not server.stalled, server.error  # the crash ended the round, not the server's 30 s heartbeat
        assert peer.wait(timeout=10) == 17
    finally:
        server.stop()
        peer.kill()


def test_transform_reads_only_the_artifact_and_matches_the_in_memory_model(cancer, tmp_path):
    from containerlib.recordio import read

    with cancer["train"][0].open("rb") as stream:
        X, y = read(stream)
    hp = parse_hyperparameters({**BINARY, "mini_batch_size": "16"})
    model = fit(hp, Dataset(X, y), None, _Single(), lambda line: None).model
    artifact = tmp_path / "model.tar.gz"
    save_model(model, artifact)
    [output] = transform(artifact, [cancer["features"]], tmp_path / "predictions")
    assert output == tmp_path / "predictions" / "features.pbr.out"
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    with cancer["features"].open("rb") as stream:
        features, _ = read(stream)
    expected_scores, expected_labels = model.predict(features)
    assert len(rows) == features.shape[0] == len(cancer["y_test"])
    assert [r["score"] for r in rows] == expected_scores.tolist()
    assert [r["predicted_label"] for r in rows] == expected_labels.tolist()
    assert set(rows[0]) == {"score", "predicted_label"}


class _Single:
    rank, size = 0, 1

    def allreduce(self, vector):
        return np.asarray(vector, dtype=np.float64)


def test_transform_output_format_for_multiclass_and_regression(tmp_path):
    X, y = load_iris(return_X_y=True)
    hp = parse_hyperparameters(
        {
            "predictor_type": "multiclass_classifier",
            "num_classes": "3",
            "epochs": "2",
            "num_models": "2",
            "mini_batch_size": "30",
        }
    )
    save_model(
        fit(hp, Dataset(X.astype(np.float32), y.astype(np.float32)), None, _Single(), lambda line: None).model,
        tmp_path / "multi.tar.gz",
    )
    X_r, y_r = load_diabetes(return_X_y=True)
    hp = parse_hyperparameters(
        {"predictor_type": "regressor", "epochs": "2", "num_models": "2", "mini_batch_size": "50"}
    )
    save_model(
        fit(hp, Dataset(X_r.astype(np.float32), y_r.astype(np.float32)), None, _Single(), lambda line: None).model,
        tmp_path / "reg.tar.gz",
    )
    iris_csv = tmp_path / "iris.csv"
    np.savetxt(iris_csv, X[:5], delimiter=",")
    diabetes_csv = tmp_path / "diabetes.csv"
    np.savetxt(diabetes_csv, X_r[:4], delimiter=",")
    [multi] = transform(tmp_path / "multi.tar.gz", [iris_csv], tmp_path / "m", content_type="text/csv")
    [reg] = transform(tmp_path / "reg.tar.gz", [diabetes_csv], tmp_path / "r", content_type="text/csv")
    multi_rows = [json.loads(line) for line in multi.read_text().splitlines()]
    assert len(multi_rows) == 5 and all(len(r["score"]) == 3 and r["predicted_label"] in (0, 1, 2) for r in multi_rows)
    assert all(abs(sum(r["score"]) - 1.0) < 1e-6 for r in multi_rows)
    reg_rows = [json.loads(line) for line in reg.read_text().splitlines()]
    assert len(reg_rows) == 4 and all(set(r) == {"score"} and 25 < r["score"] < 346 for r in reg_rows)
    with pytest.raises(ValueError, match="records have 4 features; the model expects 10"):
        transform(tmp_path / "reg.tar.gz", [iris_csv], tmp_path / "bad", content_type="text/csv")
    assert not list((tmp_path / "bad").glob("*"))


def test_llpipe_linear_learner_train_and_transform_with_csv(tmp_path, capsys):
    X, y = load_breast_cancer(return_X_y=True)
    for name, rows in (("train", slice(0, 400)), ("validation", slice(400, 569))):
        (tmp_path / name).mkdir()
        np.savetxt(tmp_path / name / f"{name}.csv", np.column_stack([y[rows], X[rows]]), delimiter=",")
    (tmp_path / "score").mkdir()
    np.savetxt(tmp_path / "score" / "batch.csv", X[400:], delimiter=",")
    hyperparameters = json.dumps({**BINARY, "mini_batch_size": "32"})
    code = llpipe(
        [
            "linear-learner",
            "train",
            "--train",
            str(tmp_path / "train"),
            "--validation",
            str(tmp_path / "validation"),
            "--hyperparameters",
            hyperparameters,
            "--output",
            str(tmp_path / "model"),
            "--content-type",
            "text/csv",
        ]
    )
    assert code == 0
    shown = capsys.readouterr().out
    assert "100.0 % of epochs" in shown and "validation:roc_auc_score" in shown  # progress bar, then summary
    metrics = json.loads((tmp_path / "model" / "metrics.json").read_text())
    assert metrics["validation:roc_auc_score"] > 0.97
    assert (
        llpipe(
            [
                "linear-learner",
                "transform",
                "--model",
                str(tmp_path / "model" / "model.tar.gz"),
                "--input",
                str(tmp_path / "score"),
                "--output",
                str(tmp_path / "out"),
                "--content-type",
                "text/csv",
            ]
        )
        == 0
    )
    assert len((tmp_path / "out" / "batch.csv.out").read_text().splitlines()) == 169
    # malformed CSV: the error names the file, row and column
    (tmp_path / "train" / "train.csv").write_text("1,2.0,3.0\n0,abc,1.0\n")
    capsys.readouterr()
    code = llpipe(
        [
            "linear-learner",
            "train",
            "--train",
            str(tmp_path / "train"),
            "--hyperparameters",
            hyperparameters,
            "--output",
            str(tmp_path / "model2"),
            "--content-type",
            "text/csv",
            "--quiet",
        ]
    )
    error = capsys.readouterr().err
    assert code == 1 and "train.csv: row 2, column 2 is 'abc'" in error


class _ScriptedProcess:
    """A process whose poll() answers from a script (None while running, then its exit code): which instance ends
    first is the question, so it is fixed here rather than left to the scheduler."""

    def __init__(self, *answers: int | None) -> None:
        self.answers = list(answers)

    def poll(self) -> int | None:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def _roots_with_failures(tmp_path, *texts: str) -> list:
    roots = []
    for index, text in enumerate(texts, start=1):
        root = tmp_path / f"algo-{index}"
        (root / "output").mkdir(parents=True)
        (root / "output" / "failure").write_text(text)
        roots.append(root)
    return roots


def test_the_failure_reported_is_the_one_that_aborted_the_others_even_when_it_ends_last(tmp_path):
    """Before: once any instance had ended, the launcher slept 0.3 s and named the first failed one; an instance
    aborted by its peer's failure (exit 3) that ended more than 0.3 s before that peer was named as the cause."""
    import queue
    import threading

    from pipeline.linear_learner.launcher import EXIT_ABORTED, _wait

    roots = _roots_with_failures(tmp_path, "AlgorithmError: another instance failed", "ClientError: bad shard x.pbr")
    aborted_first = _ScriptedProcess(EXIT_ABORTED)
    fails_later = _ScriptedProcess(*[None] * 12, 1)  # still running for a dozen polls after algo-1 ended
    failure = _wait([aborted_first, fails_later], roots, queue.Queue(), lambda line: None, threading.Event())
    assert failure == "algo-2 failed (exit code 1): ClientError: bad shard x.pbr"


def test_when_every_instance_was_aborted_the_first_is_reported_once_all_have_ended(tmp_path):
    import queue
    import threading

    from pipeline.linear_learner.launcher import EXIT_ABORTED, _wait

    roots = _roots_with_failures(tmp_path, "AlgorithmError: server gone", "AlgorithmError: server gone")
    processes = [_ScriptedProcess(None, None, EXIT_ABORTED), _ScriptedProcess(EXIT_ABORTED)]
    failure = _wait(processes, roots, queue.Queue(), lambda line: None, threading.Event())
    assert failure == f"algo-1 failed (exit code {EXIT_ABORTED}): AlgorithmError: server gone"


def test_a_peer_named_silent_is_reported_at_once_unless_a_host_failed_of_its_own(tmp_path):
    """Before: an instance that found its peer silent past the heartbeat (shared-memory exchange) exited as aborted
    (exit 3), so the launcher waited ROOT_CAUSE_WAIT_SECONDS (30 s) for the stopped peer to end before reporting
    it (the heartbeat test took 33 s with a 2 s heartbeat). The stopped peer never ends: the report naming it is the
    root cause (exit 4), taken at once; a host that failed of its own is still named first."""
    import queue
    import threading

    from pipeline.linear_learner.launcher import EXIT_PEER_SILENT, _wait

    said = "AlgorithmError: algo-2 sent no update for 2 s: the instance is stopped or hung"
    roots = _roots_with_failures(tmp_path, said, "", "")
    processes = [_ScriptedProcess(EXIT_PEER_SILENT), _ScriptedProcess(None)]  # algo-2 SIGSTOPped: it never ends
    failure = _wait(processes, roots[:2], queue.Queue(), lambda line: None, threading.Event())
    assert failure == f"algo-1 failed (exit code {EXIT_PEER_SILENT}): {said}"
    (roots[1] / "output" / "failure").write_text("AlgorithmError: MemoryError: ")
    processes = [_ScriptedProcess(EXIT_PEER_SILENT), _ScriptedProcess(1), _ScriptedProcess(None)]
    failure = _wait(processes, roots, queue.Queue(), lambda line: None, threading.Event())
    assert failure == "algo-2 failed (exit code 1): AlgorithmError: MemoryError:"
