"""The processing jobs in the scikit-learn image's environment versus on this interpreter, and its build time.

Runs the bundled example end to end without the step cache, Preprocess and Evaluate once in the image's environment
(Python 3.9, numpy 1.24.1, pandas 1.1.3, scikit-learn 1.2.1, pyarrow 14.0.1: what `llpipe run` uses) and once on
this interpreter (the baseline: the project's own Python and libraries, what the local backend used before), and
prints each step's seconds and the ratio image / baseline. With ``--build`` it first builds the environment from
scratch in a temporary cache dir (needs the package registry) and prints how long that took.

    python benchmarks/image_environment.py [--repeat N] [--build]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pipeline.core.images import DEFAULT_PROCESSING_IMAGE
from pipeline.definition.config import load_config
from pipeline.local.data import example_data
from pipeline.local.environments import ImageEnvironments
from pipeline.local.runner import LocalRun, build_local_run
from pipeline.local.workdir import Workdir

STEPS = ("Preprocess", "Evaluate")
FAST = {"Epochs": "3", "NumModels": "2"}


def step_seconds(record, name: str) -> float:
    step = record.steps[name]
    return (datetime.fromisoformat(step.end_time) - datetime.fromisoformat(step.start_time)).total_seconds()


def timed_run(built: LocalRun, folder: Path, environments: ImageEnvironments) -> dict[str, float]:
    workdir = Workdir(folder)
    run = LocalRun(built.config, workdir, built.definition_json, built.uploads, False, environments=environments)
    record = run.execute(example_data(workdir), FAST)
    if record.status != "Succeeded":
        raise SystemExit(f"the run failed: {record.failure_reason}")
    return {name: step_seconds(record, name) for name in STEPS}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="runs of each environment (median reported)")
    parser.add_argument("--build", action="store_true", help="also time a build from scratch (needs the registry)")
    args = parser.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory(prefix="llpipe-bench-") as scratch:
        root = Path(scratch)
        if args.build:
            started = time.monotonic()
            ImageEnvironments(root / "cache").ensure(DEFAULT_PROCESSING_IMAGE, lambda text: None)
            console.print(f"{DEFAULT_PROCESSING_IMAGE.key} environment built from scratch in "
                          f"{time.monotonic() - started:.1f}s")  # fmt: skip
        image = ImageEnvironments.default()
        started = time.monotonic()
        environment = image.ensure(DEFAULT_PROCESSING_IMAGE, lambda text: console.print(text))
        console.print(f"image environment ready in {time.monotonic() - started:.2f}s: {environment.summary()}")
        here = ImageEnvironments(root / "none", locate_python=lambda version: None)  # falls back to this interpreter
        built = build_local_run(load_config(env={}), Workdir(root / "unused"))
        times: dict[str, list[dict[str, float]]] = {"image": [], "baseline": []}
        for index in range(args.repeat):
            times["image"].append(timed_run(built, root / f"image-{index}", image))
            times["baseline"].append(timed_run(built, root / f"here-{index}", here))
    python = ".".join(map(str, sys.version_info[:3]))
    table = Table(title=f"Step seconds, median of {args.repeat} (baseline: this interpreter, Python {python})")
    for column in ("step", "image env (3.9)", "baseline", "image / baseline"):
        table.add_column(column, justify="right")
    for name in STEPS:
        image_seconds = statistics.median(run[name] for run in times["image"])
        baseline_seconds = statistics.median(run[name] for run in times["baseline"])
        ratio = image_seconds / baseline_seconds
        table.add_row(name, f"{image_seconds:.2f}", f"{baseline_seconds:.2f}", f"{ratio:.2f}")
    console.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
