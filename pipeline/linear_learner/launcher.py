"""Run a local Linear Learner training job the way SageMaker does: one container root and one process per instance.

``train`` lays out ``work_dir/algo-N/`` like ``/opt/ml`` (config files, the host's share of every channel, model/,
output/), starts ``python -m pipeline.linear_learner.train --root ROOT`` for every host, runs the parameter
server that synchronises their gradients, streams their logs, and fails fast with the failing host's error.
``transform`` is batch transform: it reads only the ``model.tar.gz`` artifact.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.core.errors import TrainingError
from pipeline.core.files import atomic_path, write_text_atomically
from pipeline.core.limits import Limits, groups_rss, held_bytes
from pipeline.core.names import RECORDIO, TRAINING_CONTENT_TYPES, media_type
from pipeline.core.processes import JobProcess, kill_group
from pipeline.core.processes import start as start_process
from pipeline.core.sharding import DISTRIBUTIONS, objects_for_instance
from pipeline.core.stale import owned_temp_folder_prefix, sweep_temp_folders
from pipeline.linear_learner.train import (
    EXIT_ABORTED,
    EXIT_PEER_SILENT,
    HYPERPARAMETERS_FILE,
    INPUT_DATA_CONFIG_FILE,
    RESOURCE_CONFIG_FILE,
)

if TYPE_CHECKING:
    from pipeline.core.forkserver import ForkServers

AUTHKEY_ENV = "LLPIPE_LL_AUTHKEY"
HEARTBEAT_ENV = "LLPIPE_TRAINING_HEARTBEAT_SECONDS"
DEFAULT_HEARTBEAT_SECONDS = 60.0
CONNECT_ENV = "LLPIPE_TRAINING_CONNECT_SECONDS"
DEFAULT_CONNECT_SECONDS = 300.0
ROOT_CAUSE_WAIT_SECONDS = 30.0  # after an aborted instance ended, the longest wait for the failure that aborted it
# what a fork server imports once for all the instances (pipeline.core.forkserver): only what train imports anyway
TRAINING_PRELOAD = ("numpy",)


@dataclass(frozen=True)
class Channel:
    """One input channel: its local files (all of them, before sharding), distribution and content type."""

    files: list[Path] = field(default_factory=list)
    distribution: str = "FullyReplicated"
    content_type: str = RECORDIO
    # Pipe: the service streams the channel and, with a ShuffleConfig, shuffles its objects every epoch and deals
    # them to the hosts afresh; so do the local hosts (pipeline.linear_learner.dealt), given the Seed
    input_mode: str = "File"
    shuffle_seed: int | None = None  # the channel's ShuffleConfig.Seed, if any


@dataclass(frozen=True)
class TrainingResult:
    """Where the model artifact was written, the final metrics keyed by the service's names, and what the run did
    beyond the artifact (epochs run, resolved hyperparameters; also in ``training.json`` beside the artifact)."""

    model_path: Path
    metrics: dict[str, float]
    epochs_run: int = 0
    hyperparameters: dict[str, str] = field(default_factory=dict)
    scaling: dict = field(default_factory=dict)  # the job's scaling record (pipeline.core.scaling), as a dict


TEMP_KIND = "linear-learner"  # the system temp folders of jobs run without a work dir: linear-learner-<pid>-*
EXCHANGE_KIND = "llpipe-exchange"  # the hosts' shared-memory folders (/dev/shm): llpipe-exchange-<pid>-*


def host_name(index: int) -> str:
    """SageMaker's host name for instance ``index`` (0-based)."""
    return f"algo-{index + 1}"


