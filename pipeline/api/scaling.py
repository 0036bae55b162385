"""The scaling study: one Preprocess output trained at several instance counts, to see how many instances pay.

Each training job is the execution's own Train request (what the definition resolved to) with only
``ResourceConfig.InstanceCount`` and the job name changed, run by the local training job runner, so the figures are
the jobs' own scaling records. Counts are compared on the same work: early stopping can end one count's job after
fewer epochs than another's, so training times are not comparable, but records per second are. Per count: the
epochs each run trained, records, seconds per epoch, throughput (records/s over all hosts), speedup
S(n) = throughput(n) / throughput(base) x base (base: the smallest count), efficiency E(n) = S(n) / n (an efficiency
above 100% carries its explanation), and separately the time to the same validation loss (the loss every count
reached) and the training time as run; instance-seconds (n x job time: what SageMaker bills), the validation
objective and the test metric nearest the gate's (a larger global batch can change the model). The recommendation:
the smallest count within ``within`` of the best throughput, and the first count whose efficiency falls below
``floor``.
"""

from __future__ import annotations

import copy
import json
import re
import statistics
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pipeline.core.capacity import EFFICIENCY_FLOOR
from pipeline.core.errors import LlpipeError, opt
from pipeline.core.names import (
    BINARY_CLASSIFIER,
    MULTICLASS_CLASSIFIER,
    PREPROCESS,
    RECORDIO,
    TRAIN,
    TRAINING_JOB_SETTINGS,
)

__all__ = [
    "ScalingStudy",
    "ScalingStudyError",
    "StudyRow",
    "check_shards",
    "sagemaker_scaling_study",
    "scaling_study",
    "study_on_sagemaker",
    "train_shards",
]

# the members of the Train step's recorded request that a CreateTrainingJob request takes as they are
TRAINING_REQUEST_KEYS = ("HyperParameters", *TRAINING_JOB_SETTINGS)
DEFAULT_WITHIN = 0.10  # the recommended count is the smallest within 10% of the best throughput
DEFAULT_FLOOR = EFFICIENCY_FLOOR  # efficiency below 70% is where more instances stop paying (the capacity plan's too)
# algo-1's per-epoch validation loss line (the train loss when there is no validation channel)
_EPOCH_LOSS = re.compile(r"#quality_metric: host=algo-1, epoch=(\d+), (validation|train) .*<loss>=(\S+)")
# the gate metric of the report (Evaluate) and Linear Learner's own test metric of the same quantity
TEST_METRICS = {BINARY_CLASSIFIER: "test:roc_auc_score", MULTICLASS_CLASSIFIER: "test:multiclass_accuracy"}
REGRESSION_TEST_METRIC = "test:mse"


class ScalingStudyError(LlpipeError):
    """The study cannot run as asked (too few train shards, no Train step); nothing was trained."""


@dataclass(frozen=True)
class StudyRow:
    """One instance count's figures over its repeats: speedup and efficiency from throughput (the same work),
    the time to the study's target loss and the training time as run beside them."""

    instances: int
    runs: int
    min_seconds: float
    median_seconds: float
    speedup: float  # from records per second against the smallest count
    efficiency: float
    instance_seconds: float
    throughput: float
    sync_share: float | None  # None: not measured (SageMaker jobs)
    global_batch: int
    validation_objective: float | None
    test_metric: float | None
    jobs: list[str] = field(default_factory=list)
    epochs: list[int | None] = field(default_factory=list)  # each run's epochs (None: not reported)
    records: int | None = None  # median over the runs of the records trained (every epoch, every host)
    seconds_per_epoch: float | None = None  # best run's training seconds over its epochs
    time_to_loss: float | None = None  # seconds to the study's target loss (best run); None: never reached
    time_speedup: float | None = None  # training time as run against the smallest count (not the same work)
    efficiency_note: str | None = None  # why an efficiency above 100% is not a free lunch


