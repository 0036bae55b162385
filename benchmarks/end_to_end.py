"""Wall time of one local run of the whole pipeline on 1,000,000 x 50 rows and each step's share of it, before and
after, plus the cached re-run of the bundled example and a repeated ``llpipe definition``.

"Before" is another checkout (``--before``, default the main branch's at /work/main when it exists) measured in
the same run by the same script: each measurement runs in a child process that imports the checkout's ``pipeline``.
Baseline of the full run, also in the same run: one ``pandas.read_csv`` pass over the same CSV files, the least any
pipeline that reads this data must spend. The data (synthetic, linearly separable with noise, binary label) is
generated once into the work dir and reused. Caching is off in the full run so every step really runs; the cached
re-run target (issue 17) is under 2 s.

    python benchmarks/end_to_end.py [--rows 1000000] [--features 50] [--before DIR] [--param Name=Value ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

REPOSITORY = Path(__file__).resolve().parents[1]
PARTS = 8
CACHED_RERUN_TARGET = 2.0


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


def measure_run(data: Path, workdir: Path, overrides: dict[str, str]) -> dict:
    """In the child: build and run the pipeline once without the step cache; the timings as a dict."""
    from pipeline.definition.config import load_config
    from pipeline.local.data import user_data
    from pipeline.local.runner import build_local_run
    from pipeline.local.workdir import Workdir

    started = time.perf_counter()
    run = build_local_run(load_config(env={}), Workdir(workdir), use_cache=False)
    build = time.perf_counter() - started
    record = run.execute(user_data(data, "label", "binary_classifier"), overrides)
    total = time.perf_counter() - started
    steps = {step.name: seconds(step.start_time, step.end_time) for step in record.steps.values()
             if step.status != "Skipped"}  # fmt: skip
    return {"status": record.status, "failure": record.failure_reason, "build": build, "total": total, "steps": steps}


def child(checkout: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """This script (or ``-m pipeline``) in a child process importing ``checkout``'s pipeline package."""
    environment = {**os.environ, **(env or {}), "PYTHONPATH": str(checkout)}
    return subprocess.run([sys.executable, *args], env=environment, cwd=checkout, capture_output=True, text=True,
                          check=False)  # fmt: skip


def timed_cli(checkout: Path, env: dict[str, str], *args: str) -> float:
    started = time.perf_counter()
    result = child(checkout, "-m", "pipeline", *args, env=env)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"llpipe {' '.join(args)} failed in {checkout}:\n{result.stderr[-2000:]}")
    return elapsed


def measure_checkout(checkout: Path, data: Path, workdir: Path, params: list[str]) -> dict:
    """Cached re-run of the bundled example, repeated definition, then the full uncached run (whose definition build
    is then a cache hit where there is a cache), for one checkout; its caches live in ``workdir``."""
    env = {"LLPIPE_DEFINITION_CACHE_DIR": str(workdir / "user-cache")}
    example = str(workdir / "example")
    print(f"{checkout}: bundled example, first run then the cached re-run", flush=True)
    timed_cli(checkout, env, "run", "--workdir", example, "--quiet")
    cached_rerun = timed_cli(checkout, env, "run", "--workdir", example, "--quiet")
    timed_cli(checkout, env, "definition", "--output", str(workdir / "definition.json"))
    definition_again = timed_cli(checkout, env, "definition", "--output", str(workdir / "definition.json"))
    print(f"{checkout}: full run without the step cache", flush=True)
    args = [str(Path(__file__).resolve()), "--measure", "--data", str(data), "--workdir", str(workdir / "run")]
    result = child(checkout, *args, *(f"--param={p}" for p in params), env=env)
    if result.returncode != 0:
        raise SystemExit(f"the run in {checkout} failed:\n{result.stderr[-2000:]}")
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    return {**figures, "cached_rerun": cached_rerun, "definition_again": definition_again}


def report(rows: int, features: int, baseline: float, measured: dict[str, dict]) -> None:
    names = list(measured)
    print(f"\nlocal run on {rows:,} x {features} (step cache off); baseline pandas.read_csv over all files "
          f"{baseline:.2f} s")  # fmt: skip
    header = f"  {'step':<18}" + "".join(f"{name + ' s':>14}{'share':>8}" for name in names)
    print(header)
    first = measured[names[0]]
    steps = ["definition build", *first["steps"]]
    for step in steps:
        line = f"  {step:<18}"
        for name in names:
            figures = measured[name]
            spent = figures["build"] if step == "definition build" else figures["steps"].get(step, 0.0)
            line += f"{spent:>14.2f}{spent / figures['total']:>8.1%}"
        print(line)
    print(f"  {'total wall':<18}" + "".join(f"{measured[n]['total']:>14.2f}{'':>8}" for n in names))
    print(f"  {'x read_csv':<18}" + "".join(f"{measured[n]['total'] / baseline:>13.1f}x{'':>8}" for n in names))
    print("\ncached re-run of the bundled example (llpipe run, every step cached) and llpipe definition, 2nd time:")
    for name in names:
        rerun, definition = measured[name]["cached_rerun"], measured[name]["definition_again"]
        verdict = "met" if rerun < CACHED_RERUN_TARGET else "NOT met"
        print(f"  {name:<10} re-run {rerun:5.2f} s (target < {CACHED_RERUN_TARGET} s: {verdict}); "
              f"definition {definition:5.2f} s")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--workdir", type=Path, default=Path(".llpipe/benchmark"))
    parser.add_argument("--before", type=Path, default=Path("/work/main") if Path("/work/main").is_dir() else None,
                        help="checkout measured as 'before' (default /work/main when present)")  # fmt: skip
    parser.add_argument("--param", action="append", default=[], metavar="Name=Value")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)  # the child's part
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    workdir = args.workdir.resolve()
    if args.measure:
        from pipeline.cli.arguments import parse_overrides

        overrides = {"Epochs": "3", "MiniBatchSize": "1000", **parse_overrides(args.param)}
        print(json.dumps(measure_run(args.data, workdir, overrides)))
        return 0

    started = time.perf_counter()
    files = make_data(workdir / f"data-{args.rows}x{args.features}", args.rows, args.features)
    size_mb = sum(f.stat().st_size for f in files) / 1e6
    print(f"data: {args.rows:,} rows x {args.features} features in {len(files)} CSV files ({size_mb:.0f} MB; ready "
          f"in {time.perf_counter() - started:.1f} s)")  # fmt: skip
    started = time.perf_counter()
    for path in files:
        pd.read_csv(path)
    baseline = time.perf_counter() - started
    checkouts = {"after": REPOSITORY} if args.before is None else {"before": args.before.resolve(), "after": REPOSITORY}
    measured = {}
    for name, checkout in checkouts.items():
        target = workdir / f"{name}-{os.getpid()}"
        measured[name] = measure_checkout(checkout, files[0].parent, target, args.param)
        if measured[name]["status"] != "Succeeded":
            print(f"{name}: run failed: {measured[name]['failure']}")
            return 1
    report(args.rows, args.features, baseline, measured)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
