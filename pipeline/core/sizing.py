"""Sizes from the data: each job's instance count and storage volume, decided from the input's listing.

``plan_sizes`` is pure: from the input objects' sizes (and rows where known) and the parameter values it gives, per
job step, the instances, the volume each instance needs and the bytes the busiest instance downloads and writes.
``sized_parameters`` turns a plan into the parameters a run sets (a value the user gave always wins) and refuses a
given volume too small for the data, naming the parameter and the size needed. ``run``, ``start`` and ``schedule``
call both before anything runs (docs/guides/very-large-data.md).

The bytes Preprocess writes are estimated with expansion ratios of the input format to RecordIO-protobuf, upper
bounds from the formats: a CSV value takes at least two bytes (a digit and a separator) and becomes a 4-byte float
plus a record's framing (measured on the bundled example, 30 features: 0.82x, CSV written with full precision); a
Parquet column may compress many times over, so Parquet is planned at 10x. Where rows and features are known, the
RecordIO size is computed exactly instead (4 bytes a value plus the record's framing).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from pipeline.core.errors import ParameterError
from pipeline.core.names import EVALUATE, PREPROCESS, TRAIN, TRANSFORM, split_fractions
from pipeline.core.sharding import objects_for_instance

GB = 1 << 30  # a volume's GB, counted as GiB: the plan never comes out smaller than the service's unit
CSV_TO_RECORDIO = 2.5  # upper bound: 2 bytes a CSV value -> 4 bytes a float, plus framing (headroom included)
PARQUET_TO_RECORDIO = 10.0  # compressed columns: planned generously; rows and features give the exact size
RECORD_OVERHEAD_BYTES = 48  # RecordIO framing, protobuf keys, the label: per record
PREDICTION_BYTES = 64  # one jsonlines prediction: {"score": 0.1234567, "predicted_label": 1}
PREDICTIONS_PER_RECORDIO_BYTE = 1.5  # without rows: a 1-feature record (~52 bytes) gives a ~64-byte prediction
BASELINE_ROWS = 10_000  # Preprocess's data-quality sample, over all hosts (preprocessing.settings.baseline_rows)
BASELINE_CAP_BYTES = 2 * GB  # without rows: the sample's CSV, bounded
HEADROOM = 1.25  # on every volume: file system overhead, temporary names, logs
RESERVE_BYTES = 1 << 20  # code, schema, summaries, the report: small files every job holds
SPILL_FACTOR = 2  # Preprocess may spill its dealt frames to disk before writing the shards: twice its output

# The per-instance shares the counts aim at (real bytes, never scaled): past these a job gets more instances.
PREPROCESS_BYTES_PER_INSTANCE = 10 * GB
TRAIN_BYTES_PER_INSTANCE = 50 * GB
TRANSFORM_BYTES_PER_INSTANCE = 20 * GB
MAX_PROCESSING_INSTANCES = 100  # ProcessingResources.ClusterConfig.InstanceCount's maximum
MAX_TRAINING_INSTANCES = 20  # Linear Learner's published efficiency falls to 62% at 40 hosts (SIGMOD 2020)
MAX_TRANSFORM_INSTANCES = 100

COUNT_PARAMETERS = {
    PREPROCESS: "ProcessingInstanceCount",
    TRAIN: "TrainingInstanceCount",
    TRANSFORM: "TransformInstanceCount",
}
VOLUME_PARAMETERS = {
    PREPROCESS: "ProcessingVolumeSizeInGB",
    TRAIN: "TrainingVolumeSizeInGB",
    EVALUATE: "EvaluationVolumeSizeInGB",
}


@dataclass(frozen=True)
class InputData:
    """The input as listed: each object's key and size; rows and features where a scan or the schema knows them."""

    objects: tuple[tuple[str, int], ...]
    rows: int | None = None
    features: int | None = None

    @property
    def bytes(self) -> int:
        return sum(size for _, size in self.objects)

    @property
    def parquet(self) -> bool:
        return any(key.lower().endswith((".parquet", ".pq")) for key, _ in self.objects)


@dataclass(frozen=True)
class StepSize:
    """One job step: instances, the volume each needs, and what its busiest instance downloads and writes."""

    step: str
    instances: int
    download_bytes: int
    write_bytes: int
    volume_gb: int | None  # None: the step has no volume parameter (Transform uses the instance's storage)

    def to_dict(self) -> dict[str, object]:
        return {
            "step": self.step,
            "instances": self.instances,
            "download_bytes": self.download_bytes,
            "write_bytes": self.write_bytes,
            "volume_gb": self.volume_gb,
        }


def volume_gb(held_bytes: float, gb: int = GB) -> int:
    """The volume, in GB of ``gb`` bytes, holding ``held_bytes`` with headroom and the small files' reserve."""
    return max(1, math.ceil((held_bytes * HEADROOM + RESERVE_BYTES) / gb))


def _count(values: Mapping[str, object], given: Collection[str], name: str, wanted: int, most: int) -> int:
    """The user's count, else the plan's: the default (``values``' value) unless the data wants more, then at most
    ``most``."""
    if name in given:
        return int(values[name])  # type: ignore[call-overload]
    default = int(values.get(name, 1))  # type: ignore[call-overload]
    return default if wanted <= default else max(default, min(wanted, most))


def recordio_bytes(data: InputData) -> float:
    """The RecordIO-protobuf bytes Preprocess writes for the whole input, all splits."""
    return _recordio_bytes(data, data.bytes)


