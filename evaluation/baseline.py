"""The report's ``baseline``: scikit-learn's regularised linear model, fitted on a bounded sample of the train
channel and scored on the same test records as Linear Learner, so every report says what a careful notebook gets.

Classifiers: ``StandardScaler`` (no centring for sparse data) then ``LogisticRegressionCV`` (10 strengths, 5-fold,
chosen by log loss: it never ties on imbalanced data, unlike accuracy). Regressors: ``StandardScaler`` then
``RidgeCV`` (13 strengths from 1e-3 to 1e3, efficient leave-one-out). The sample: every train record when the channel
holds at most ``MAX_BASELINE_RECORDS``, else that many drawn uniformly with a fixed seed, reading the channel once
shard by shard (memory holds the sample, never the channel).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from containerlib.names import BINARY_CLASSIFIER, MULTICLASS_CLASSIFIER
from containerlib.predictions import Scored
from containerlib.recordio import iter_batches
from evaluation import EvaluationError

MAX_BASELINE_RECORDS = 50_000
READ_BATCH = 10_000
CV_FOLDS = 5
LOGISTIC_STRENGTHS = 10  # LogisticRegressionCV's Cs: 10 values of C from 1e-4 to 1e4
RIDGE_ALPHAS = tuple(float(alpha) for alpha in np.logspace(-3, 3, 13))
MAX_ITERATIONS = 1000


@dataclass(frozen=True)
class TrainSample:
    """The records the baseline is fitted on, and how many the train channel holds."""

    features: Any  # dense float32 array or CSR matrix
    labels: np.ndarray
    channel_records: int
    file_count: int


def find_train_shards(train_dir: Path) -> list[Path]:
    """Every train shard under ``train_dir`` (recursively, hidden files skipped), by relative name."""
    if not train_dir.is_dir():
        raise EvaluationError(f"train dir {train_dir} does not exist or is not a directory")
    shards = sorted(
        path
        for path in train_dir.rglob("*")
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(train_dir).parts)
    )
    if not shards:
        raise EvaluationError(f"train dir {train_dir} holds no train shards")
    return shards


def read_train_sample(train_dir: Path, limit: int = MAX_BASELINE_RECORDS, seed: int = 0) -> TrainSample:
    """At most ``limit`` train records, uniform over the channel: each record gets a random key, the smallest
    ``limit`` keys are kept as the shards stream by (the kept records stay in channel order)."""
    rng = np.random.default_rng(seed)
    kept_features: list[Any] = []
    kept_labels: list[np.ndarray] = []
    kept_keys: list[np.ndarray] = []
    seen = 0
    shards = find_train_shards(train_dir)
    for shard in shards:
        try:
            with shard.open("rb") as stream:
                for features, labels in iter_batches(stream, READ_BATCH):
                    if labels is None:
                        raise EvaluationError(f"train shard {shard}: records from {seen} on have no label")
                    rows = features.shape[0]
                    kept_features.append(features)
                    kept_labels.append(np.asarray(labels, dtype=np.float64))
                    kept_keys.append(rng.random(rows))
                    seen += rows
                    if sum(len(keys) for keys in kept_keys) > 2 * limit:
                        _shrink(kept_features, kept_labels, kept_keys, limit)
        except EvaluationError:
            raise
        except Exception as error:
            raise EvaluationError(f"train shard {shard}: cannot read RecordIO-protobuf: {error}") from error
    if not seen:
        raise EvaluationError(f"train dir {train_dir}: the train shards hold no records")
    _shrink(kept_features, kept_labels, kept_keys, limit)
    return TrainSample(kept_features[0], kept_labels[0], seen, len(shards))


def _stack(blocks: list[Any]) -> Any:
    if all(isinstance(block, np.ndarray) for block in blocks):
        return np.concatenate(blocks)
    from scipy import sparse

    return sparse.vstack([sparse.csr_matrix(block) for block in blocks], format="csr")


def _shrink(features: list[Any], labels: list[np.ndarray], keys: list[np.ndarray], limit: int) -> None:
    """Keep the ``limit`` records with the smallest keys, in channel order, as one block (lists edited in place)."""
    all_keys = np.concatenate(keys)
    keep = np.arange(len(all_keys))
    if len(all_keys) > limit:
        keep = np.sort(np.argpartition(all_keys, limit - 1)[:limit])
    stacked = _stack(features)[keep]
    joined_labels, joined_keys = np.concatenate(labels)[keep], all_keys[keep]
    for part in (features, labels, keys):
        part.clear()
    features.append(stacked if isinstance(stacked, np.ndarray) else stacked.tocsr())
    labels.append(joined_labels)
    keys.append(joined_keys)


def baseline_estimator(predictor_type: str, sparse_input: bool) -> Any:
    """The scikit-learn pipeline the baseline fits (see the module docstring)."""
    from sklearn.linear_model import LogisticRegressionCV, RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler(with_mean=not sparse_input)
    if predictor_type == BINARY_CLASSIFIER or predictor_type == MULTICLASS_CLASSIFIER:
        model = LogisticRegressionCV(
            Cs=LOGISTIC_STRENGTHS, cv=CV_FOLDS, scoring="neg_log_loss", max_iter=MAX_ITERATIONS
        )
    else:
        model = RidgeCV(alphas=RIDGE_ALPHAS)
    return make_pipeline(scaler, model)


def describe(predictor_type: str) -> str:
    if predictor_type == BINARY_CLASSIFIER or predictor_type == MULTICLASS_CLASSIFIER:
        return (
            f"scikit-learn StandardScaler + LogisticRegressionCV(Cs={LOGISTIC_STRENGTHS}, cv={CV_FOLDS}, "
            "scoring=neg_log_loss)"
        )
    return "scikit-learn StandardScaler + RidgeCV(alphas=1e-3..1e3, 13 values)"


def fit_baseline(sample: TrainSample, predictor_type: str) -> Any:
    """The fitted baseline; a clear error when the sample cannot train it (e.g. one class only)."""
    labels = sample.labels
    if predictor_type != "regressor":
        present = np.unique(labels)
        if len(present) < 2:
            raise EvaluationError(
                f"the baseline's {len(labels)} train records hold only class {present[0]:g}: it needs two classes"
            )
    estimator = baseline_estimator(predictor_type, not isinstance(sample.features, np.ndarray))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings of the strongest/weakest strengths: not the user's
        estimator.fit(sample.features, labels if predictor_type == "regressor" else labels.astype(np.int64))
    return estimator


def score_baseline(estimator: Any, features: Any, scored: Scored, predictor_type: str) -> Scored:
    """The baseline's predictions on the test records, in the form the challenger's metrics are computed from."""
    if predictor_type == "regressor":
        values = np.asarray(estimator.predict(features), dtype=np.float64)
        return Scored(scored.labels, values, None, scored.file_count, "value")
    probabilities = np.asarray(estimator.predict_proba(features), dtype=np.float64)
    known = np.asarray(estimator.classes_, dtype=np.int64)
    if predictor_type == BINARY_CLASSIFIER:
        scores = probabilities[:, list(known).index(1)]
        return Scored(scored.labels, scores, (scores > 0.5).astype(np.int64), scored.file_count, "probability")
    full = np.zeros((len(probabilities), scored.scores.shape[1]))
    full[:, known] = probabilities  # classes absent from the train sample get probability 0
    return Scored(scored.labels, full, full.argmax(axis=1).astype(np.int64), scored.file_count, "probability")


def baseline_section(
    sample: TrainSample, predictor_type: str, metrics: dict[str, Any], gate_metric: str, challenger_value: float
) -> dict[str, Any]:
    """The report's ``baseline``: what was fitted on what, its metrics in the challenger's layout, and the gap."""
    from containerlib.names import METRICS_SECTIONS

    value = metrics[gate_metric]["value"]
    return {
        "model": describe(predictor_type),
        "train_records": int(len(sample.labels)),
        "train_channel_records": int(sample.channel_records),
        "max_train_records": MAX_BASELINE_RECORDS,
        METRICS_SECTIONS[predictor_type]: metrics,
        "gate": {"metric": gate_metric, "value": value, "challenger_minus_baseline": challenger_value - value},
    }