@dataclass(frozen=True)
class ScalingStudy:
    """The study's rows, its recommendation, and where its plot and JSON are."""

    execution_id: str
    train_shards: int
    test_metric_name: str
    rows: list[StudyRow]
    recommended: int
    efficiency_floor_at: int | None
    within: float
    floor: float
    plot: str | None = None
    json_path: str | None = None
    target_loss: float | None = None  # the validation loss every count reached (None: not reported)
    target_loss_name: str = "validation:objective_loss"

    @property
    def recommendation(self) -> str:
        text = f"{self.recommended} instance(s): the smallest count within {self.within:.0%} of the best throughput"
        if self.efficiency_floor_at is not None:
            text += f"; efficiency falls below {self.floor:.0%} at {self.efficiency_floor_at} instances"
        else:
            text += f"; efficiency stays at or above {self.floor:.0%} up to {self.rows[-1].instances} instances"
        return text

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["recommendation"] = self.recommendation
        return data

    def frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame([asdict(row) for row in self.rows]).drop(columns=["jobs", "epochs"]).set_index("instances")


def train_shards(execution: Any) -> tuple[str, int]:
    """The Train request's train channel prefix and how many objects Preprocess wrote there."""
    from pipeline.local.jobs.storage import list_prefix

    train = execution.record.steps.get(TRAIN)
    if train is None or not train.properties.get("InputDataConfig"):
        raise ScalingStudyError(f"execution {execution.id} has no finished {TRAIN} step to take the request from")
    [channel] = [c for c in train.properties["InputDataConfig"] if c["ChannelName"] == "train"]
    prefix = channel["DataSource"]["S3DataSource"]["S3Uri"]
    return prefix, len(list_prefix(execution.s3, prefix, "channel train"))


def check_shards(instances: Sequence[int], shards: int, prefix: str) -> None:
    """Refuse before anything runs when the largest count would leave hosts without a train shard."""
    largest = max(instances)
    if largest > shards:
        raise ScalingStudyError(
            f"{opt('instances')} up to {largest} but Preprocess wrote {shards} train shard(s) under {prefix}: with "
            f"ShardedByS3Key {largest - shards} host(s) would idle. Preprocess writes as many train shards as "
            f"TrainingInstanceCount (at least): run once with {opt('TrainingInstanceCount', largest)} and study that "
            "execution",
            option="instances",
            expected=f"at most {shards}",
        )


