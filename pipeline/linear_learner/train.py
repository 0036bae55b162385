"""One Linear Learner training instance, with SageMaker's container contract.

``python -m pipeline.linear_learner.train --root ROOT [--coordinator HOST:PORT]`` reads
``ROOT/input/config/{hyperparameters,resourceconfig,inputdataconfig}.json`` and ``ROOT/input/data/<channel>/``,
trains (synchronising gradients with the other instances through the coordinator), and on algo-1 writes
``ROOT/model/model.tar.gz`` (the service's layout), ``ROOT/output/metrics.json`` and ``ROOT/output/training.json``
(epochs run, resolved hyperparameters). On error it writes ``ROOT/output/failure`` and exits
non-zero (3 when it only stopped because another instance failed).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.core.errors import AlgorithmInputError
from pipeline.core.files import write_text_atomically
from pipeline.core.names import RECORDIO, TRAINING_CONTENT_TYPES, media_type

CHANNELS = ("train", "validation", "test")
EXIT_FAILED = 1
EXIT_ABORTED = 3  # stopped because another instance failed: not the root cause
EXIT_PEER_SILENT = 4  # stopped because a peer went silent past the heartbeat: the failure names the root cause
# the configuration files under the container root (/opt/ml) the launcher writes, as the service's agent does
HYPERPARAMETERS_FILE = "input/config/hyperparameters.json"
RESOURCE_CONFIG_FILE = "input/config/resourceconfig.json"
INPUT_DATA_CONFIG_FILE = "input/config/inputdataconfig.json"


def log(line: str) -> None:
    """A log line with the service's prefix: [date time INFO pid] message."""
    stamp = time.strftime("%m/%d/%Y %H:%M:%S", time.gmtime())
    print(f"[{stamp} INFO {os.getpid()}] {line}", flush=True)


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise AlgorithmInputError(f"{path} is missing") from None
    except json.JSONDecodeError as error:
        raise AlgorithmInputError(f"{path} is not valid JSON: {error}") from None


@dataclass
class _Instance:
    """This instance's view of the job: who it is among the hosts, and its channels' content types."""

    host: str
    hosts: list[str]
    channels: dict[str, str]  # channel name -> content type
    replicated: frozenset[str] = frozenset()  # channels every host receives whole (FullyReplicated)
    # Pipe-mode channels with a ShuffleConfig: name -> Seed; the objects are dealt afresh every epoch (dealt.py)
    shuffled: dict[str, int] = field(default_factory=dict)

    @property
    def rank(self) -> int:
        return self.hosts.index(self.host)

    @property
    def leader(self) -> bool:
        return self.rank == 0


@dataclass(frozen=True)
class Exchange:
    """How the local launcher's hosts exchange gradients: a shared-memory folder and its time limits."""

    folder: Path
    heartbeat: float
    connect: float


def run(
    root: Path, coordinator: str | None, exchange: Exchange | None = None, stream_cache: Path | None = None
) -> None:
    """Train this instance: read the configuration and channels, fit with the other instances, write the outputs.

    ``stream_cache``: where the objects of a channel dealt afresh every epoch are decoded, shared by the local hosts
    (default: this instance's own folder)."""
    from pipeline.linear_learner.hyperparameters import parse_hyperparameters

    hp = parse_hyperparameters(_read_json(root / HYPERPARAMETERS_FILE))
    log(f"Final configuration: {hp.resolved()}")
    instance = _instance(root)
    # inside the instance's root, not the system temp folder: whoever removes the root (the job, after any end,
    # including SIGKILL of this process) removes the blocks too
    with tempfile.TemporaryDirectory(prefix="linear-learner-blocks-", dir=root) as blocks:
        train, validation, test = _read_channels(root, hp, instance, Path(blocks), stream_cache)
        collective = _connect(instance, coordinator, exchange)

        from pipeline.linear_learner.trainer import fit

        try:
            sharded = "validation" in instance.channels and "validation" not in instance.replicated
            result = fit(hp, train, validation, collective, log, instance.host, sharded_validation=sharded)
        finally:
            collective.close()
        _write_scaling(root, instance.host, result, train)
        if instance.leader:
            _write_outputs(root, hp, result, instance.host, {"validation": validation, "test": test})