def train(
    hyperparameters: Mapping[str, str],
    channels: Mapping[str, Channel],
    output_dir: Path,
    *,
    instance_count: int = 1,
    work_dir: Path | None = None,
    on_log: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
    limits: Limits | None = None,
    fork_servers: ForkServers | None = None,
) -> TrainingResult:
    """Train on ``instance_count`` local processes and write ``model.tar.gz``, ``metrics.json``, ``training.json``.

    Setting ``stop`` ends every instance's process group and raises ``TrainingError``; so does an instance past
    ``limits`` (its volume: the channels it downloaded, not those streamed in Pipe mode, and what it wrote; its
    memory: its process's RSS). ``fork_servers`` starts the instances' processes (None: fresh processes)."""
    if instance_count < 1:
        raise TrainingError(f"instance_count must be at least 1, got {instance_count}")
    _check_channels(channels, instance_count)
    output_dir = Path(output_dir)
    log = on_log or (lambda line: None)
    temporary = None
    sweep_temp_folders(TEMP_KIND, legacy=(f"{TEMP_KIND}-",))  # what killed runs left in the system temp folder
    if work_dir is None:
        temporary = tempfile.TemporaryDirectory(prefix=owned_temp_folder_prefix(TEMP_KIND))
        work_dir = Path(temporary.name)
    try:
        sources: dict[str, str] = {}  # an instance's copy of an input file -> the file it came from
        roots = [
            _lay_out_root(Path(work_dir), index, instance_count, hyperparameters, channels, sources)
            for index in range(instance_count)
        ]
        try:
            streamed = tuple(name for name, channel in channels.items() if channel.input_mode == "Pipe")
            watch = Watch(limits, streamed) if limits else None
            _run_instances(roots, log, stop or threading.Event(), watch, fork_servers)
        except TrainingError as error:  # name the user's files, not the instances' copies (often removed by now)
            raise TrainingError(_with_sources(str(error), sources)) from None
        return _collect(roots, output_dir, hyperparameters)
    finally:
        if temporary is not None:
            temporary.cleanup()


def _check_channels(channels: Mapping[str, Channel], instance_count: int) -> None:
    for name, channel in channels.items():
        if channel.distribution == "ShardedByS3Key" and len(channel.files) < instance_count:
            idle = ", ".join(host_name(index) for index in range(len(channel.files), instance_count))
            raise TrainingError(
                f"more instances ({instance_count}) than shards ({len(channel.files)}) in channel {name!r} "
                f"(ShardedByS3Key): {idle} would get no data; use at most {len(channel.files)} instance(s) or split "
                "the data into more files"
            )
        if channel.distribution not in DISTRIBUTIONS:
            raise TrainingError(
                f"channel {name!r}: unknown distribution {channel.distribution!r}; expected one of {DISTRIBUTIONS}"
            )
        if media_type(channel.content_type) not in TRAINING_CONTENT_TYPES:  # e.g. "text/csv;label_size=1"
            raise TrainingError(
                f"channel {name!r}: content type {channel.content_type!r} is not supported; "
                f"expected one of {TRAINING_CONTENT_TYPES}"
            )


def _with_sources(text: str, sources: Mapping[str, str]) -> str:
    for copy, source in sources.items():
        text = text.replace(copy, source)
    return text


def _lay_out_root(
    work_dir: Path,
    index: int,
    count: int,
    hyperparameters: Mapping[str, str],
    channels: Mapping[str, Channel],
    sources: dict[str, str],
) -> Path:
    """Create ``work_dir/algo-N`` in SageMaker's /opt/ml layout with this host's files of every channel."""
    host = host_name(index)
    root = work_dir / host
    if root.exists():
        shutil.rmtree(root)
    (root / RESOURCE_CONFIG_FILE).parent.mkdir(parents=True)
    (root / "model").mkdir()
    (root / "output" / "data").mkdir(parents=True)
    (root / HYPERPARAMETERS_FILE).write_text(json.dumps({k: str(v) for k, v in hyperparameters.items()}))
    (root / RESOURCE_CONFIG_FILE).write_text(
        json.dumps(
            {"current_host": host, "hosts": [host_name(i) for i in range(count)], "network_interface_name": "lo"}
        )
    )
    data_config = {}
    for name, channel in channels.items():
        data_config[name] = {
            "ContentType": channel.content_type,
            "TrainingInputMode": channel.input_mode,
            "S3DistributionType": channel.distribution,
            "RecordWrapperType": "None",
        }
        channel_dir = root / "input" / "data" / name
        channel_dir.mkdir(parents=True)
        distribution = channel.distribution
        if channel.input_mode == "Pipe" and channel.shuffle_seed is not None:
            # any object may be streamed to this host in some epoch: it gets them all and deals them itself
            data_config[name]["ShuffleConfig"] = {"Seed": channel.shuffle_seed}
            distribution = "FullyReplicated"
        files = objects_for_instance([Path(f) for f in channel.files], distribution, index, count)
        for position, source in enumerate(files):
            # a position prefix keeps the sharded order and tells apart equal names from different folders
            _link_or_copy(source, channel_dir / f"{position:06d}-{source.name}")
            sources[str(channel_dir / f"{position:06d}-{source.name}")] = str(source)
    (root / INPUT_DATA_CONFIG_FILE).write_text(json.dumps(data_config))
    return root