def scaling_study(
    execution: Any,
    instances: Sequence[int] = (1, 2),
    *,
    repeats: int = 1,
    within: float = DEFAULT_WITHIN,
    floor: float = DEFAULT_FLOOR,
    output: Path | None = None,
    on_job: Any = None,
) -> ScalingStudy:
    """Train ``execution``'s Preprocess output at each count of ``instances``, ``repeats`` times each, locally;
    write ``scaling-study.json`` and ``scaling-study.png`` into ``output`` (default: the execution's folder)."""
    from pipeline.local.jobs.contract import Job
    from pipeline.local.jobs.training import TrainingJobs

    counts = sorted(set(int(n) for n in instances))
    if not counts or counts[0] < 1 or repeats < 1:
        raise ScalingStudyError(f"{opt('instances')} needs counts of at least 1 and {opt('repeats')} at least 1")
    prefix, shards = train_shards(execution)
    check_shards(counts, shards, prefix)
    train = execution.record.steps[TRAIN]
    predictor = str(execution.parameters.get("PredictorType", BINARY_CLASSIFIER))
    test_metric = TEST_METRICS.get(predictor, REGRESSION_TEST_METRIC)
    folder = Path(output) if output else execution.record.folder / "scaling-study"
    folder.mkdir(parents=True, exist_ok=True)
    runs: dict[int, list[dict[str, Any]]] = {n: [] for n in counts}
    for repeat in range(repeats):
        for count in counts:  # alternating counts, so a change of load hits every count alike
            name = f"scaling-{execution.id}-{count}x-{repeat + 1}"[:63]
            request = _request(train.properties, name, count)
            request["InputDataConfig"] = with_test_channel(request["InputDataConfig"], execution)
            job_folder = folder / "jobs" / name
            job_folder.mkdir(parents=True, exist_ok=True)
            record = copy.deepcopy(train)
            record.scaling, record.logs = [], []
            job = Job(
                step=_StepSpec(TRAIN),  # type: ignore[arg-type]
                arguments=request,
                execution_id=execution.id,
                pipeline_name=execution.record.pipeline_name,
                record=record,
                folder=job_folder,
                stop=threading.Event(),
            )
            if on_job is not None:
                on_job(count, repeat + 1, name)
            started = time.monotonic()
            described = TrainingJobs(execution.s3)(job)
            seconds = time.monotonic() - started
            metrics = {item["MetricName"]: item["Value"] for item in described.get("FinalMetricDataList", [])}
            [scaling] = record.scaling
            (job_folder / "scaling.json").write_text(json.dumps(scaling, indent=2))  # the job's own record
            runs[count].append(
                {
                    "job": name,
                    "training_seconds": scaling["training_seconds"],
                    "job_seconds": seconds,
                    "throughput": scaling["throughput"],
                    "sync_share": scaling["sync_share"],
                    "global_batch": scaling["global_batch"],
                    "metrics": metrics,
                    "records": scaling["records"],
                    **_epochs(scaling, job_folder / "logs" / "algo-1.log"),
                }
            )
    return _study(execution.id, shards, test_metric, runs, within, floor, folder)


def _study(
    execution_id: str,
    shards: int,
    test_metric: str,
    runs: dict[int, list[dict[str, Any]]],
    within: float,
    floor: float,
    folder: Path,
) -> ScalingStudy:
    """The rows, the recommendation, the plot and the JSON from each count's runs."""
    target = _target_loss(runs)
    rows = _rows(runs, test_metric, target)
    best = max(row.throughput for row in rows)
    recommended = next(row.instances for row in rows if row.throughput >= best / (1 + within))
    below = next((row.instances for row in rows if row.efficiency < floor), None)
    study = ScalingStudy(execution_id, shards, test_metric, rows, recommended, below, within, floor, target_loss=target)
    plot = folder / "scaling-study.png"
    _plot(study, plot)
    json_path = folder / "scaling-study.json"
    study = ScalingStudy(**{**study.__dict__, "plot": str(plot), "json_path": str(json_path)})
    json_path.write_text(json.dumps(study.to_dict(), indent=2))
    return study


@dataclass(frozen=True)
class _StepSpec:
    """The little of a planned step a training job reads: its name, and its arguments as the definition writes them
    (none here: a study's job has no parameters, so a limit it exceeds is named by its field)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


def _request(properties: dict[str, Any], name: str, count: int) -> dict[str, Any]:
    """The Train step's CreateTrainingJob request with only the instance count and the job name changed."""
    request = {key: copy.deepcopy(properties[key]) for key in TRAINING_REQUEST_KEYS if key in properties}
    request["TrainingJobName"] = name
    request["ResourceConfig"]["InstanceCount"] = count
    return request


def with_test_channel(channels: list[dict[str, Any]], execution: Any) -> list[dict[str, Any]]:
    """The study's channels: the Train request's plus Preprocess's test split as a ``test`` channel, which makes the
    trainer report the test metric the study compares (the pipeline's Train gets none: Evaluate scores the test
    split, docs/guides/very-large-data.md)."""
    preprocess = execution.record.steps.get(PREPROCESS)
    outputs = ((preprocess.properties if preprocess else {}).get("ProcessingOutputConfig") or {}).get("Outputs") or []
    return test_channel(channels, test_output(outputs))


def test_output(outputs: list[dict[str, Any]]) -> str | None:
    """The S3 URI of Preprocess's ``test`` output among its ProcessingOutputConfig's ``outputs`` (None without)."""
    return next((o["S3Output"]["S3Uri"] for o in outputs if o.get("OutputName") == "test"), None)


