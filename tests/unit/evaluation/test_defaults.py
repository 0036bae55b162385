"""A tuned run's untuned defaults' model: Evaluate downloads it (the exact S3 request, botocore Stubber), scores it on
the same real test shards, and the gate refuses a tuned model worse than it beyond the noise, saying so."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import boto3
import numpy as np
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber
from sklearn import metrics as skm

from containerlib.linear_learner.model import LinearModel
from containerlib.linear_learner.writer import artifact_bytes
from containerlib.recordio import write_dense
from evaluation.gate import GateSettings
from evaluation.job import evaluate

URI = "s3://models-bucket/pipeline/run-1/train/job/output/model.tar.gz"


def inputs(tmp_path: Path, tuned: str) -> tuple[Path, Path, np.ndarray, np.ndarray]:
    """400 test records whose feature 0 carries the label, and a tuned model's predictions: ``good`` (from feature 0)
    or ``noise`` (unrelated to the label)."""
    rng = np.random.default_rng(21)
    labels = (rng.random(400) < 0.3).astype(np.float32)
    features = rng.normal(size=(400, 3)).astype(np.float32)
    features[:, 0] += 2.0 * labels
    (tmp_path / "test").mkdir(parents=True)
    with (tmp_path / "test" / "test-0.pbr").open("wb") as shard:
        write_dense(shard, features, labels)
    scores = 1 / (1 + np.exp(-(3.0 * features[:, 0] - 3.0))) if tuned == "good" else rng.random(400)
    (tmp_path / "predictions").mkdir()
    lines = "".join(json.dumps({"score": float(s), "predicted_label": int(s > 0.5)}) + "\n" for s in scores)
    (tmp_path / "predictions" / "test-0.pbr.out").write_text(lines)
    return tmp_path / "predictions", tmp_path / "test", features, labels


def defaults_artifact() -> bytes:
    weights = np.asarray([[1.5], [0.0], [0.0]], dtype=np.float32)
    return artifact_bytes(LinearModel("binary_classifier", "logistic", weights, np.asarray([-1.5], np.float32), 0.5))


def run(tmp_path: Path, tuned: str, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], np.ndarray, Any]:
    predictions, test, features, labels = inputs(tmp_path, tuned)
    session = boto3.session.Session(region_name="eu-west-1", aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="x")
    s3 = session.client("s3")
    stub = Stubber(s3)
    artifact = defaults_artifact()
    stub.add_response(
        "get_object",
        {"Body": StreamingBody(io.BytesIO(artifact), len(artifact)), "ContentLength": len(artifact)},
        {"Bucket": "models-bucket", "Key": "pipeline/run-1/train/job/output/model.tar.gz"},
    )
    monkeypatch.setattr("evaluation.champion.aws_clients", lambda region: (None, s3))
    with stub:
        report = evaluate(
            predictions, test, tmp_path / "out", "binary_classifier", 30, 0, gate=GateSettings(-1.0),
            defaults_model_uri=URI,
        )  # fmt: skip
    stub.assert_no_pending_responses()
    defaults_scores = 1 / (1 + np.exp(-(1.5 * features[:, 0] - 1.5)))
    return report, labels, defaults_scores


def test_a_tuned_model_worse_than_the_defaults_beyond_the_noise_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, labels, defaults_scores = run(tmp_path, "noise", monkeypatch)
    defaults = report["defaults"]
    assert defaults["model_data_url"] == URI
    assert defaults["gate"]["value"] == pytest.approx(skm.roc_auc_score(labels, defaults_scores), abs=1e-6)
    decision = report["decision"]
    assert decision["promote"] is False
    assert "tuning did not pay" in decision["reason"] and "defaults.model_data_url" in decision["reason"]
    # the Condition compares gate.value with threshold_floor: raised to the defaults' floor, it fails there too
    assert decision["threshold_floor"] == decision["defaults_floor"] > report["gate"]["value"]
    written = json.loads((tmp_path / "out" / "evaluation.json").read_text())
    assert written["defaults"]["gate"] == defaults["gate"]


def test_a_tuned_model_as_good_as_the_defaults_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report, _, _ = run(tmp_path, "good", monkeypatch)
    decision = report["decision"]
    assert decision["promote"] is True, decision["reason"]
    assert "tuning paid, or is within the noise" in decision["reason"]
    assert report["gate"]["value"] >= decision["defaults_floor"]