def _link_or_copy(source: Path, target: Path) -> None:
    if not source.is_file():
        raise TrainingError(f"input file {source} does not exist")
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


@dataclass
class Watch:
    """The limits an instance is held to while it trains, measured every ``interval`` seconds."""

    limits: Limits
    streamed: tuple[str, ...]  # Pipe-mode channels: streamed on the service, so not on the volume
    interval: float = 0.2
    measured: float = 0.0
    peaks: dict[int, int] = field(default_factory=dict)  # instance -> the most its processes were measured to hold

    def held(self, root: Path) -> int:
        """What the instance's volume holds: its downloaded channels, its model and output folders."""
        data = root / "input" / "data"
        channels = [path for path in data.iterdir() if path.name not in self.streamed] if data.is_dir() else []
        return held_bytes([*channels, root / "model", root / "output"])

    def check(self, processes: list[JobProcess], roots: list[Path]) -> str | None:
        """Why the first instance past its memory or volume must fail (at most every ``interval``), else None."""
        if time.monotonic() - self.measured < self.interval:
            return None
        self.measured = time.monotonic()
        # fewer processes than roots when stopped while they started
        running = {process.pid for process, _ in zip(processes, roots, strict=False) if process.poll() is None}
        measured = groups_rss(running)  # every instance from one pass over /proc
        for index, (process, root) in enumerate(zip(processes, roots, strict=False)):
            if process.pid in running:
                rss = measured[process.pid]
                self.peaks[index] = max(self.peaks.get(index, 0), rss)
                error = self.limits.memory_error(host_name(index), rss)
                error = error or self.limits.volume_error(host_name(index), self.held(root))
                if error:
                    return error
        return None


def _run_instances(
    roots: list[Path],
    log: Callable[[str], None],
    stop: threading.Event,
    watch: Watch | None = None,
    fork_servers: ForkServers | None = None,
) -> None:
    """Start one process per root, stream their logs and raise ``TrainingError`` as soon as one fails."""
    from pipeline.linear_learner import shared
    from pipeline.linear_learner.collective import ParameterServer

    server = None
    exchange = None
    env = dict(os.environ)
    # a channel dealt afresh every epoch is decoded once, here, for all the hosts (pipeline.linear_learner.dealt)
    extra_args: list[str] = ["--stream-cache", str(roots[0].parent / "streamed")]
    if len(roots) > 1:
        authkey = secrets.token_bytes(16)
        # on one machine the hosts exchange through shared memory; the server then only sees them connect
        fast = shared.available()
        server = ParameterServer(
            len(roots),
            authkey,
            timeout=heartbeat_timeout(),
            connect_timeout=connect_timeout(),
            names=[host_name(index) for index in range(len(roots))],
            relay=not fast,
        )
        server.start()
        host, port = server.address
        extra_args += ["--coordinator", f"{host}:{port}"]
        if fast:
            # named by this process's pid, so that the next training removes it if this process is killed (SIGKILL
            # skips the cleanup below): empty folders otherwise piled up in /dev/shm, one per killed run
            folder = shared.exchange_folder()
            sweep_temp_folders(EXCHANGE_KIND, folder, legacy=(f"{EXCHANGE_KIND}-",))
            exchange = tempfile.TemporaryDirectory(prefix=owned_temp_folder_prefix(EXCHANGE_KIND), dir=folder)
            extra_args += ["--exchange", exchange.name, "--heartbeat", f"{heartbeat_timeout():g}"]
            extra_args += ["--connect-timeout", f"{connect_timeout():g}"]
        env[AUTHKEY_ENV] = authkey.hex()
    lines: queue.Queue[tuple[str, str]] = queue.Queue()
    processes = []
    readers = []
    try:
        for index, root in enumerate(roots):
            if stop.is_set():  # stopped while the instances start (hundreds take a while): start no more
                raise TrainingError("stopped while the instances were starting")
            # its own process group, ended as a whole; dies with this process
            command = [sys.executable, "-m", "pipeline.linear_learner.train", "--root", str(root), *extra_args]
            output = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True}
            if fork_servers is None:
                process: JobProcess = start_process(command, env=env, **output)
            else:
                begun = fork_servers.start(command, env=env, preload=TRAINING_PRELOAD, **output)
                process = begun.process
                if not begun.forked and index == 0:  # why the instances start fresh, once per job
                    log(f"[llpipe] instances start as fresh processes: {begun.reason}")
            processes.append(process)
            reader = threading.Thread(target=_pump, args=(process, host_name(index), lines), daemon=True)
            reader.start()
            readers.append(reader)
        failure = _wait(processes, roots, lines, log, stop, server, watch)
        if failure is not None:
            if server is not None and server.error and f"exit code {EXIT_ABORTED})" in failure:
                failure += f" (parameter server: {server.error})"
            raise TrainingError(failure)
    finally:
        for process in processes:
            if process.poll() is None:
                kill_group(process)
        if server is not None:
            server.stop()
        for process in processes:
            process.wait()
        if exchange is not None:
            exchange.cleanup()
        for reader in readers:
            reader.join(timeout=5)
        _drain(lines, log)