def test_channel(
    channels: list[dict[str, Any]], uri: str | None, input_mode: str | None = None
) -> list[dict[str, Any]]:
    """``channels`` plus a ``test`` channel of ``uri`` (FullyReplicated: the metric is of the whole split), in
    ``input_mode`` when given; unchanged without a URI or when a test channel is there already."""
    if uri is None or any(channel["ChannelName"] == "test" for channel in channels):
        return channels
    source = {"S3DataType": "S3Prefix", "S3Uri": uri, "S3DataDistributionType": "FullyReplicated"}
    channel: dict[str, Any] = {"ChannelName": "test", "ContentType": RECORDIO, "DataSource": {"S3DataSource": source}}
    if input_mode:
        channel["InputMode"] = input_mode
    return [*channels, channel]


def _epochs(scaling: dict[str, Any], log: Path) -> dict[str, Any]:
    """A local run's epochs (its scaling record's), the end time of each (its slowest host's, cumulative) and
    algo-1's validation loss after each (its log's quality lines)."""
    hosts = [host["epochs"] for host in scaling["hosts"] if host["epochs"]]
    epochs = max((len(epochs) for epochs in hosts), default=0)
    ends, elapsed = [], 0.0
    for index in range(epochs):
        elapsed += max(host[index]["seconds"] for host in hosts if index < len(host))
        ends.append(elapsed)
    losses: dict[int, float] = {}
    if log.is_file():
        for match in _EPOCH_LOSS.finditer(log.read_text()):
            losses[int(match.group(1))] = float(match.group(3))
    curve = [(ends[epoch], losses[epoch]) for epoch in sorted(losses) if epoch < len(ends)]
    return {"epochs": epochs, "loss_curve": curve}


def _target_loss(runs: dict[int, list[dict[str, Any]]]) -> float | None:
    """The loss every count reached: the largest of the counts' best losses (None when a count reports none)."""
    bests = []
    for items in runs.values():
        losses = [loss for item in items for _, loss in item.get("loss_curve", [])]
        if not losses:
            return None
        bests.append(min(losses))
    return max(bests)


def _time_to(curve: list[tuple[float, float]], target: float | None) -> float | None:
    """Seconds into training at the end of the first epoch whose loss is at most ``target``."""
    if target is None:
        return None
    return next((seconds for seconds, loss in curve if loss <= target), None)


def _rows(runs: dict[int, list[dict[str, Any]]], test_metric: str, target: float | None = None) -> list[StudyRow]:
    """Each count's figures. Speedup and efficiency are throughput ratios (records per second over all hosts), so
    counts that ran different epochs (early stopping) are still compared on the same work."""
    rows = []
    base_count = min(runs)
    base_throughput = statistics.median(item["throughput"] for item in runs[base_count])
    base_seconds = min(item["training_seconds"] for item in runs[base_count])
    base_rate = base_throughput / base_count
    for count, items in runs.items():
        seconds = [item["training_seconds"] for item in items]
        throughput = statistics.median(item["throughput"] for item in items)
        speedup = throughput / base_throughput * base_count if base_throughput > 0 else 0.0
        efficiency = speedup / count
        job_seconds = statistics.median(item["job_seconds"] for item in items)  # the whole job, as billed
        metrics = items[-1]["metrics"]
        epochs = [item.get("epochs") for item in items]
        per_epoch = [item["training_seconds"] / item["epochs"] for item in items if item.get("epochs")]
        reached = [_time_to(item.get("loss_curve", []), target) for item in items]
        records = [item["records"] for item in items if item.get("records") is not None]
        note = None
        if round(efficiency, 3) > 1:
            note = (
                f"above 100%: each of the {count} hosts trained {throughput / count:,.0f} records/s against "
                f"{base_rate:,.0f} for each of the {base_count}: the per-host work got faster, not the parallelism "
                "better (a smaller shard per host fits the caches, or the machine's load changed between the "
                "runs: repeat each count 3 times)"
            )
        rows.append(
            StudyRow(
                instances=count,
                runs=len(items),
                min_seconds=round(min(seconds), 4),
                median_seconds=round(statistics.median(seconds), 4),
                speedup=round(speedup, 3),
                efficiency=round(efficiency, 3),
                instance_seconds=round(count * job_seconds, 3),
                throughput=round(throughput, 1),
                sync_share=None
                if any(item["sync_share"] is None for item in items)
                else round(statistics.median(item["sync_share"] for item in items), 4),
                global_batch=int(items[-1]["global_batch"]),
                validation_objective=metrics.get("validation:objective_loss"),
                test_metric=metrics.get(test_metric),
                jobs=[item["job"] for item in items],
                epochs=epochs,
                records=int(statistics.median(records)) if records else None,
                seconds_per_epoch=round(min(per_epoch), 4) if per_epoch else None,
                time_to_loss=min((round(t, 4) for t in reached if t is not None), default=None),
                time_speedup=round(base_seconds / min(seconds) * base_count, 3) if min(seconds) > 0 else None,
                efficiency_note=note,
            )
        )
    return rows


