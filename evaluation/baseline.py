"""The report's ``baseline``: scikit-learn's regularised linear model, fitted on a bounded sample of the train
channel and scored on the same test records as Linear Learner, so every report says what a careful notebook gets.

Classifiers: ``StandardScaler`` (no centring for sparse data) then ``LogisticRegressionCV`` (10 strengths, 5-fold,
chosen by log loss: it never ties on imbalanced data, unlike accuracy). Regressors: ``StandardScaler`` then
``RidgeCV`` (13 strengths from 1e-3 to 1e3, efficient leave-one-out). The sample: every train record when the channel
holds at most ``MAX_BASELINE_RECORDS`` (dense records), else the first records of every shard, each shard's share
proportional to its bytes (see ``read_train_sample``); reading stops once the sample is in, so a large channel is
never read (nor, from S3, transferred) whole, and memory holds the sample, never the channel. From S3 a shard is
read by ranged GetObjects of about the bytes its share takes (``RangedObject``), not by a stream closed early: S3
sends no more than was asked for, and every response is read to its end, so its connection is reused.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable

import numpy as np

from containerlib.names import BINARY_CLASSIFIER, MULTICLASS_CLASSIFIER
from containerlib.predictions import Pairing, ScoredChunk, iter_test_batches
from containerlib.recordio import iter_batches
from containerlib.s3_uri import split_s3_uri
from evaluation import EvaluationError

MAX_BASELINE_RECORDS = 50_000
READ_BATCH = 10_000  # at most this many records decoded at a time
FIRST_RANGE = 64 << 10  # bytes of a shard's first ranged GetObject
CV_FOLDS = 5
LOGISTIC_STRENGTHS = 10  # LogisticRegressionCV's Cs: 10 values of C from 1e-4 to 1e4
RIDGE_ALPHAS = tuple(float(alpha) for alpha in np.logspace(-3, 3, 13))
MAX_ITERATIONS = 1000


@dataclass(frozen=True)
class TrainSample:
    """The records the baseline is fitted on, and how many the train channel holds (None: not all were read)."""

    features: Any  # dense float32 array or CSR matrix
    labels: np.ndarray
    channel_records: int | None
    file_count: int


@dataclass(frozen=True)
class Shard:
    """One train shard: its name in messages, its size in bytes and how to open it for reading."""

    name: str
    size: int
    open: Callable[[], Any]  # a binary file object with read(); closed after use


def find_train_shards(train_dir: Path) -> list[Shard]:
    """Every train shard under ``train_dir`` (recursively, hidden files skipped), by relative name."""
    if not train_dir.is_dir():
        raise EvaluationError(f"train dir {train_dir} does not exist or is not a directory")
    paths = sorted(
        path
        for path in train_dir.rglob("*")
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(train_dir).parts)
    )
    if not paths:
        raise EvaluationError(f"train dir {train_dir} holds no train shards")
    return [Shard(str(path), path.stat().st_size, partial(path.open, "rb")) for path in paths]


def list_train_shards(train_uri: str, s3: Any) -> list[Shard]:
    """Every train shard under the S3 prefix ``train_uri`` (ListObjectsV2, hidden names skipped), by key; each is
    read with ranged GetObjects (``RangedObject``), so only what the sample takes is transferred."""
    try:
        bucket, prefix = split_s3_uri(train_uri)
    except ValueError:
        raise EvaluationError(f"train uri {train_uri!r} is not an s3:// URI") from None
    prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
    objects = []
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            objects += [(item["Key"], int(item["Size"])) for item in page.get("Contents", [])]
    except Exception as error:
        raise EvaluationError(f"train uri {train_uri}: cannot list the train shards: {error}") from error
    share = ShareOfShard()
    shards = [
        Shard(f"s3://{bucket}/{key}", size, partial(RangedObject, s3, bucket, key, size, share))
        for key, size in sorted(objects)
        if not any(part.startswith(".") for part in key[len(prefix) :].split("/"))
    ]
    if not shards:
        raise EvaluationError(f"train uri {train_uri} holds no train shards")
    return shards


class ShareOfShard:
    """How much of its bytes the last shard cut at its share took from S3 (None before any): a shard's share of the
    sample is in proportion to its size, so the next shard's first ranged GetObject asks for that much of it at once."""

    def __init__(self) -> None:
        self.fraction: float | None = None


