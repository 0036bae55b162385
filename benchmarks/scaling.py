"""Benchmark: local Linear Learner training on 1 vs 2 instances (speedup and efficiency against the 2x limit).

Writes a compute-bound table (default 2,000,000 x 50 dense float32, 4 RecordIO shards) under a temporary folder,
then trains it through the launcher (real processes, ShardedByS3Key shards) with 1 and 2 instances, alternating,
``--repeats`` times each, and for comparison 2 instances through the TCP parameter server (the exchange before the
shared-memory one). Prints, from the jobs' own scaling records: training time (the slowest host's epochs, inside the
job) and job time (``launcher.train`` as a whole: process start, reading and decoding, training, model selection,
artifact), min and median; speedup S(2) = T(1) / T(2), efficiency E(2) = S(2) / 2 against the physical limit of 2x
on 2 cores, the same ratio on records per second (every record of every epoch over the training time: the figure
``llpipe scaling`` reports, equal to the time ratio here, where early stopping is off and every run trains the same
epochs), the synchronisation share, and the CPU seconds of the hosts' processes (median): on a machine shared with
other work wall times stretch, CPU seconds much less, and the CPU a configuration adds over 1 instance is what
running in parallel costs. Targets: S(2) >= 1.5 on training time and sync <= 20%.

With ``--validation-rows N`` a FullyReplicated validation channel of N more rows is scored every epoch, as the
pipeline's Train step does (outside the epochs' training time, inside the job time).

    python benchmarks/scaling.py [--rows 2000000] [--features 50] [--epochs 5] [--repeats 3] [--validation-rows 0]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np


def write_shards(folder: Path, rows: int, features: int, shards: int, name: str = "train") -> list[Path]:
    """The benchmark table as ``shards`` RecordIO files."""
    from linear_learner import make_data  # benchmarks/linear_learner.py, beside this file

    from containerlib.recordio import write_dense

    X, y = make_data(rows, features, seed=0 if name == "train" else 1)
    paths = []
    for index, part in enumerate(np.array_split(np.arange(rows), shards)):
        path = folder / f"{name}-{index}.pbr"
        with path.open("wb") as stream:
            write_dense(stream, X[part], y[part])
        paths.append(path)
    return paths


def run_once(
    shards: list[Path], validation: list[Path], hyperparameters: dict[str, str], count: int, out: Path, tcp: bool
) -> dict:
    """One training job; its job time, its processes' CPU seconds and its scaling record."""
    from pipeline.linear_learner import launcher, shared

    available = shared.available
    if tcp:
        shared.available = lambda: False  # the parameter server relays every round, as before
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        channels = {"train": launcher.Channel(shards, "ShardedByS3Key")}
        if validation:
            channels["validation"] = launcher.Channel(validation, "FullyReplicated")
        result = launcher.train(hyperparameters, channels, out, instance_count=count)
        job = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the hosts, ended and waited for by the launcher
    finally:
        shared.available = available
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {**result.scaling, "job_seconds": job, "cpu_seconds": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--validation-rows", type=int, default=0, help="a validation channel of this many rows")
    parser.add_argument("--no-tcp", action="store_true", help="skip the parameter-server comparison")
    args = parser.parse_args()
    hyperparameters = {
        "predictor_type": "binary_classifier",
        "epochs": str(args.epochs),
        "early_stopping_patience": str(args.epochs + 1),  # every run trains every epoch
    }
    configurations = [("1 instance", 1, False), ("2 instances", 2, False)]
    if not args.no_tcp:
        configurations.append(("2 instances, TCP server", 2, True))
    runs: dict[str, list[dict]] = {name: [] for name, _, _ in configurations}
    with tempfile.TemporaryDirectory(prefix="llpipe-scaling-bench-") as folder:
        shards = write_shards(Path(folder), args.rows, args.features, args.shards)
        validation = []
        if args.validation_rows:
            validation = write_shards(Path(folder), args.validation_rows, args.features, 1, "validation")
        print(
            f"data: {args.rows:,} x {args.features} float32 in {args.shards} shards, {args.epochs} epochs, "
            f"validation {args.validation_rows:,} rows"
        )
        print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        for repeat in range(args.repeats):
            for name, count, tcp in configurations:  # alternating, so load changes hit every configuration alike
                runs[name].append(
                    run_once(shards, validation, hyperparameters, count, Path(folder) / f"out-{repeat}", tcp)
                )
    baseline = runs["1 instance"]
    base_train = min(r["training_seconds"] for r in baseline)
    base_job = min(r["job_seconds"] for r in baseline)
    print(
        "train: the slowest host's epochs inside the job (its scaling record); job: launcher.train as a whole "
        "(start, read, train, select, artifact); CPU s: the hosts' processes"
    )
    print(
        f"{'configuration':<26}{'train min':>10}{'median':>9}{'job min':>9}{'median':>9}{'S(n) train':>11}"
        f"{'E(n)':>7}{'S(n) rec/s':>11}{'S(n) job':>9}{'sync':>7}{'records/s':>12}{'CPU s':>8}"
    )
    base_throughput = max(r["throughput"] for r in baseline)
    for name, count, _ in configurations:
        train = [r["training_seconds"] for r in runs[name]]
        job = [r["job_seconds"] for r in runs[name]]
        speedup = base_train / min(train)
        sync = statistics.median(r["sync_share"] for r in runs[name])
        throughput = max(r["throughput"] for r in runs[name])
        cpu = statistics.median(r["cpu_seconds"] for r in runs[name])
        print(
            f"{name:<26}{min(train):>9.2f}s{statistics.median(train):>8.2f}s{min(job):>8.2f}s"
            f"{statistics.median(job):>8.2f}s{speedup:>10.2f}x{speedup / count:>7.0%}"
            f"{throughput / base_throughput:>10.2f}x{base_job / min(job):>8.2f}x"
            f"{sync:>7.0%}{throughput:>12,.0f}{cpu:>8.2f}"
        )
    two = runs["2 instances"]
    speedup = base_train / min(r["training_seconds"] for r in two)
    sync = statistics.median(r["sync_share"] for r in two)
    met = speedup >= 1.5 and sync <= 0.20
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    print(
        f"2 instances: training-time speedup {speedup:.2f}x of the 2x limit (efficiency {speedup / 2:.0%}), "
        f"sync {sync:.0%}; "
        f"targets S(2) >= 1.5x and sync <= 20%: {'met' if met else 'not met'}"
    )


if __name__ == "__main__":
    main()