def _plot(study: ScalingStudy, path: Path) -> None:
    """Speedup against the ideal line, efficiency, and instance-seconds, side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    counts = [row.instances for row in study.rows]
    figure, (left, middle, right) = plt.subplots(1, 3, figsize=(12, 3.6))
    try:
        left.plot(counts, counts, "--", color="grey", label="ideal")
        left.plot(counts, [row.speedup for row in study.rows], "o-", label="measured")
        left.set(title="speedup S(n), records/s", xlabel="instances")
        left.legend()
        middle.plot(counts, [row.efficiency for row in study.rows], "o-")
        middle.axhline(study.floor, color="red", linestyle=":", label=f"floor {study.floor:.0%}")
        middle.set(
            title="efficiency E(n)",
            xlabel="instances",
            ylim=(0, max(1.1, *[row.efficiency + 0.1 for row in study.rows])),
        )
        middle.legend()
        right.bar([str(n) for n in counts], [row.instance_seconds for row in study.rows])
        right.set(title="cost (instance-seconds)", xlabel="instances")
        figure.tight_layout()
        figure.savefig(path, dpi=80)
    finally:
        plt.close(figure)


def sagemaker_scaling_study(
    execution: Any,
    instances: Sequence[int] = (1, 2),
    *,
    repeats: int = 1,
    within: float = DEFAULT_WITHIN,
    floor: float = DEFAULT_FLOOR,
    output: Path | None = None,
    poll_seconds: float = 30.0,
    on_job: Any = None,
) -> ScalingStudy:
    """The study on SageMaker: the Train step's training job (DescribeTrainingJob) created again at each count with
    only InstanceCount and the name changed (CreateTrainingJob), watched to the end; training time is the job's
    Training status, cost its billable seconds times the instances, throughput its ``train:throughput``."""
    arn = execution._job_arn(TRAIN, "TrainingJob")
    if arn is None:
        raise ScalingStudyError(
            f"execution {execution.id} has no succeeded {TRAIN} training job to take the request from"
        )
    predictor = str(execution.parameters.get("PredictorType", BINARY_CLASSIFIER))
    folder = Path(output) if output else Path.cwd() / f"scaling-study-{execution.id}"
    preprocess = execution._job_arn(PREPROCESS, "ProcessingJob")
    # its test split, so the study's jobs report the test metric
    test_uri = preprocess_test_uri(execution.session.client("sagemaker"), preprocess) if preprocess else None
    return study_on_sagemaker(
        execution.session,
        arn.rsplit("/", 1)[-1],
        execution.id,
        predictor,
        instances,
        repeats=repeats,
        within=within,
        floor=floor,
        output=folder,
        poll_seconds=poll_seconds,
        on_job=on_job,
        test_uri=test_uri,
    )


def preprocess_test_uri(sagemaker: Any, arn: str) -> str | None:
    """The S3 URI of the test split Preprocess's processing job ``arn`` wrote (DescribeProcessingJob)."""
    described = sagemaker.describe_processing_job(ProcessingJobName=arn.rsplit("/", 1)[-1])
    return test_output((described.get("ProcessingOutputConfig") or {}).get("Outputs") or [])


