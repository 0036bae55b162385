"""The Evaluate job's inputs as Preprocess and Transform write them: RecordIO test shards (of every kind SageMaker may
hand over) and the matching jsonlines predictions, for seeded labels and scores of each predictor type."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np

from containerlib.recordio import write_dense

SHARD_NAMES = ("part-0.recordio", "part-1.recordio", "nested/part-2.recordio")


def write_job_inputs(
    root: Path, labels: np.ndarray, predictions: list[dict[str, Any]], shard_names: tuple[str, ...] = SHARD_NAMES
) -> tuple[Path, Path, Path]:
    """Splits records over RecordIO test shards and matching ``.out`` files, as Preprocess and Transform write them."""
    test_dir, predictions_dir, output_dir = root / "test", root / "predictions", root / "evaluation"
    features = np.random.default_rng(7).normal(size=(len(labels), 3)).astype(np.float32)
    bounds = np.linspace(0, len(labels), len(shard_names) + 1).astype(int)
    for name, start, stop in zip(shard_names, bounds[:-1], bounds[1:], strict=True):
        (test_dir / name).parent.mkdir(parents=True, exist_ok=True)
        with (test_dir / name).open("wb") as shard:
            write_dense(shard, features[start:stop], labels[start:stop])
        (predictions_dir / name).parent.mkdir(parents=True, exist_ok=True)
        lines = "".join(json.dumps(record) + "\n" for record in predictions[start:stop])
        (predictions_dir / f"{name}.out").write_text(lines, encoding="utf-8")
    return predictions_dir, test_dir, output_dir


def binary_case(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seeded binary labels, scores with ties and the labels a calibrated threshold predicts."""
    generator = np.random.default_rng(seed)
    labels = (generator.random(n) < 0.3).astype(np.float32)
    scores = 1 / (1 + np.exp(-(2.5 * labels - 1.2 + generator.normal(scale=1.2, size=n))))
    scores = np.round(scores, 3)  # ties, as real scores have, so curve thinning and tie handling are exercised
    predicted = (scores > 0.4).astype(int)  # a calibrated threshold, not 0.5
    return labels, scores, predicted


def write_binary_inputs(tmp_path: Path) -> tuple[Path, Path]:
    """Sixty binary records over the three test shards and their predictions: (predictions dir, test dir)."""
    labels, scores, predicted = binary_case(60)
    records = [{"score": float(s), "predicted_label": int(p)} for s, p in zip(scores, predicted, strict=True)]
    predictions_dir, test_dir, _ = write_job_inputs(tmp_path, labels, records)
    return predictions_dir, test_dir


def predictions_for(predictor_type: str, loss: str, n: int) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Labels and Linear Learner's jsonlines records for one predictor type and loss."""
    generator = np.random.default_rng(5)
    if predictor_type == "binary_classifier":
        labels, scores, predicted = binary_case(n)
        if loss == "hinge_loss":  # a margin: any real number, positive means class 1
            scores = np.log(scores + 1e-3) - np.log(1 - scores + 1e-3)
        return labels, [{"score": float(s), "predicted_label": int(p)} for s, p in zip(scores, predicted, strict=True)]
    if predictor_type == "multiclass_classifier":
        labels = generator.integers(0, 3, size=n).astype(np.float32)
        probabilities = generator.dirichlet(np.ones(3), size=n)
        probabilities[np.arange(n), labels.astype(int)] += 0.5
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        return labels, [
            {"score": [float(v) for v in row], "predicted_label": int(np.argmax(row))} for row in probabilities
        ]
    labels = generator.normal(10, 3, size=n).astype(np.float32)
    return labels, [{"score": float(y + generator.normal())} for y in labels]


def write_shards_of_every_kind(root: Path, labels: np.ndarray, predictions: list[dict[str, Any]]) -> tuple[Path, Path]:
    """Test shards as SageMaker may hand them to Evaluate: a one-record dense shard, a one-record sparse shard, a
    dense shard whose records are split with dmlc's continuation flag, and a sparse shard; with their ``.out`` files."""
    from scipy import sparse

    from containerlib.recordio import write_sparse
    from support.protobuf_oracle import MAGIC_AS_FLOAT32, dmlc_split_frames, payloads

    test_dir, predictions_dir = root / "test", root / "predictions"
    test_dir.mkdir(parents=True)
    predictions_dir.mkdir(parents=True)
    n = len(labels)
    features = np.random.default_rng(3).normal(size=(n, 6)).astype(np.float32)
    features[::3, 2] = 0.0
    features[2:, 0] = MAGIC_AS_FLOAT32  # an aligned magic number inside a payload: dmlc's writer splits there
    half = 2 + (n - 2) // 2
    parts = [("a-one-dense", 0, 1, False), ("b-one-sparse", 1, 2, True), ("c-split", 2, half, False)]
    parts.append(("d-sparse", half, n, True))
    for name, start, stop, is_sparse in parts:
        out = io.BytesIO()
        if is_sparse:
            write_sparse(out, sparse.csr_matrix(features[start:stop]), labels[start:stop])
        else:
            write_dense(out, features[start:stop], labels[start:stop])
        data = out.getvalue()
        if name == "c-split":
            data = b"".join(dmlc_split_frames(payload) for payload in payloads(data))
            assert any(int.from_bytes(data[i : i + 4], "little") >> 29 == 1 for i in range(4, len(data), 4))
        (test_dir / name).write_bytes(data)
        lines = "".join(json.dumps(record) + "\n" for record in predictions[start:stop])
        (predictions_dir / f"{name}.out").write_text(lines, encoding="utf-8")
    return predictions_dir, test_dir