def _instance(root: Path) -> _Instance:
    """The resource and input data configuration, checked: known channels, a train channel, supported types."""
    resources = _read_json(root / RESOURCE_CONFIG_FILE)
    data_config = _read_json(root / INPUT_DATA_CONFIG_FILE)
    unknown = sorted(set(data_config) - set(CHANNELS))
    if unknown:
        raise AlgorithmInputError(f"unknown channel(s) {unknown}; Linear Learner accepts {', '.join(CHANNELS)}")
    if "train" not in data_config:
        raise AlgorithmInputError("the 'train' channel is required")
    channels = {}
    for name, channel in data_config.items():
        content_type = media_type(channel.get("ContentType", RECORDIO))
        if content_type not in TRAINING_CONTENT_TYPES:
            raise AlgorithmInputError(
                f"channel {name!r}: content type {content_type!r} is not supported; expected "
                f"{' or '.join(TRAINING_CONTENT_TYPES)}"
            )
        channels[name] = content_type
    replicated = frozenset(
        name
        for name, channel in data_config.items()
        if channel.get("S3DistributionType", "FullyReplicated") == "FullyReplicated"
    )
    # the service keeps the ShuffleConfig to itself and streams the dealt objects; the local launcher, standing in
    # for it, links every object of such a channel and writes the Seed here, so the host deals them itself
    shuffled = {
        name: int(channel["ShuffleConfig"]["Seed"])
        for name, channel in data_config.items()
        if channel.get("TrainingInputMode") == "Pipe" and isinstance(channel.get("ShuffleConfig"), dict)
    }
    hosts = list(resources.get("hosts", ["algo-1"]))
    return _Instance(resources.get("current_host", "algo-1"), hosts, channels, replicated, shuffled)


def _read_channels(root: Path, hp, instance: _Instance, blocks: Path, stream_cache: Path | None = None) -> tuple:
    """(train, validation, test) channels, each checked once and stored as blocks under ``blocks`` that training
    reads back one at a time (a channel dealt afresh every epoch: its first epoch's objects, the others as they are
    dealt, under ``stream_cache``). Only the leader (algo-1) reads test; every host reads the validation channel,
    whole when FullyReplicated (all hosts then share scoring it each epoch), else its own share."""
    from pipeline.linear_learner.data import channel_files, open_channel
    from pipeline.linear_learner.dealt import DealtChannel

    data = root / "input" / "data"
    if not any(p.is_file() for p in (data / "train").rglob("*")):
        raise AlgorithmInputError(
            f"{instance.host} has no files in the train channel: more instances ({len(instance.hosts)}) than shards "
            "of the ShardedByS3Key train data; use at most as many instances as train files"
        )

    def load(name: str):
        files = channel_files(data / name)
        if not files:
            raise AlgorithmInputError(f"channel {name!r} has no files")

        def decode(paths: list[Path], folder: Path):
            # train blocks hold whole mini-batches, so a batch spans two blocks only after the last, short one
            return open_channel(
                name,
                paths,
                instance.channels[name],
                folder,
                feature_dim=hp.feature_dim,
                predictor_type=hp.predictor_type,
                num_classes=hp.num_classes,
                multiple_of=hp.mini_batch_size if name == "train" else 1,
            )

        if name not in instance.shuffled:
            return decode(files, blocks / name)
        dealt = DealtChannel(
            name,
            tuple(files),
            "FullyReplicated" if name in instance.replicated else "ShardedByS3Key",
            instance.shuffled[name],
            instance.rank,
            len(instance.hosts),
            (stream_cache or blocks / "dealt") / name,
            lambda path, folder: decode([path], folder),
        )
        dealt.channels()  # the first epoch's objects, decoded and checked before training
        return dealt

    started = time.perf_counter()
    train = load("train")
    # a ShardedByS3Key validation channel is read on every host too: its shares together select the model
    validation = load("validation") if "validation" in instance.channels else None
    test = load("test") if instance.leader and "test" in instance.channels else None
    dim = train.dim
    for name, dataset in (("validation", validation), ("test", test)):
        if dataset is not None and dataset.dim != dim:
            raise AlgorithmInputError(f"channel {name!r} has {dataset.dim} features; train has {dim}")
    log(
        f"{instance.host}: read {train.rows} train records with {dim} features in "
        f"{time.perf_counter() - started:.2f} s ({len(train.sizes)} block(s) read back one at a time)"
    )
    if hp.mini_batch_size > train.rows:
        log(f"mini_batch_size {hp.mini_batch_size} is larger than the {train.rows} records on {instance.host}")
    return train, validation, test


