"""The scaling record of a training job: what each host did and how well the hosts worked together.

Linear Learner trains data parallel: each host reads its ShardedByS3Key shards, and every mini-batch step the hosts'
gradients are summed (a parameter server), so a host waits for the slowest one every step. The record says, per
host, how many records it trained on, how long it computed and how long it waited for the others; per job, the
global batch (the mini-batch is per host), the total throughput, the synchronisation share of training time, the
imbalance between hosts and the hosts left idle without a shard. Both backends build it with ``job_record``; the
SageMaker side adds what the service reports (``service``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pipeline.core.names import split_fractions

SLOW_HOST_SHARE = 0.5  # a host below this share of the median host's throughput is named as slow


@dataclass(frozen=True)
class EpochRecord:
    """One epoch on one host."""

    epoch: int
    records: int
    seconds: float
    sync_seconds: float


@dataclass(frozen=True)
class HostRecord:
    """One host of a training job: its shards, records, time computing and time waiting for the other hosts."""

    host: str
    train_shards: int
    records: int = 0
    seconds: float = 0.0  # training wall time (sum of its epochs)
    sync_seconds: float = 0.0
    epochs: tuple[EpochRecord, ...] = ()
    cpu_utilization: float | None = None  # SageMaker: the host's mean CloudWatch CPUUtilization (%)
    throughput_lines: tuple[float, ...] = ()  # SageMaker: the records/s of its #throughput_metric log lines

    @property
    def compute_seconds(self) -> float:
        return max(self.seconds - self.sync_seconds, 0.0)

    @property
    def records_per_second(self) -> float:
        if self.seconds > 0:
            return self.records / self.seconds
        return self.throughput_lines[-1] if self.throughput_lines else 0.0

    @property
    def idle(self) -> bool:
        return self.train_shards == 0

    @property
    def timed(self) -> bool:
        """Whether its compute and wait times were measured (the local hosts; the service reports neither)."""
        return self.seconds > 0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["epochs"] = [asdict(epoch) for epoch in self.epochs]
        data["throughput_lines"] = list(self.throughput_lines)
        data.update(
            compute_seconds=round(self.compute_seconds, 4),
            records_per_second=round(self.records_per_second, 1),
            idle=self.idle,
        )
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HostRecord:
        return cls(
            host=str(data["host"]),
            train_shards=int(data.get("train_shards", 0)),
            records=int(data.get("records", 0)),
            seconds=float(data.get("seconds", 0.0)),
            sync_seconds=float(data.get("sync_seconds", 0.0)),
            epochs=tuple(EpochRecord(**epoch) for epoch in data.get("epochs", [])),
            cpu_utilization=data.get("cpu_utilization"),
            throughput_lines=tuple(float(v) for v in data.get("throughput_lines", [])),
        )


@dataclass(frozen=True)
class ScalingRecord:
    """A training job's scaling: its hosts and what they add up to (``service``: the SageMaker job's own figures)."""

    job: str
    mini_batch_size: int
    hosts: tuple[HostRecord, ...]
    service: dict[str, Any] = field(default_factory=dict)

    @property
    def instances(self) -> int:
        return len(self.hosts)

    @property
    def global_batch(self) -> int:
        """Records per synchronised step over all hosts: Linear Learner's mini_batch_size is per host."""
        return self.instances * self.mini_batch_size

    @property
    def training_seconds(self) -> float:
        """The job's training wall time: its slowest host's."""
        return max((host.seconds for host in self.hosts), default=0.0)

    @property
    def records(self) -> int:
        return sum(host.records for host in self.hosts)

    @property
    def throughput(self) -> float:
        """Records per second over all hosts."""
        if self.training_seconds > 0:
            return self.records / self.training_seconds
        return sum(host.records_per_second for host in self.hosts)

    @property
    def sync_share(self) -> float:
        """Share of the hosts' training time spent waiting for the others (0 with one host)."""
        busy = [host for host in self.hosts if not host.idle]
        total = sum(host.seconds for host in busy)
        return sum(host.sync_seconds for host in busy) / total if total > 0 else 0.0

    @property
    def imbalance(self) -> float:
        """Slowest working host's compute time over the fastest's (1.0: perfectly even shards)."""
        times = [host.compute_seconds for host in self.hosts if not host.idle and host.compute_seconds > 0]
        if len(times) < 2:
            rates = [host.records_per_second for host in self.hosts if not host.idle and host.records_per_second > 0]
            return max(rates) / min(rates) if len(rates) >= 2 else 1.0
        return max(times) / min(times)

    @property
    def idle_hosts(self) -> list[str]:
        """Hosts that had no train shard (ShardedByS3Key with more instances than files)."""
        return [host.host for host in self.hosts if host.idle]

    @property
    def slow_hosts(self) -> list[str]:
        """Working hosts far below the others (under half the median host's records/s or CPU)."""
        working = [host for host in self.hosts if not host.idle]
        slow: set[str] = set()
        for value in (lambda h: h.records_per_second, lambda h: h.cpu_utilization):
            values = sorted(v for v in (value(h) for h in working) if v)
            if len(values) < 2:
                continue
            median = values[len(values) // 2]
            slow |= {h.host for h in working if value(h) is not None and value(h) < SLOW_HOST_SHARE * median}
        return sorted(slow)

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "instances": self.instances,
            "mini_batch_size": self.mini_batch_size,
            "global_batch": self.global_batch,
            "training_seconds": round(self.training_seconds, 4),
            "records": self.records,
            "throughput": round(self.throughput, 1),
            "sync_share": round(self.sync_share, 4),
            "imbalance": round(self.imbalance, 4),
            "idle_hosts": self.idle_hosts,
            "slow_hosts": self.slow_hosts,
            "hosts": [host.to_dict() for host in self.hosts],
            "service": self.service,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScalingRecord:
        return cls(
            job=str(data.get("job", "")),
            mini_batch_size=int(data.get("mini_batch_size", 0)),
            hosts=tuple(HostRecord.from_dict(host) for host in data.get("hosts", [])),
            service=dict(data.get("service", {})),
        )


def host_record(host: str, train_shards: int, epochs: Sequence[EpochRecord]) -> HostRecord:
    """A host's record from its epochs."""
    return HostRecord(
        host=host,
        train_shards=train_shards,
        records=sum(epoch.records for epoch in epochs),
        seconds=sum(epoch.seconds for epoch in epochs),
        sync_seconds=sum(epoch.sync_seconds for epoch in epochs),
        epochs=tuple(epochs),
    )


def summary_line(record: ScalingRecord) -> str:
    """One line for the run summary: instances, global batch, throughput, sync share, imbalance, idle hosts."""
    sync = f"{record.sync_share:.0%}" if any(host.timed for host in record.hosts) else "not reported"
    text = (
        f"{record.instances} instance(s), global batch {record.global_batch:,}, "
        f"{record.throughput:,.0f} records/s, sync {sync}, imbalance {record.imbalance:.2f}"
    )
    if record.idle_hosts:
        text += f", idle: {', '.join(record.idle_hosts)}"
    if record.slow_hosts:
        text += f", slow: {', '.join(record.slow_hosts)}"
    return text


def host_rows(record: ScalingRecord) -> list[list[str]]:
    """Per-host rows for tables: host, shards, records, records/s, compute s, sync s, sync share, CPU %; "-" where a
    time was not measured (a SageMaker host: the service reports neither compute nor wait time)."""
    rows = []
    for host in record.hosts:
        share = host.sync_seconds / host.seconds if host.seconds > 0 else 0.0
        cpu = "" if host.cpu_utilization is None else f"{host.cpu_utilization:.0f}"
        timed = host.timed or host.idle
        rows.append(
            [
                host.host + (" (idle)" if host.idle else ""),
                str(host.train_shards),
                f"{host.records:,}",
                f"{host.records_per_second:,.0f}",
                f"{host.compute_seconds:.2f}" if timed else "-",
                f"{host.sync_seconds:.2f}" if timed else "-",
                f"{share:.0%}" if timed else "-",
                cpu,
            ]
        )
    return rows


HOST_COLUMNS = ["host", "shards", "records", "records/s", "compute s", "sync s", "sync", "CPU %"]


def preflight_warnings(
    instances: int, mini_batch_size: int, train_shards: int | None, train_rows: float | None
) -> list[str]:
    """What a run should hear before it starts: hosts that would idle without a train shard (ShardedByS3Key), and a
    mini-batch larger than the records one host sees (Linear Learner's mini-batch is per host)."""
    found = []
    if train_shards is not None and instances > train_shards:
        found.append(
            f"TrainingInstanceCount={instances} but the run will have {train_shards} train shard(s): with "
            f"ShardedByS3Key {instances - train_shards} host(s) would get no data; use at most {train_shards} "
            "instances or more train shards"
        )
    if train_rows is not None and instances > 0 and mini_batch_size > train_rows / instances:
        found.append(
            f"MiniBatchSize={mini_batch_size} is larger than the about {train_rows / instances:.0f} train records one "
            f"of the {instances} host(s) will see (the mini-batch is per host): a step would take the whole shard, a "
            "few updates an epoch (the local trainer shrinks it to 20 updates an epoch, the service may not); use a "
            "smaller MiniBatchSize or fewer instances"
        )
    return found


def run_preflight_warnings(values: Mapping[str, Any], data_files: int, data_rows: float | None) -> list[str]:
    """``preflight_warnings`` for a run with these (typed) parameter values on ``data_files`` input files of
    ``data_rows`` rows (None: unknown): Preprocess writes ceil(TrainingInstanceCount / hosts) train shards on each
    of its min(ProcessingInstanceCount, files) hosts, and the train split is what the split fractions leave.
    ``llpipe run`` and ``llpipe start`` both warn with it."""
    training, processing = values.get("TrainingInstanceCount"), values.get("ProcessingInstanceCount")
    batch = values.get("MiniBatchSize")
    if not isinstance(training, int) or not isinstance(batch, int) or training < 1:
        return []
    shards = None
    if isinstance(processing, int) and processing >= 1 and data_files >= 1:
        hosts = min(processing, data_files)
        shards = hosts * math.ceil(training / hosts)
    held_out = sum(split_fractions(values).values())
    rows = None if data_rows is None else data_rows * (1 - held_out)
    return preflight_warnings(training, batch, shards, rows)
