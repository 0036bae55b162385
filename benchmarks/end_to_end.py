"""Wall time of one local run of the whole pipeline on 1,000,000 x 50 rows, and each step's share of it.

Baseline, measured in the same run: one ``pandas.read_csv`` pass over the same CSV files, the least any pipeline that
reads this data must spend. The data (synthetic, linearly separable with noise, binary label) is generated once into
the work dir and reused. Caching is off so every step really runs.

    python benchmarks/end_to_end.py [--rows 1000000] [--features 50] [--param Name=Value ...]
"""

from __future__ import annotations

import argparse
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
from pipeline.local.parameters import parse_overrides

from pipeline.config import load_config
from pipeline.local.runner import build_local_run, user_data
from pipeline.local.workdir import Workdir

PARTS = 8


def make_data(folder: Path, rows: int, features: int) -> list[Path]:
    """``PARTS`` CSV files with columns f0..f{n-1} and label; skipped when already there with this shape."""
    marker = folder / f".complete-{rows}x{features}"
    files = [folder / f"part-{part:02d}.csv" for part in range(PARTS)]
    if marker.exists():
        return files
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    weights = rng.normal(size=features)
    for part, path in enumerate(files):
        count = rows // PARTS + (1 if part < rows % PARTS else 0)
        x = rng.normal(size=(count, features)).astype(np.float32)
        label = ((x @ weights + rng.normal(scale=2.0, size=count)) > 0).astype(np.int8)
        frame = pd.DataFrame(x, columns=[f"f{i}" for i in range(features)])
        frame["label"] = label
        frame.to_csv(path, index=False, float_format="%.5g")
    marker.touch()
    return files


def seconds(start: str | None, end: str | None) -> float:
    if not start or not end:
        return 0.0
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--workdir", type=Path, default=Path(".llpipe/benchmark"))
    parser.add_argument("--param", action="append", default=[], metavar="Name=Value")
    args = parser.parse_args()
    workdir = args.workdir.resolve()
    overrides = {"Epochs": "3", "MiniBatchSize": "1000", **parse_overrides(args.param)}

    started = time.perf_counter()
    files = make_data(workdir / f"data-{args.rows}x{args.features}", args.rows, args.features)
    print(
        f"data: {args.rows:,} rows x {args.features} features in {len(files)} CSV files "
        f"({sum(f.stat().st_size for f in files) / 1e6:.0f} MB; ready in {time.perf_counter() - started:.1f} s)"
    )

    started = time.perf_counter()
    for path in files:
        pd.read_csv(path)
    baseline = time.perf_counter() - started
    print(f"baseline: pandas.read_csv over all files: {baseline:.2f} s")

    started = time.perf_counter()
    run = build_local_run(load_config(env={}), Workdir(workdir / "work"), use_cache=False)
    build = time.perf_counter() - started
    record = run.execute(user_data(files[0].parent, "label", "binary_classifier"), overrides)
    total = time.perf_counter() - started
    if record.status != "Succeeded":
        print(f"run failed: {record.failure_reason}")
        return 1
    print(f"\nlocal run {record.id}: {total:.1f} s wall ({total / baseline:.1f}x the read_csv baseline)")
    print(f"  {'definition build':<18} {build:7.2f} s  {build / total:6.1%}")
    for step in record.steps.values():
        spent = seconds(step.start_time, step.end_time)
        if step.status != "Skipped":
            print(f"  {step.name:<18} {spent:7.2f} s  {spent / total:6.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
