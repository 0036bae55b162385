"""Peak memory of the Evaluate job on 1x, 10x and 40x the same test split: does it stay bounded (issue 39)?

The data: a binary-labelled test split of ``--rows`` dense records in 4 RecordIO-protobuf shards written with the
project's own codec (``containerlib.recordio``), and the batch transform's ``.out`` jsonlines for each (a fixed
linear model's probability and predicted label); 10x and 40x repeat every shard and its predictions 10 and 40 times
(RecordIO and jsonlines both concatenate), like the issue's table repeated. With ``--baseline`` (the default) a train
channel of ``--rows`` records is given too, so the scikit-learn baseline is fitted and scored on the test split.

Each run is the container's entry point (``python -m evaluation.evaluate ...``) in a subprocess, with the scikit-learn
image's environment when it is built (``llpipe`` builds it on first use; Python 3.9, numpy 1.24.1, pandas 1.1.3),
else this interpreter; its peak resident set is the child's ``ru_maxrss`` (``os.wait4``). Target: the peak at 10x
and 40x within 1.3x of the 1x figure plus 100 MB. ``--code DIR`` measures another checkout in the same run (e.g. the
main branch's, which read everything whole) on the same data, each checkout compared with its own 1x figure.

    python benchmarks/evaluate_memory.py [--rows 300000] [--features 12] [--factors 1,10,40] [--code /work/main]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[1]
TARGET_RATIO, TARGET_SLACK_MB = 1.3, 100.0
SHARDS = 4
PIECE_ROWS = 50_000


def write_split(folder: Path, rows: int, features: int, seed: int, predictions: bool) -> None:
    """``rows`` labelled records in ``SHARDS`` shards under ``folder/test`` (or ``folder/train``), written piece by
    piece, and with ``predictions`` each shard's ``.out`` under ``folder/predictions``."""
    from containerlib.recordio import write_dense

    weights = np.random.default_rng(0).normal(size=features) / np.sqrt(features)
    rng = np.random.default_rng(seed)
    split = folder / ("test" if predictions else "train")
    split.mkdir(parents=True, exist_ok=True)
    if predictions:
        (folder / "predictions").mkdir(exist_ok=True)
    per_shard = -(-rows // SHARDS)
    for shard in range(SHARDS):
        count_left = min(per_shard, rows - shard * per_shard)
        name = f"part-{shard}.pbr"
        out_path = folder / "predictions" / f"{name}.out" if predictions else Path(os.devnull)
        with (split / name).open("wb") as records, out_path.open("w") as out:
            while count_left > 0:
                count = min(PIECE_ROWS, count_left)
                count_left -= count
                x = rng.normal(size=(count, features)).astype(np.float32)
                margin = x @ weights
                labels = (margin + rng.normal(size=count) > 0).astype(np.float32)
                write_dense(records, x, labels)
                if predictions:
                    scores = (1.0 / (1.0 + np.exp(-margin))).astype(np.float32)
                    out.write("".join(
                        f'{{"predicted_label": {int(score > 0.5)}, "score": {float(score)!r}}}\n' for score in scores
                    ))  # fmt: skip


def repeat(source: Path, target: Path, factor: int) -> None:
    """Every file under ``source`` written ``factor`` times over into the same place under ``target``."""
    for path in sorted(source.rglob("*")):
        if path.is_file():
            destination = target / path.relative_to(source)
            destination.parent.mkdir(parents=True, exist_ok=True)
            with destination.open("wb") as out:
                for _ in range(factor):
                    with path.open("rb") as part:
                        shutil.copyfileobj(part, out, 1 << 22)


def interpreter() -> tuple[str, str]:
    """(python, what it is): the scikit-learn image's environment when built, else this interpreter."""
    try:
        from pipeline.core.images import DEFAULT_PROCESSING_IMAGE
        from pipeline.local.environments import ImageEnvironments

        environment = ImageEnvironments.default().cached(DEFAULT_PROCESSING_IMAGE)
    except Exception:  # the benchmark still runs where the llpipe package cannot look
        environment = None
    if environment is not None:
        return str(environment.python), f"image environment: {environment.summary()}"
    return sys.executable, f"this interpreter (Python {sys.version.split()[0]}): the image environment is not built"


def peak_rss_mb(python: str, code: Path, data: Path, train: Path | None, output: Path) -> tuple[float, float]:
    """(peak RSS in MB, seconds) of one Evaluate run of the checkout ``code`` on ``data``."""
    shutil.rmtree(output, ignore_errors=True)
    inputs = ["--predictions-dir", str(data / "predictions"), "--test-dir", str(data / "test")]
    command = [python, "-m", "evaluation.evaluate", *inputs, "--output-dir", str(output)]
    command += ["--predictor-type", "binary_classifier"]
    if train is not None:
        command += ["--train-dir", str(train)]
    env = {**os.environ, "PYTHONPATH": str(code)}
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=code, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    error = process.stderr.read().decode() if process.stderr else ""
    if process.stderr:
        process.stderr.close()
    if process.returncode != 0:
        raise SystemExit(f"Evaluate on {data} with {code} failed ({process.returncode}):\n{error[-2000:]}")
    return usage.ru_maxrss / 1024, seconds  # ru_maxrss is in KiB on Linux


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=300_000, help="test records at 1x")
    parser.add_argument("--features", type=int, default=12)
    parser.add_argument("--factors", default="1,10,40", help="comma-separated multiples of --rows (1 first)")
    parser.add_argument("--no-baseline", dest="baseline", action="store_false", help="no train channel: no baseline")
    parser.add_argument("--code", type=Path, help="another checkout to measure too, e.g. /work/main")
    parser.add_argument("--data-dir", type=Path, help="keep the generated data here for the next run")
    args = parser.parse_args()
    factors = [int(value) for value in args.factors.split(",")]
    if factors[0] != 1:
        raise SystemExit(f"--factors {args.factors}: the first must be 1, the figure the others are compared with")
    folder = args.data_dir or Path(tempfile.mkdtemp(prefix="bench-evaluate-memory-"))
    python, what = interpreter()
    checkouts = [("this checkout", REPOSITORY)] + ([(str(args.code), args.code.resolve())] if args.code else [])
    results: dict[str, list[tuple[int, float, float]]] = {}
    try:
        base = folder / f"{args.rows}x{args.features}"
        if not (base / ".complete").exists():
            write_split(base, args.rows, args.features, seed=1, predictions=True)
            write_split(base / "channel", args.rows, args.features, seed=2, predictions=False)
            (base / ".complete").touch()
        train = base / "channel" / "train" if args.baseline else None
        for factor in factors:
            data = base if factor == 1 else folder / f"{args.rows}x{args.features}-{factor}x"
            if factor != 1 and not (data / ".complete").exists():
                repeat(base / "test", data / "test", factor)
                repeat(base / "predictions", data / "predictions", factor)
                (data / ".complete").touch()
            for name, code in checkouts:
                rss, seconds = peak_rss_mb(python, code, data, train, folder / "output")
                results.setdefault(name, []).append((factor, rss, seconds))
                print(f"  {name}: {factor}x ({args.rows * factor:,} records) -> peak RSS {rss:,.0f} MB "
                      f"({seconds:.1f} s)", flush=True)  # fmt: skip
    finally:
        if args.data_dir is None:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"\nEvaluate (binary_classifier{', with the baseline' if args.baseline else ''}), {args.rows:,} test records "
          f"x {args.features} features at 1x; {what}; load {os.getloadavg()[0]:.1f}")  # fmt: skip
    header = "".join(f"{f'{factor}x MB':>10} {'ratio':>6}" for factor in factors)
    print(f"{'code':<24}{header}  target: <= {TARGET_RATIO}x 1x + {TARGET_SLACK_MB:.0f} MB")
    for name, runs in results.items():
        small = runs[0][1]
        cells = "".join(f"{rss:>10,.0f} {rss / small:>5.2f}x" for _, rss, _ in runs)
        met = all(rss <= TARGET_RATIO * small + TARGET_SLACK_MB for _, rss, _ in runs)
        print(f"{name:<24}{cells}  {'met' if met else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