def _pump(process: JobProcess, host: str, lines: queue.Queue) -> None:
    assert process.stdout is not None
    with process.stdout:  # closed at the end of the output, not left open for the garbage collector
        for line in process.stdout:
            lines.put((host, line.rstrip("\n")))


def _drain(lines: queue.Queue, log: Callable[[str], None]) -> None:
    while True:
        try:
            host, line = lines.get_nowait()
        except queue.Empty:
            return
        log(f"[{host}] {line}")


def heartbeat_timeout() -> float:
    """Seconds an instance may go without reaching the parameter server before the job fails naming it
    (``LLPIPE_TRAINING_HEARTBEAT_SECONDS``, default 60): a stopped or hung instance is reported, not waited for."""
    return _seconds(HEARTBEAT_ENV, DEFAULT_HEARTBEAT_SECONDS)


def connect_timeout() -> float:
    """Seconds every instance has from its start to connect to the parameter server (it reads its data first)
    before the job fails naming the missing ones (``LLPIPE_TRAINING_CONNECT_SECONDS``, default 300)."""
    return _seconds(CONNECT_ENV, DEFAULT_CONNECT_SECONDS)


def _seconds(variable: str, default: float) -> float:
    text = os.environ.get(variable, "")
    try:
        seconds = float(text) if text else default
    except ValueError:
        raise TrainingError(f"{variable}={text!r} is not a number of seconds") from None
    if not seconds > 0:
        raise TrainingError(f"{variable}={text!r} must be a positive number of seconds")
    return seconds


def _wait(
    processes: list[JobProcess],
    roots: list[Path],
    lines: queue.Queue,
    log: Callable[[str], None],
    stop: threading.Event,
    server: object = None,
    watch: Watch | None = None,
) -> str | None:
    """Wait for all processes; return the failure message of the root-cause host, or None on success.

    An instance that stopped because another failed (exit EXIT_ABORTED) may end before the one that failed: the
    failure is reported once a host that was not aborted has ended, or every host has (or, as a guard against a
    host that never ends, ROOT_CAUSE_WAIT_SECONDS after the first aborted one). An instance that found a peer silent
    past the heartbeat (exit EXIT_PEER_SILENT) names the root cause itself: that peer is stopped or hung and will not
    end to report it, so its report is taken at once (after any host that failed of its own)."""
    aborted_at = None
    while True:
        if stop.is_set():
            return "stopped: the execution is being stopped"
        exceeded = watch.check(processes, roots) if watch is not None else None
        if exceeded:
            return exceeded
        stalled = getattr(server, "error", None) if getattr(server, "stalled", False) else None
        if stalled:
            limit = HEARTBEAT_ENV if getattr(server, "connected", True) else CONNECT_ENV
            return f"{stalled} ({limit} sets this limit)"
        try:
            host, line = lines.get(timeout=0.05)
            log(f"[{host}] {line}")
            continue
        except queue.Empty:
            pass
        codes = [p.poll() for p in processes]
        failed = [i for i, code in enumerate(codes) if code not in (None, 0)]
        if failed:
            causes = [i for i in failed if codes[i] not in (EXIT_ABORTED, EXIT_PEER_SILENT)]
            silent = [i for i in failed if codes[i] == EXIT_PEER_SILENT]
            aborted_at = aborted_at or time.monotonic()
            everyone_ended = all(code is not None for code in codes)
            if causes or silent or everyone_ended or time.monotonic() - aborted_at > ROOT_CAUSE_WAIT_SECONDS:
                index = (causes or silent or failed)[0]
                code = codes[index]
                limits = watch.limits if watch is not None else Limits(step="training job")
                peak = watch.peaks.get(index, 0) if watch is not None else 0
                killed = limits.signal_error(host_name(index), code, peak)
                if killed:  # ended by a signal from outside (the OOM killer): says so, whatever its output holds
                    return killed
                return f"{host_name(index)} failed (exit code {code}): {_failure_text(roots[index])}"
        if all(code == 0 for code in codes):
            return None