def _recordio_bytes(data: InputData, share_bytes: int) -> float:
    """The RecordIO-protobuf bytes ``share_bytes`` of the input become."""
    if data.rows and data.features and data.bytes:
        per_row = 4 * (data.features + 1) + RECORD_OVERHEAD_BYTES
        return data.rows * per_row * share_bytes / data.bytes
    return share_bytes * (PARQUET_TO_RECORDIO if data.parquet else CSV_TO_RECORDIO)


def plan_sizes(
    data: InputData, values: Mapping[str, object], given: Collection[str] = (), gb: int = GB
) -> dict[str, StepSize]:
    """Each job step's size for ``data`` under the parameter ``values`` (counts in ``given`` are the user's and are
    kept; the others are chosen from the data, never below their ``values``: the definition's defaults, which come
    from the parameter table). ``gb``: the bytes of a volume's GB (the local backend scales it). The one computation
    of what each host downloads and writes: the definition's sizes (``sized_parameters``) and the capacity plan
    (``pipeline.core.capacity``) both read it."""
    if not data.objects:
        raise ValueError("no input objects to size the jobs for")
    fractions = split_fractions(values)  # the table's defaults where a definition predates them
    validation, test = fractions["ValidationFraction"], fractions["TestFraction"]
    train = max(0.0, 1.0 - validation - test)
    total = data.bytes

    preprocess_count = _count(
        values,
        given,
        "ProcessingInstanceCount",
        math.ceil(total / PREPROCESS_BYTES_PER_INSTANCE),
        min(MAX_PROCESSING_INSTANCES, len(data.objects)),
    )
    keys = sorted(data.objects)
    shares = [
        sum(size for _, size in objects_for_instance(keys, "ShardedByS3Key", index, preprocess_count))
        for index in range(preprocess_count)
    ]
    busiest = max(shares)
    recordio_total = _recordio_bytes(data, total)
    recordio_busiest = _recordio_bytes(data, busiest)
    baseline = 2 * busiest * min(1.0, BASELINE_ROWS / data.rows) if data.rows else min(2 * busiest, BASELINE_CAP_BYTES)
    preprocess_writes = int(SPILL_FACTOR * recordio_busiest + baseline)

    training_count = _count(
        values,
        given,
        "TrainingInstanceCount",
        math.ceil(recordio_total * train / TRAIN_BYTES_PER_INSTANCE),
        MAX_TRAINING_INSTANCES,
    )
    # each Preprocess host writes ceil(T / P) train and validation shards: a training host receives whole shards
    per_host_shards = math.ceil(training_count / preprocess_count)
    shards = per_host_shards * preprocess_count
    shards_each = math.ceil(shards / training_count)
    validation_download = shards_each * recordio_busiest * validation / per_host_shards
    train_download = shards_each * recordio_busiest * train / per_host_shards
    streamed = str(values.get("TrainingInputMode", "File")) == "Pipe"  # a definition without it downloads
    training_download = int(validation_download + (0 if streamed else train_download))

    test_bytes = recordio_total * test
    transform_count = _count(
        values,
        given,
        "TransformInstanceCount",
        math.ceil(test_bytes / TRANSFORM_BYTES_PER_INSTANCE),
        min(MAX_TRANSFORM_INSTANCES, preprocess_count),  # one test shard per Preprocess host, dealt by object
    )
    predictions = data.rows * test * PREDICTION_BYTES if data.rows else test_bytes * PREDICTIONS_PER_RECORDIO_BYTE
    transform_busiest = math.ceil(preprocess_count / transform_count) * recordio_busiest * test
    evaluate_download = int(test_bytes + predictions)

    return {
        PREPROCESS: StepSize(
            PREPROCESS, preprocess_count, busiest, preprocess_writes, volume_gb(busiest + preprocess_writes, gb)
        ),
        TRAIN: StepSize(TRAIN, training_count, training_download, 0, volume_gb(training_download, gb)),
        TRANSFORM: StepSize(
            TRANSFORM,
            transform_count,
            int(transform_busiest),
            int(predictions * transform_busiest / test_bytes) if test_bytes else 0,
            None,
        ),
        EVALUATE: StepSize(EVALUATE, 1, evaluate_download, 0, volume_gb(evaluate_download, gb)),
    }


def sized_parameters(
    plan: Mapping[str, StepSize], values: Mapping[str, object], given: Collection[str]
) -> dict[str, int]:
    """The counts and volumes to set: the plan's, never below the defaults (``values``), for every parameter not
    ``given``.

    A given volume smaller than the plan's raises ``ParameterError`` naming it, the step, what its busiest instance
    holds and the size needed. Parameters the definition does not declare (absent from ``values``) are left out."""
    sized: dict[str, int] = {}
    for step, size in plan.items():
        name = COUNT_PARAMETERS.get(step)
        if name and name in values and name not in given:
            sized[name] = size.instances
        name = VOLUME_PARAMETERS.get(step)
        if not name or size.volume_gb is None or name not in values:
            continue
        if name in given:
            if int(values[name]) < size.volume_gb:  # type: ignore[call-overload]
                raise ParameterError(
                    f"parameter {name}={values[name]} is too small for the data: each {step} instance downloads up "
                    f"to {size.download_bytes:,} bytes and writes up to {size.write_bytes:,}; give at least "
                    f"{name}={size.volume_gb} (or leave it out: it is sized from the data)"
                )
            continue
        sized[name] = max(int(values[name]), size.volume_gb)  # type: ignore[call-overload]
    return sized
