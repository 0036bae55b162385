"""A tuned run's untuned defaults' model: Evaluate downloads it (the exact S3 request, botocore Stubber), scores it on
the same real test shards, and keeps it in place of a tuned model worse than it beyond the noise, saying so: the
report's model-quality sections, gate and decision are then the defaults' model's, the tuned model's in ``tuned``."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber
from sklearn import metrics as skm
from support.aws_stubs import aws_session

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


TUNED_URI = "s3://models-bucket/pipeline/tune/job-007/output/model.tar.gz"


def run(tmp_path: Path, tuned: str, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], np.ndarray, Any]:
    predictions, test, features, labels = inputs(tmp_path, tuned)
    session = aws_session("eu-west-1")
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


def test_a_tuned_model_worse_than_the_defaults_gives_way_to_the_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, labels, defaults_scores = run(tmp_path, "noise", monkeypatch)
    tuned_scores = np.asarray(
        [json.loads(line)["score"] for line in (tmp_path / "predictions" / "test-0.pbr.out").read_text().splitlines()]
    )
    # the report's model-quality section and gate are the defaults' model's, the tuned model's in its own section
    defaults_auc = skm.roc_auc_score(labels, defaults_scores)
    assert report["binary_classification_metrics"]["auc"]["value"] == pytest.approx(defaults_auc, abs=1e-6)
    assert report["gate"]["value"] == report["binary_classification_metrics"]["auc"]["value"]
    assert "defaults" not in report
    tuned = report["tuned"]
    assert tuned["model_data_url"] == "none"  # Evaluate was given no --model-uri here
    assert tuned["gate"]["value"] == pytest.approx(skm.roc_auc_score(labels, tuned_scores), abs=1e-6)
    tuning = report["tuning"]
    assert (tuning["kept"], tuning["model_data_url"], tuning["metric"]) == ("defaults", URI, "auc")
    assert tuning["tuned_value"] == tuned["gate"]["value"] < tuning["defaults_floor"] == tuning["defaults_value"]
    decision = report["decision"]
    # the kept model clears the gate; Register reads the kept model's artifact from the decision
    assert decision["promote"] is True, decision["reason"]
    assert (decision["kept_model"], decision["model_data_url"]) == ("defaults", URI)
    assert decision["challenger_value"] == report["gate"]["value"]
    assert decision["reason"].startswith("tuning did not pay: the tuned model's auc ")
    assert "the untuned defaults' model is kept" in decision["reason"]
    assert "the kept untuned defaults' model's auc" in decision["reason"]
    written = json.loads((tmp_path / "out" / "evaluation.json").read_text())
    assert written["tuned"]["gate"] == tuned["gate"] and written["tuning"] == tuning


def test_a_tuned_model_as_good_as_the_defaults_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report, labels, defaults_scores = run(tmp_path, "good", monkeypatch)
    decision = report["decision"]
    assert decision["promote"] is True, decision["reason"]
    assert decision["reason"].startswith("tuning paid: ")
    assert "the kept tuned model's auc" in decision["reason"]
    assert (decision["kept_model"], decision["model_data_url"]) == ("tuned", "none")
    assert report["gate"]["value"] >= decision["defaults_floor"]
    defaults = report["defaults"]
    assert defaults["model_data_url"] == URI
    assert defaults["gate"]["value"] == pytest.approx(skm.roc_auc_score(labels, defaults_scores), abs=1e-6)
    assert "tuned" not in report and report["tuning"]["kept"] == "tuned"


def test_the_kept_models_artifact_is_the_tuned_ones_given_to_evaluate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --model-uri (the pipeline passes the tuned model's artifact), ``model_data_url`` names it when kept."""
    from evaluation.defaults import choose

    tuned = {"gate": {"metric": "auc", "value": 0.8}, "binary_classification_metrics": {"auc": {"value": 0.8}}}
    defaults = {"gate": {"metric": "auc", "value": 0.79}, "binary_classification_metrics": {"auc": {"value": 0.79}}}
    kept = choose(tuned, defaults, "binary_classifier", TUNED_URI, URI)
    assert kept is tuned and kept["tuning"]["model_data_url"] == TUNED_URI and kept["defaults"]["model_data_url"] == URI
    tuned = {"gate": {"metric": "auc", "value": 0.7}, "binary_classification_metrics": {"auc": {"value": 0.7}}}
    defaults = {"gate": {"metric": "auc", "value": 0.79}, "binary_classification_metrics": {"auc": {"value": 0.79}}}
    kept = choose(tuned, defaults, "binary_classifier", TUNED_URI, URI)
    assert kept is defaults and kept["tuning"]["model_data_url"] == URI and kept["tuned"]["model_data_url"] == TUNED_URI
    assert kept["tuning"]["defaults_floor"] == 0.79
    # below the defaults by less than the noise is still below: the defaults' model is kept
    tuned = {"gate": {"metric": "auc", "value": 0.7899}, "binary_classification_metrics": {"auc": {"value": 0.7899}}}
    defaults = {"gate": {"metric": "auc", "value": 0.79}, "binary_classification_metrics": {"auc": {"value": 0.79}}}
    assert choose(tuned, defaults, "binary_classifier", TUNED_URI, URI)["tuning"]["kept"] == "defaults"
    tuned = {"gate": {"metric": "auc", "value": 0.79}, "binary_classification_metrics": {"auc": {"value": 0.79}}}
    defaults = {"gate": {"metric": "auc", "value": 0.79}, "binary_classification_metrics": {"auc": {"value": 0.79}}}
    assert choose(tuned, defaults, "binary_classifier", TUNED_URI, URI)["tuning"]["kept"] == "tuned"  # a tie