class RangedObject:
    """An S3 object of ``size`` bytes read front to back with ranged GetObjects (``Range: bytes=a-b``), each read
    whole, none past the end (an empty object makes no request). The first asks for ``share``'s fraction of the
    object, or before any shard was read at most ``FIRST_RANGE`` bytes (the RecordIO reader then sizes its next read
    from the records in them); a read is answered from what was fetched before a next range is asked for."""

    def __init__(self, s3: Any, bucket: str, key: str, size: int, share: ShareOfShard | None = None) -> None:
        self.s3, self.bucket, self.key, self.size = s3, bucket, key, size
        self.share = share
        self.position = 0  # bytes read
        self.fetched = 0  # bytes fetched: where the next range starts
        self.buffer = b""  # fetched, not read yet

    def read(self, size: int = -1) -> bytes:
        wanted = self.size - self.position if size is None or size < 0 else min(size, self.size - self.position)
        if wanted <= 0:
            return b""
        if not self.buffer:
            self._fetch(wanted)
        data, self.buffer = self.buffer[:wanted], self.buffer[wanted:]
        self.position += len(data)
        return data

    def _fetch(self, wanted: int) -> None:
        length = wanted
        if not self.fetched:
            length = min(wanted, FIRST_RANGE)
            if self.share is not None and self.share.fraction is not None:
                length = max(length, math.ceil(self.share.fraction * self.size))
        end = min(self.size, self.fetched + length)
        response = self.s3.get_object(Bucket=self.bucket, Key=self.key, Range=f"bytes={self.fetched}-{end - 1}")
        self.buffer = response["Body"].read()
        self.fetched += len(self.buffer)

    def tell(self) -> int:
        return self.position

    def close(self) -> None:
        """Learn the share this shard took, if it was cut there (one read whole, perhaps short of its share, says
        nothing of the next); nothing to release: every response was read to its end."""
        if self.share is not None and 0 < self.fetched < self.size:
            self.share.fraction = self.fetched / self.size


def read_train_sample(shards: list[Shard], limit: int = MAX_BASELINE_RECORDS) -> TrainSample:
    """At most ``limit`` train records: from each shard, in shard order, its first records, as many as its share
    of the channel's bytes of ``limit`` (Preprocess deals rows to shards in a seeded random order and shuffles
    every shard, so a shard's first records are a uniform sample of it). Reading stops there: a channel larger
    than the sample is never read whole. When the shares leave the sample short (records of unequal sizes, as
    sparse ones are), the shards cut at their share are read again in order for the rest. A channel of at most
    ``limit`` dense records is read whole, in channel order."""
    total_bytes = max(sum(shard.size for shard in shards), 1)
    quotas = [math.ceil(limit * shard.size / total_bytes) for shard in shards]
    taken = [0] * len(shards)
    parts: list[list[tuple[Any, np.ndarray]]] = [[] for _ in shards]
    ended = [False] * len(shards)
    kept = 0
    for index, shard in enumerate(shards):
        if kept >= limit:
            break
        ended[index] = _take(shard, 0, min(quotas[index], limit - kept), parts[index])
        taken[index] = sum(len(labels) for _, labels in parts[index])
        kept += taken[index]
    for index, shard in enumerate(shards):  # the top-up pass: only when the shares fell short
        if kept >= limit:
            break
        if taken[index] and not ended[index]:
            before = taken[index]
            ended[index] = _take(shard, before, limit - kept, parts[index])
            taken[index] = sum(len(labels) for _, labels in parts[index])
            kept += taken[index] - before
    if not kept:
        raise EvaluationError(f"the train shards ({', '.join(s.name for s in shards[:3])} ...) hold no records")
    features = _stack([block for shard_parts in parts for block, _ in shard_parts])
    labels = np.concatenate([labels for shard_parts in parts for _, labels in shard_parts])
    channel = kept if all(ended) else None
    return TrainSample(features, labels, channel, len(shards))


