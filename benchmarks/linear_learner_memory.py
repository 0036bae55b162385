"""Peak memory of one local Linear Learner training instance on 1x and 10x the rows of the same features.

Each run is the real container entry point (``python -m pipeline.linear_learner.train --root ROOT``) in a
subprocess on RecordIO-protobuf train and validation channels (validation 15% of the train rows); its peak resident
set is the child's ``ru_maxrss`` (``os.wait4``, the per-child figure of ``getrusage(RUSAGE_CHILDREN)``). Target
(issue 17): peak RSS at 10x within 1.3x of 1x. ``--code DIR`` also measures another checkout in the same run (e.g. the
main branch's, which loads channels whole) as the baseline.

    python benchmarks/linear_learner_memory.py [--rows 229000] [--features 55] [--factor 10] [--code /work/main]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from containerlib.content_types import RECORDIO

REPOSITORY = Path(__file__).resolve().parents[1]
TARGET = 1.3
PIECE_ROWS = 50_000


def write_channel(path: Path, rows: int, features: int, seed: int) -> None:
    """``rows`` records of binary-labelled dense float32 data, written piece by piece (bounded memory); the labels
    come from the same linear model with noise in every channel."""
    from containerlib.recordio import write_dense

    weights = np.random.default_rng(0).normal(size=features).astype(np.float32) / np.sqrt(features)
    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        for start in range(0, rows, PIECE_ROWS):
            count = min(PIECE_ROWS, rows - start)
            features_piece = rng.normal(size=(count, features)).astype(np.float32)
            labels = (features_piece @ weights + rng.normal(size=count) > 0).astype(np.float32)
            write_dense(out, features_piece, labels)


def make_root(folder: Path, rows: int, features: int, epochs: int) -> Path:
    """A container root (config JSONs and channels) for ``rows`` train records; reused when complete."""
    marker = folder / ".complete"
    if not marker.exists():
        write_channel(folder / "input" / "data" / "train" / "train.pbr", rows, features, seed=1)
        write_channel(folder / "input" / "data" / "validation" / "validation.pbr", max(1, rows * 15 // 100), features,
                      seed=2)  # fmt: skip
        marker.touch()
    config = folder / "input" / "config"
    config.mkdir(parents=True, exist_ok=True)
    hyperparameters = {"predictor_type": "binary_classifier", "feature_dim": str(features), "epochs": str(epochs),
                       "mini_batch_size": "1000", "num_models": "8"}  # fmt: skip
    (config / "hyperparameters.json").write_text(json.dumps(hyperparameters))
    (config / "resourceconfig.json").write_text(json.dumps({"current_host": "algo-1", "hosts": ["algo-1"]}))
    channel = {"ContentType": RECORDIO, "TrainingInputMode": "File"}
    (config / "inputdataconfig.json").write_text(json.dumps({"train": channel, "validation": channel}))
    return folder


def peak_rss_mb(root: Path, code: Path) -> tuple[float, float]:
    """(peak RSS in MB, seconds) of one training run of the checkout ``code`` on ``root``."""
    for sub in ("model", "output"):  # fresh, as SageMaker gives them
        shutil.rmtree(root / sub, ignore_errors=True)
        (root / sub).mkdir()
    env = {**os.environ, "PYTHONPATH": str(code)}
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "pipeline.linear_learner.train", "--root", str(root)],
        cwd=code, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        error = process.stderr.read().decode() if process.stderr else ""
        raise SystemExit(f"training on {root} with {code} failed ({process.returncode}):\n{error[-2000:]}")
    if process.stderr:
        process.stderr.close()
    return usage.ru_maxrss / 1024, seconds  # ru_maxrss is in KiB on Linux


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=229_000)
    parser.add_argument("--features", type=int, default=55)
    parser.add_argument("--factor", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--code", type=Path, help="another checkout to measure as the baseline, e.g. /work/main")
    parser.add_argument("--data-dir", type=Path, help="keep the generated channels here for the next run")
    args = parser.parse_args()
    folder = args.data_dir or Path(tempfile.mkdtemp(prefix="bench-ll-memory-"))
    checkouts = [("this checkout", REPOSITORY)]
    if args.code:
        checkouts.append((f"baseline {args.code}", args.code.resolve()))
    results: dict[str, list[tuple[int, float, float]]] = {}
    try:
        roots = {}
        for factor in (1, args.factor):
            rows = args.rows * factor
            print(f"data: {rows:,} x {args.features} train records (+15% validation)", flush=True)
            roots[factor] = make_root(folder / f"{rows}x{args.features}", rows, args.features, args.epochs)
        for name, code in checkouts:
            for factor in (1, args.factor):
                rss, seconds = peak_rss_mb(roots[factor], code)
                results.setdefault(name, []).append((factor, rss, seconds))
                print(f"  {name}: {factor}x -> peak RSS {rss:,.0f} MB ({seconds:.1f} s)", flush=True)
    finally:
        if args.data_dir is None:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"\nLinear Learner training, {args.rows:,} and {args.rows * args.factor:,} x {args.features} records, "
          f"{args.epochs} epoch(s), one instance")  # fmt: skip
    print(f"{'code':<40} {'1x MB':>8} {f'{args.factor}x MB':>9} {'ratio':>7}  target")
    for name, runs in results.items():
        (_, small, _), (_, large, _) = runs
        ratio = large / small
        verdict = f"<= {TARGET}x {'met' if ratio <= TARGET else 'NOT met'}"
        print(f"{name:<40} {small:>8,.0f} {large:>9,.0f} {ratio:>6.2f}x  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