def _connect(instance: _Instance, coordinator: str | None, exchange: Exchange | None = None):
    """The gradient exchange: with the parameter server when there are several hosts (through shared memory when
    the launcher gives an exchange folder), else a local no-op."""
    from pipeline.linear_learner.collective import ClientCollective, LocalCollective
    from pipeline.linear_learner.shared import SharedMemoryCollective

    if len(instance.hosts) == 1:
        return LocalCollective()
    if coordinator is None:
        raise AlgorithmInputError("several hosts need a coordinator (HOST:PORT of the parameter server)")
    address, port = coordinator.rsplit(":", 1)
    authkey = bytes.fromhex(os.environ.get("LLPIPE_LL_AUTHKEY", ""))
    client = ClientCollective((address, int(port)), authkey, instance.rank, len(instance.hosts))
    if exchange is None:
        return client
    return SharedMemoryCollective(
        exchange.folder,
        instance.rank,
        len(instance.hosts),
        instance.hosts,
        exchange.heartbeat,
        first_timeout=exchange.connect,
        control=client,
    )


def _write_scaling(root: Path, host: str, result, train) -> None:
    """This host's part of the job's scaling record (``output/scaling.json``): its shards (of the first epoch, for
    a channel dealt afresh every epoch) and its epochs."""
    from pipeline.linear_learner.data import channel_files
    from pipeline.linear_learner.dealt import DealtChannel

    shards = (
        len(train.for_epoch(0).share())
        if isinstance(train, DealtChannel)
        else len(channel_files(root / "input" / "data" / "train"))
    )
    record = {
        "host": host,
        "train_shards": shards,
        "epochs": [
            {"epoch": t.epoch, "records": t.records, "seconds": t.seconds, "sync_seconds": t.sync_seconds}
            for t in result.epoch_times
        ],
    }
    write_text_atomically(root / "output" / "scaling.json", json.dumps(record, indent=2))


def _write_outputs(root: Path, hp, result, host: str, channels: dict) -> None:
    """The leader's outputs: each channel's scores logged and in metrics.json, and model.tar.gz."""
    from pipeline.linear_learner.artifact import save_model
    from pipeline.linear_learner.final_metrics import evaluate

    assert result.model is not None
    metrics = dict(result.metrics)
    for name, dataset in channels.items():
        if dataset is None:
            continue
        for log_name, key, value in evaluate(hp, result.model, dataset):
            log(f"#{name}_score ({host}) : ({log_name!r}, {value})")
            if math.isfinite(value):  # e.g. AUC is undefined when a channel holds one class only
                metrics[f"{name}:{key}"] = value
    save_model(result.model, root / "model" / "model.tar.gz")
    # what the run needs beyond the service's four artifact members stays outside the artifact
    training = {"epochs_run": result.epochs, "hyperparameters": hp.resolved()}
    write_text_atomically(root / "output" / "training.json", json.dumps(training, indent=2, sort_keys=True))
    write_text_atomically(root / "output" / "metrics.json", json.dumps(metrics, indent=2, sort_keys=True))
    log(f"Training finished after {result.epochs} epoch(s); model written to {root / 'model' / 'model.tar.gz'}")


def main(argv: list[str] | None = None) -> int:
    """Entry point: run, and on failure write output/failure and return a non-zero exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("/opt/ml"), help="the container root (default /opt/ml)")
    parser.add_argument("--coordinator", help="HOST:PORT of the parameter server (several instances)")
    parser.add_argument("--exchange", type=Path, help="shared-memory folder for the gradient exchange (local hosts)")
    parser.add_argument("--heartbeat", type=float, default=60.0, help="seconds a peer may go silent (--exchange)")
    parser.add_argument(
        "--connect-timeout", type=float, default=300.0, help="seconds peers have for their first round (--exchange)"
    )
    parser.add_argument("--stream-cache", type=Path, help="decoded objects of channels dealt every epoch (shared)")
    args = parser.parse_args(argv)
    exchange = Exchange(args.exchange, args.heartbeat, args.connect_timeout) if args.exchange else None
    from pipeline.linear_learner.collective import CollectiveAborted, PeerSilent

    try:
        run(args.root, args.coordinator, exchange, args.stream_cache)
        return 0
    except PeerSilent as error:
        message, code = f"AlgorithmError: {error}", EXIT_PEER_SILENT
    except CollectiveAborted as error:
        message, code = f"AlgorithmError: {error}", EXIT_ABORTED
    except AlgorithmInputError as error:  # SageMaker's algorithms report the customer's errors as ClientError
        message, code = f"ClientError: {error}", EXIT_FAILED
    except Exception as error:  # noqa: BLE001 - the container reports any crash through output/failure
        traceback.print_exc()
        message, code = f"AlgorithmError: {type(error).__name__}: {error}", EXIT_FAILED
    failure = args.root / "output" / "failure"
    failure.parent.mkdir(parents=True, exist_ok=True)
    failure.write_text(message + "\n")
    print(message, file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
