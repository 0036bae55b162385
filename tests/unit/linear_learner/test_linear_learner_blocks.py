"""The train channel read from disk in blocks: every record once per epoch in a seeded shuffled block order, the
same mini-batches count as in memory, bounded blocks, the same models within noise."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer, load_digits

from containerlib.recordio import write_dense, write_sparse
from pipeline.core.errors import AlgorithmInputError
from pipeline.linear_learner import blocks
from pipeline.linear_learner.blocks import write_blocks
from pipeline.linear_learner.collective import LocalCollective
from pipeline.linear_learner.data import open_channel
from pipeline.linear_learner.final_metrics import evaluate
from pipeline.linear_learner.hyperparameters import parse_hyperparameters
from pipeline.linear_learner.trainer import Dataset, _batches, fit


def pieces(data: Dataset, size: int) -> list[Dataset]:
    return [Dataset(data.features[i : i + size], data.labels[i : i + size]) for i in range(0, data.rows, size)]


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 4 * 10 * 64)  # 64 records of 10 features per block


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_blocks_hold_every_record_once_in_a_seeded_order(tmp_path: Path, small_blocks: None, sparse: bool) -> None:
    rng = np.random.default_rng(3)
    features = (rng.random((1000, 10)) < 0.3) * rng.normal(size=(1000, 10))
    data = Dataset(sp.csr_matrix(features, dtype=np.float32) if sparse else features.astype(np.float32),
                   rng.integers(0, 3, 1000).astype(np.float32))  # fmt: skip
    channel = write_blocks(tmp_path / "blocks", pieces(data, 37), multiple_of=10)
    assert channel.rows == 1000 and channel.dim == 10 and channel.sparse == sparse
    assert set(channel.sizes[:-1]) == {60} and channel.sizes[-1] == 1000 - 60 * 16, "whole batches of 10 per block"

    def dense(matrix) -> np.ndarray:
        return matrix.toarray() if sp.issparse(matrix) else matrix

    in_file_order = list(channel.blocks())
    np.testing.assert_array_equal(np.vstack([dense(b.features) for b in in_file_order]), features.astype(np.float32))
    np.testing.assert_array_equal(np.concatenate([b.labels for b in in_file_order]), data.labels)
    first = [b.labels.copy() for b in channel.blocks(np.random.default_rng(1))]
    again = [b.labels.copy() for b in channel.blocks(np.random.default_rng(1))]
    other = [b.labels.copy() for b in channel.blocks(np.random.default_rng(2))]
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True)), "seeded"
    assert not all(np.array_equal(a, b) for a, b in zip(first, in_file_order and [b.labels for b in in_file_order],
                                                           strict=True)), "shuffled"  # fmt: skip
    assert sorted(np.concatenate(other).tolist()) == sorted(data.labels.tolist()), "every record once"
    head = channel.head(130)
    np.testing.assert_array_equal(dense(head.features), features[:130].astype(np.float32))
    np.testing.assert_array_equal(channel.label_histogram(4), np.bincount(data.labels.astype(int), minlength=4))


def test_mini_batches_are_those_of_memory_in_another_order(tmp_path: Path, small_blocks: None) -> None:
    rng = np.random.default_rng(5)
    data = Dataset(rng.normal(size=(997, 10)).astype(np.float32), np.arange(997, dtype=np.float32))
    channel = write_blocks(tmp_path / "blocks", pieces(data, 100), multiple_of=10)
    in_memory = list(_batches(data, 10, lambda labels: labels))
    for seed in range(3):
        streamed = list(_batches(channel, 10, lambda labels: labels, np.random.default_rng(seed)))
        assert len(streamed) == len(in_memory) == 100, "every host takes ceil(records / batch) steps per epoch"
        assert sorted(len(labels) for _, labels in streamed) == sorted(len(labels) for _, labels in in_memory)
        assert sorted(np.concatenate([labels for _, labels in streamed]).tolist()) == data.labels.tolist()


def write_recordio(path: Path, features, labels, sparse: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        (write_sparse if sparse else write_dense)(out, features, labels)
    return path


def test_streamed_training_matches_in_memory_training(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 4 * 30 * 96)  # several blocks of 96 records
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    X, y = X[order].astype(np.float32), y[order].astype(np.float32)
    train, test = Dataset(X[:450], y[:450]), Dataset(X[450:], y[450:])
    files = [write_recordio(tmp_path / "train" / f"part-{i}.pbr", X[i * 150:(i + 1) * 150], y[i * 150:(i + 1) * 150])
             for i in range(3)]  # fmt: skip
    channel = open_channel("train", files, "application/x-recordio-protobuf", tmp_path / "blocks",
                           feature_dim=30, predictor_type="binary_classifier", num_classes=2,
                           multiple_of=32)  # fmt: skip
    assert len(channel.sizes) == 5
    hp = parse_hyperparameters({"predictor_type": "binary_classifier", "mini_batch_size": "32", "epochs": "10"})
    streamed = evaluate(hp, fit(hp, channel, None, LocalCollective(), lambda line: None).model, test)
    in_memory = evaluate(hp, fit(hp, train, None, LocalCollective(), lambda line: None).model, test)
    streamed, in_memory = dict((k, v) for _, k, v in streamed), dict((k, v) for _, k, v in in_memory)
    assert streamed["roc_auc_score"] > 0.97 and abs(streamed["roc_auc_score"] - in_memory["roc_auc_score"]) < 0.02
    assert abs(streamed["binary_classification_accuracy"] - in_memory["binary_classification_accuracy"]) < 0.05


def test_multiclass_blocks_and_validation_channel_on_disk(tmp_path: Path, small_blocks: None) -> None:
    X, y = load_digits(return_X_y=True)
    X, y = (X / 16).astype(np.float32), y.astype(np.float32)
    train = write_recordio(tmp_path / "t.pbr", sp.csr_matrix(X[:1400]), y[:1400], sparse=True)
    validation = write_recordio(tmp_path / "v.pbr", X[1400:], y[1400:])
    settings = {"feature_dim": 64, "predictor_type": "multiclass_classifier", "num_classes": 10}
    train_channel = open_channel("train", [train], "application/x-recordio-protobuf", tmp_path / "bt",
                                 multiple_of=64, **settings)  # fmt: skip
    validation_channel = open_channel("validation", [validation], "application/x-recordio-protobuf", tmp_path / "bv",
                                      **settings)  # fmt: skip
    assert train_channel.sparse and len(train_channel.sizes) > 1 and len(validation_channel.sizes) > 1
    hp = parse_hyperparameters({"predictor_type": "multiclass_classifier", "num_classes": "10",
                                "mini_batch_size": "64", "epochs": "10", "feature_dim": "64"})  # fmt: skip
    model = fit(hp, train_channel, validation_channel, LocalCollective(), lambda line: None).model
    metrics = {k: v for _, k, v in evaluate(hp, model, validation_channel)}
    assert metrics["multiclass_accuracy"] > 0.85


def test_a_bad_record_in_a_later_piece_is_named_by_its_index_in_the_file(tmp_path: Path) -> None:
    labels = np.zeros(10_000, dtype=np.float32)
    labels[9_000] = 3
    path = write_recordio(tmp_path / "t.pbr", np.ones((10_000, 2), dtype=np.float32), labels)
    with pytest.raises(AlgorithmInputError, match=r"t\.pbr: record 9000 \(0-based\) has label 3\.0"):
        open_channel("train", [path], "application/x-recordio-protobuf", tmp_path / "b", feature_dim=2,
                     predictor_type="binary_classifier", num_classes=2)  # fmt: skip
