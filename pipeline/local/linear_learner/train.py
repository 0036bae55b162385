"""One Linear Learner training instance, with SageMaker's container contract.

``python -m pipeline.local.linear_learner.train --root ROOT [--coordinator HOST:PORT]`` reads
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
import time
import traceback
from pathlib import Path

CHANNELS = ("train", "validation", "test")
EXIT_FAILED = 1
EXIT_ABORTED = 3


class ClientError(ValueError):
    """A problem with the job's configuration or data (the user's to fix)."""


def log(line: str) -> None:
    """A log line with the service's prefix: [date time INFO pid] message."""
    stamp = time.strftime("%m/%d/%Y %H:%M:%S", time.gmtime())
    print(f"[{stamp} INFO {os.getpid()}] {line}", flush=True)


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise ClientError(f"{path} is missing") from None
    except json.JSONDecodeError as error:
        raise ClientError(f"{path} is not valid JSON: {error}") from None


def _write_json(path: Path, value: dict) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(value, indent=2, sort_keys=True))
    temporary.replace(path)


def run(root: Path, coordinator: str | None) -> None:
    """Train this instance; raises on failure."""
    from pipeline.local.linear_learner.hyperparameters import HyperparameterError, parse_hyperparameters

    config = root / "input" / "config"
    try:
        hp = parse_hyperparameters(_read_json(config / "hyperparameters.json"))
    except HyperparameterError as error:
        raise ClientError(str(error)) from None
    log(f"Final configuration: {hp.resolved()}")
    resources = _read_json(config / "resourceconfig.json")
    hosts = list(resources.get("hosts", ["algo-1"]))
    host = resources.get("current_host", "algo-1")
    rank = hosts.index(host)
    data_config = _read_json(config / "inputdataconfig.json")
    unknown = sorted(set(data_config) - set(CHANNELS))
    if unknown:
        raise ClientError(f"unknown channel(s) {unknown}; Linear Learner accepts {', '.join(CHANNELS)}")
    if "train" not in data_config:
        raise ClientError("the 'train' channel is required")
    for name, channel in data_config.items():
        content_type = channel.get("ContentType", "application/x-recordio-protobuf").split(";")[0].strip()
        if content_type not in ("application/x-recordio-protobuf", "text/csv"):
            raise ClientError(f"channel {name!r}: content type {content_type!r} is not supported; expected "
                              "application/x-recordio-protobuf or text/csv")
        channel["ContentType"] = content_type

    if not any(p.is_file() for p in (root / "input" / "data" / "train").rglob("*")):
        raise ClientError(f"{host} has no files in the train channel: more instances ({len(hosts)}) than shards "
                          "of the ShardedByS3Key train data; use at most as many instances as train files")

    from pipeline.local.linear_learner.collective import ClientCollective, LocalCollective
    from pipeline.local.linear_learner.data import DataError, channel_files, read_channel

    def load(name: str):
        files = channel_files(root / "input" / "data" / name)
        if not files:
            raise ClientError(f"channel {name!r} has no files")
        try:
            return read_channel(name, files, data_config[name]["ContentType"], feature_dim=hp.feature_dim,
                                predictor_type=hp.predictor_type, num_classes=hp.num_classes)
        except DataError as error:
            raise ClientError(str(error)) from None

    started = time.perf_counter()
    train = load("train")
    leader = rank == 0
    validation = load("validation") if leader and "validation" in data_config else None
    test = load("test") if leader and "test" in data_config else None
    dim = train.features.shape[1]
    for name, dataset in (("validation", validation), ("test", test)):
        if dataset is not None and dataset.features.shape[1] != dim:
            raise ClientError(f"channel {name!r} has {dataset.features.shape[1]} features; train has {dim}")
    log(f"{host}: read {train.rows} train records with {dim} features in {time.perf_counter() - started:.2f} s")
    if hp.mini_batch_size > train.rows:
        log(f"mini_batch_size {hp.mini_batch_size} is larger than the {train.rows} records on {host}")

    if len(hosts) > 1:
        if coordinator is None:
            raise ClientError("several hosts need --coordinator HOST:PORT")
        address, port = coordinator.rsplit(":", 1)
        authkey = bytes.fromhex(os.environ.get("LLPIPE_LL_AUTHKEY", ""))
        collective = ClientCollective((address, int(port)), authkey, rank, len(hosts))
    else:
        collective = LocalCollective()

    from pipeline.local.linear_learner.artifact import save_model
    from pipeline.local.linear_learner.trainer import evaluate, fit

    try:
        result = fit(hp, train, validation, collective, log, host)
    finally:
        collective.close()
    if not leader:
        return
    assert result.model is not None
    metrics = dict(result.metrics)
    for name, dataset in (("validation", validation), ("test", test)):
        if dataset is None:
            continue
        for log_name, key, value in evaluate(hp, result.model, dataset):
            log(f"#{name}_score ({host}) : ({log_name!r}, {value})")
            if math.isfinite(value):  # e.g. AUC is undefined when a channel holds one class only
                metrics[f"{name}:{key}"] = value
    save_model(result.model, root / "model" / "model.tar.gz")
    # what the run needs beyond the service's four artifact members stays outside the artifact
    _write_json(root / "output" / "training.json", {"epochs_run": result.epochs, "hyperparameters": hp.resolved()})
    _write_json(root / "output" / "metrics.json", metrics)
    log(f"Training finished after {result.epochs} epoch(s); model written to {root / 'model' / 'model.tar.gz'}")


def main(argv: list[str] | None = None) -> int:
    """Entry point: run, and on failure write output/failure and return a non-zero exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("/opt/ml"), help="the container root (default /opt/ml)")
    parser.add_argument("--coordinator", help="HOST:PORT of the parameter server (several instances)")
    args = parser.parse_args(argv)
    from pipeline.local.linear_learner.collective import CollectiveAborted

    try:
        run(args.root, args.coordinator)
        return 0
    except CollectiveAborted as error:
        message, code = f"AlgorithmError: {error}", EXIT_ABORTED
    except ClientError as error:
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