def _failure_text(root: Path) -> str:
    failure = root / "output" / "failure"
    if failure.is_file():
        return failure.read_text().strip() or "no failure message"
    return "the process ended without writing output/failure"


def _scaling(roots: list[Path], hyperparameters: Mapping[str, str]) -> dict:
    """The job's scaling record from every host's ``output/scaling.json``."""
    from pipeline.core.scaling import EpochRecord, ScalingRecord, host_record

    hosts = []
    for index, root in enumerate(roots):
        path = root / "output" / "scaling.json"
        data = json.loads(path.read_text()) if path.is_file() else {"train_shards": 0, "epochs": []}
        epochs = [EpochRecord(**epoch) for epoch in data["epochs"]]
        hosts.append(host_record(host_name(index), int(data["train_shards"]), epochs))
    try:
        batch = int(hyperparameters.get("mini_batch_size", 1000))
    except ValueError:
        batch = 0
    return ScalingRecord(job="", mini_batch_size=batch, hosts=tuple(hosts)).to_dict()


def _collect(roots: list[Path], output_dir: Path, hyperparameters: Mapping[str, str]) -> TrainingResult:
    """Copy algo-1's artifact, metrics and training.json, and the job's scaling.json, into ``output_dir``
    (temporary names, then rename)."""
    root = roots[0]
    artifact = root / "model" / "model.tar.gz"
    metrics_file = root / "output" / "metrics.json"
    if not artifact.is_file():
        raise TrainingError(f"algo-1 finished without writing {artifact}")
    metrics = json.loads(metrics_file.read_text()) if metrics_file.is_file() else {}
    training_file = root / "output" / "training.json"
    training = json.loads(training_file.read_text()) if training_file.is_file() else {}
    scaling = _scaling(roots, training.get("hyperparameters") or hyperparameters)
    output_dir.mkdir(parents=True, exist_ok=True)
    model_path = output_dir / "model.tar.gz"
    _atomic_copy(artifact, model_path)
    for name, value in (("metrics.json", metrics), ("training.json", training), ("scaling.json", scaling)):
        write_text_atomically(output_dir / name, json.dumps(value, indent=2, sort_keys=True))
    return TrainingResult(
        model_path=model_path,
        metrics={k: float(v) for k, v in metrics.items()},
        epochs_run=int(training.get("epochs_run", 0)),
        hyperparameters=dict(training.get("hyperparameters", {})),
        scaling=scaling,
    )


def _atomic_copy(source: Path, target: Path) -> None:
    with atomic_path(target) as temporary:
        shutil.copyfile(source, temporary)


def transform(
    model_path: Path, input_files: Sequence[Path], output_dir: Path, *, content_type: str = RECORDIO
) -> list[Path]:
    """Batch transform: for each input file F write ``output_dir/F.name + ".out"`` (jsonlines, in record order)."""
    from pipeline.linear_learner.inference import transform_files

    content_type = media_type(content_type)
    if content_type not in TRAINING_CONTENT_TYPES:
        raise ValueError(f"content type {content_type!r} is not supported; expected one of {TRAINING_CONTENT_TYPES}")
    return transform_files(Path(model_path), [Path(f) for f in input_files], Path(output_dir), content_type)