def study_on_sagemaker(
    session: Any,
    train_job: str,
    execution_id: str,
    predictor: str,
    instances: Sequence[int],
    *,
    repeats: int,
    within: float,
    floor: float,
    output: Path,
    poll_seconds: float,
    on_job: Any = None,
    test_uri: str | None = None,
) -> ScalingStudy:
    """:func:`sagemaker_scaling_study` given the Train step's training job name (every call through ``session``).

    ``test_uri``: Preprocess's test split, given to every job as a ``test`` channel so the service reports the test
    metric the study compares (the pipeline's Train has none); streamed (Pipe), so it takes no room on the volume
    sized for the Train step's own channels."""
    from pipeline.sagemaker.scaling import status_seconds, study_request, train_objects

    counts = sorted(set(int(n) for n in instances))
    if not counts or counts[0] < 1 or repeats < 1:
        raise ScalingStudyError(f"{opt('instances')} needs counts of at least 1 and {opt('repeats')} at least 1")
    sagemaker, s3 = session.client("sagemaker"), session.client("s3")
    described = sagemaker.describe_training_job(TrainingJobName=train_job)
    [channel] = [c for c in described["InputDataConfig"] if c["ChannelName"] == "train"]
    prefix = channel["DataSource"]["S3DataSource"]["S3Uri"]
    shards = len(train_objects(s3, prefix))
    check_shards(counts, shards, prefix)
    test_metric = TEST_METRICS.get(predictor, REGRESSION_TEST_METRIC)
    names: dict[str, int] = {}
    for repeat in range(repeats):
        for count in counts:
            name = f"scaling-{execution_id[:24]}-{count}x-{repeat + 1}"[:63]
            if on_job is not None:
                on_job(count, repeat + 1, name)
            request = study_request(described, name, count, execution_id)
            request["InputDataConfig"] = test_channel(request["InputDataConfig"], test_uri, "Pipe")
            sagemaker.create_training_job(**request)
            names[name] = count
    runs: dict[int, list[dict[str, Any]]] = {n: [] for n in counts}
    pending = list(names)
    while pending:
        for name in list(pending):
            job = sagemaker.describe_training_job(TrainingJobName=name)
            status = job["TrainingJobStatus"]
            if status in ("InProgress", "Stopping"):
                continue
            pending.remove(name)
            if status != "Completed":
                raise ScalingStudyError(f"training job {name} ended {status}: {job.get('FailureReason', '')}")
            metrics = {item["MetricName"]: item["Value"] for item in job.get("FinalMetricDataList", [])}
            count = names[name]
            batch = int((job.get("HyperParameters") or {}).get("mini_batch_size", 1000))
            runs[count].append(
                {
                    "job": name,
                    "training_seconds": status_seconds(job).get("Training", 0.0),
                    "job_seconds": float(job.get("BillableTimeInSeconds") or job.get("TrainingTimeInSeconds") or 0),
                    "throughput": float(metrics.get("train:throughput", 0.0)),
                    "sync_share": None,  # the service reports no wait time
                    "global_batch": count * batch,
                    "metrics": metrics,
                    "epochs": None,  # the service reports neither epochs nor a per-epoch loss
                    "records": None,
                }
            )
        if pending:
            time.sleep(poll_seconds)
    output.mkdir(parents=True, exist_ok=True)
    return _study(execution_id, shards, test_metric, runs, within, floor, output)