def _take(shard: Shard, skip: int, count: int, parts: list[tuple[Any, np.ndarray]]) -> bool:
    """Append the shard's records ``skip`` .. ``skip + count`` to ``parts``; True when the shard ended before."""
    seen = 0
    try:
        stream = shard.open()
    except Exception as error:
        raise EvaluationError(f"train shard {shard.name}: cannot open it: {error}") from error
    try:
        wanted = max(skip + count, 1)
        batch = math.ceil(wanted / math.ceil(wanted / READ_BATCH))  # equal batches ending at the last record wanted
        for features, labels in iter_batches(stream, batch):
            if labels is None:
                raise EvaluationError(f"train shard {shard.name}: records from {seen} on have no label")
            rows = features.shape[0]
            start, stop = max(skip - seen, 0), min(skip + count - seen, rows)
            seen += rows
            if stop > start:
                parts.append((features[start:stop], np.asarray(labels[start:stop], dtype=np.float64)))
            if seen >= skip + count:
                return False
        return True
    except EvaluationError:
        raise
    except Exception as error:
        raise EvaluationError(f"train shard {shard.name}: cannot read RecordIO-protobuf: {error}") from error
    finally:
        stream.close()


def _stack(blocks: list[Any]) -> Any:
    if all(isinstance(block, np.ndarray) for block in blocks):
        return np.concatenate(blocks)
    from scipy import sparse

    return sparse.vstack([sparse.csr_matrix(block) for block in blocks], format="csr")


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


def score_baseline(estimator: Any, pairing: Pairing, predictor_type: str, classes: int) -> Iterator[ScoredChunk]:
    """The baseline's predictions on the test records, shard by shard and chunk by chunk (only the scores are kept),
    in the form the challenger's metrics are computed from."""
    known = np.asarray(getattr(estimator, "classes_", []), dtype=np.int64)
    for shard, _, _ in pairing.shards:
        for _, features, labels in iter_test_batches(shard):
            if predictor_type == "regressor":
                yield ScoredChunk(labels, np.asarray(estimator.predict(features), dtype=np.float64), None)
                continue
            probabilities = np.asarray(estimator.predict_proba(features), dtype=np.float64)
            if predictor_type == BINARY_CLASSIFIER:
                scores = probabilities[:, list(known).index(1)]
                yield ScoredChunk(labels, scores, (scores > 0.5).astype(np.int64))
                continue
            full = np.zeros((len(probabilities), classes))
            full[:, known] = probabilities  # classes absent from the train sample get probability 0
            yield ScoredChunk(labels, full, full.argmax(axis=1).astype(np.int64))


def baseline_section(
    sample: TrainSample, predictor_type: str, metrics: dict[str, Any], gate_metric: str, challenger_value: float
) -> dict[str, Any]:
    """The report's ``baseline``: what was fitted on what, its metrics in the challenger's layout, and the gap."""
    from containerlib.names import METRICS_SECTIONS

    value = metrics[gate_metric]["value"]
    return {
        "model": describe(predictor_type),
        "train_records": int(len(sample.labels)),
        "train_channel_records": None if sample.channel_records is None else int(sample.channel_records),
        "max_train_records": MAX_BASELINE_RECORDS,
        METRICS_SECTIONS[predictor_type]: metrics,
        "gate": {"metric": gate_metric, "value": value, "challenger_minus_baseline": challenger_value - value},
    }
