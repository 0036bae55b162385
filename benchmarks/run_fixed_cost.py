"""A small local run's fixed cost (issue 37): the CPU seconds (user + system, the process and its children) of
``llpipe run --quiet --param Epochs=2`` on the bundled example, in a fresh work dir and again in the same one, by
this checkout and by another (``--code DIR``, e.g. the main branch's worktree: the baseline measured in the same
run, the two alternating). With ``--parts``, the two fixed costs this checkout removes, measured apart: writing the
example data into a fresh work dir, and opening a fresh work dir's MLflow store (made by MLflow, or seeded from the
user cache's empty store), each in its own process. With ``--jobs``, the runs' CPU split by job process (each
Preprocess, Train, DataQuality and Evaluate instance timed by ``/usr/bin/time``) and the rest, the llpipe process.

    python benchmarks/run_fixed_cost.py [--code DIR] [--repeat N] [--parts | --jobs]

CPU seconds, not wall time: the development machine is shared and its load changes from minute to minute; the
minimum over the repeats is the least disturbed figure.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]

EXAMPLE = """
import sys
from pathlib import Path
from pipeline.local.example_data import write_example_data
write_example_data(Path(sys.argv[1]))
"""

STORE = """
import sys
from pipeline.api.tracking import seed_sqlite_store
from mlflow import MlflowClient
uri = "sqlite:///" + sys.argv[1]
if sys.argv[2] == "seeded":
    seed_sqlite_store(uri)
MlflowClient(tracking_uri=uri).search_experiments()
"""

# llpipe with every job process it starts wrapped by /usr/bin/time, its figures in a file of the folder argv[1] names
TIMED = """
import os, sys, uuid
import pipeline.core.processes as processes
folder = sys.argv.pop(1)
start = processes.start
def timed(command, **arguments):
    command = [str(part) for part in command]
    script = next((os.path.basename(part) for part in command[1:] if part.endswith(".py")), None)
    label = (script or command[2].rsplit(".", 1)[-1]).replace(".py", "")
    out = os.path.join(folder, uuid.uuid4().hex + ".time")
    return start(["/usr/bin/time", "-f", "%U %S " + label, "-o", out, *command], **arguments)
processes.start = timed
from pipeline.cli import console
console()
"""


def cpu_seconds(command: list[str], code: Path, cwd: Path, env: dict[str, str] | None = None) -> float:
    """The CPU seconds ``command`` and its children used (they are waited for), run with ``code`` first on the
    path."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    environment = {**os.environ, **(env or {}), "PYTHONPATH": str(code)}
    subprocess.run(command, cwd=cwd, env=environment, check=True, capture_output=True, timeout=1800)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def sittings(codes: dict[str, Path], repeat: int, folder: Path) -> Iterator[tuple[str, Path, str, Path, str]]:
    """(code's name, its tree, round, work dir, "fresh" or "second") in the order the runs alternate: each round runs
    every code in a new work dir of its own, then again in the same one."""
    for index in range(repeat):
        for name, code in codes.items():
            work = folder / f"{name}-{index}"
            work.mkdir()
            for which in ("fresh", "second"):
                yield name, code, str(index), work, which


def runs(codes: dict[str, Path], repeat: int, folder: Path) -> None:
    command = [sys.executable, "-m", "pipeline", "run", "--quiet", "--param", "Epochs=2"]
    figures: dict[tuple[str, str], list[float]] = {}
    for name, code, _, work, which in sittings(codes, repeat, folder):
        seconds = cpu_seconds(command, code, work)
        figures.setdefault((name, which), []).append(seconds)
        print(f"{name:10s} {which:6s} {seconds:6.2f} CPU-s  (load {os.getloadavg()[0]:.1f})", flush=True)
    report(figures, codes)


def jobs(codes: dict[str, Path], repeat: int, folder: Path) -> None:
    """The runs' CPU by job process (the sum over a step's instances) and the llpipe process's rest."""
    figures: dict[tuple[str, str], list[float]] = {}
    for name, code, index, work, which in sittings(codes, repeat, folder):
        times = folder / f"times-{name}-{index}-{which}"
        times.mkdir()
        command = [sys.executable, "-c", TIMED, str(times), "run", "--quiet", "--param", "Epochs=2"]
        total = cpu_seconds(command, code, work)
        steps: dict[str, float] = {}
        for path in times.glob("*.time"):
            user, system, label = path.read_text().split()[-3:]
            steps[label] = steps.get(label, 0.0) + float(user) + float(system)
        steps["llpipe process"] = total - sum(steps.values())
        steps["whole run"] = total
        for label, seconds in steps.items():
            figures.setdefault((f"{name} {which}", label), []).append(seconds)
        line = "  ".join(f"{label} {seconds:.2f}" for label, seconds in sorted(steps.items()))
        print(f"{name:8s} {which:6s} {line}  (load {os.getloadavg()[0]:.1f})", flush=True)
    for (name, label), values in sorted(figures.items()):
        print(f"{name:16s} {label:16s} min {min(values):5.2f}  all {' '.join(f'{v:.2f}' for v in values)}")


def parts(codes: dict[str, Path], repeat: int, folder: Path) -> None:
    figures: dict[tuple[str, str], list[float]] = {}
    for index in range(repeat):
        cold = folder / f"cache-{index}"  # an empty user cache: the example is made from scikit-learn
        for name, code in codes.items():
            for label, env in (("example, empty cache", {"LLPIPE_CACHE_DIR": str(cold)}), ("example", None)):
                target = folder / f"example-{name}-{index}-{label[-5:]}"
                seconds = cpu_seconds([sys.executable, "-c", EXAMPLE, str(target)], code, folder, env)
                figures.setdefault((name, label), []).append(seconds)
        for how in ("made", "seeded"):
            store = folder / f"store-{how}-{index}.db"
            seconds = cpu_seconds([sys.executable, "-c", STORE, str(store), how], REPOSITORY, folder)
            figures.setdefault(("MLflow store", how), []).append(seconds)
    for (name, label), values in figures.items():
        print(f"{name:14s} {label:22s} min {min(values):5.2f}  all {' '.join(f'{v:.2f}' for v in values)}")


def report(figures: dict[tuple[str, str], list[float]], codes: dict[str, Path]) -> None:
    names = list(codes)
    for which in ("fresh", "second"):
        lows = {name: min(figures[(name, which)]) for name in names}
        line = "  ".join(f"{name} min {lows[name]:.2f}" for name in names)
        ratio = f"  ratio {lows[names[0]] / lows[names[1]]:.2f}" if len(names) == 2 else ""
        print(f"{which:6s} {line}{ratio}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--code", type=Path, help="another checkout to compare with (the baseline)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--parts", action="store_true", help="the example data and the MLflow store apart")
    parser.add_argument("--jobs", action="store_true", help="the runs' CPU by job process")
    args = parser.parse_args()
    codes = {"this": REPOSITORY}
    if args.code:
        codes = {"baseline": args.code.resolve(), "this": REPOSITORY}
    with tempfile.TemporaryDirectory(prefix="llpipe-fixed-cost-") as folder:
        (parts if args.parts else jobs if args.jobs else runs)(codes, args.repeat, Path(folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
