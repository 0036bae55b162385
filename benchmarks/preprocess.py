"""Rows per second of the Preprocess job on 300,000 and 1,000,000 x 50 numeric rows, from CSV and from Parquet,
against the parse-only baselines and against the job's floor, with the targets: CSV within 1.5x of the floor and
Parquet within 2.5x (issues 31 and 39);
CSV >= 2x and Parquet >= 0.8x the baselines (issue 17), which the floor itself allows only on a quiet machine.

Baselines, measured in the same run on the same files: ``pandas.read_csv`` of the whole CSV file and
``pyarrow.parquet.read_table(...).to_pandas()`` of the Parquet file, i.e. only parsing the input into memory. The ratio
says what the whole job (parse, check, split, shuffle, shard, encode RecordIO, write) costs relative to that.
The floor, also measured in the same run, is what no version of the job can beat: its own read stage alone (the file
parsed into float32 chunks, nothing else) plus writing as many bytes as the job's output files hold; "vs floor" is
the job's time over that floor, and "best ratio" the baseline over the floor, the ratio a job doing nothing but
reading and writing would reach. The job's CPU time (all its threads) over the cores and the floor says how close to
the floor its work lets it come on this machine at best. Baseline, job and floor run in turn, ``--repeat`` times,
and the best of each is taken, so a busy machine slows all alike.
The job runs in-process under the interpreter that runs this script; ``--python PATH`` runs the benchmark under
another one instead (e.g. a Python 3.9 venv with the processing image's pins: pandas 1.1.3, pyarrow 14.0.1), which
needs only numpy, pandas and pyarrow. The data is generated into ``--data-dir`` (reused when it is there already) or
a temporary folder deleted afterwards.

    python benchmarks/preprocess.py [--rows N[,N...]] [--features N] [--python PATH] [--data-dir DIR] [--repeat N]
        [--code DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
TARGETS = {"CSV": 2.0, "Parquet": 0.8}  # job rows/s over the baseline's, at least
FLOOR_TARGETS = {"CSV": 1.5, "Parquet": 2.5}  # job seconds over the floor's, at most (issue 39)


def generate(folder: Path, rows: int, features: int) -> tuple[Path, Path]:
    """A binary data set: ``features`` float columns (6 significant digits) and a 0/1 label, as one CSV and one
    Parquet file; reused when the folder holds it already."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    csv, parquet = folder / "csv" / "data.csv", folder / "parquet" / "data.parquet"
    marker = folder / f".complete-{rows}x{features}"
    if marker.exists():
        return csv, parquet
    rng = np.random.default_rng(0)
    data = rng.normal(size=(rows, features)).round(5).astype(np.float32)
    label = (data[:, :5].sum(axis=1) + rng.normal(size=rows) > 0).astype(np.int8)
    columns = {f"f{i}": data[:, i] for i in range(features)}
    table = pa.table({**columns, "label": label})
    for path in (csv, parquet):
        path.parent.mkdir(parents=True, exist_ok=True)
    pacsv.write_csv(table, csv, pacsv.WriteOptions(quoting_style="none"))
    pq.write_table(table, parquet)
    marker.touch()
    return csv, parquet


def timed(action) -> float:  # noqa: ANN001 - any callable
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def timed_with_cpu(action) -> tuple[float, float]:  # noqa: ANN001 - any callable
    """Wall seconds and this process's CPU seconds (all threads, user and system) of one call."""
    started, cpu = time.perf_counter(), os.times()
    action()
    ended = os.times()
    return time.perf_counter() - started, ended.user - cpu.user + ended.system - cpu.system


JOB_ARGUMENTS = ("--label-column", "label", "--predictor-type", "binary_classifier", "--train-shards", "4")


def run_job(input_dir: Path, output_dir: Path) -> None:
    from preprocessing.preprocess import main

    shutil.rmtree(output_dir, ignore_errors=True)
    resource_config = output_dir.parent / "no-resource-config.json"
    arguments = ["--input-dir", str(input_dir), "--output-dir", str(output_dir)]
    if main([*arguments, "--resource-config", str(resource_config), *JOB_ARGUMENTS]) != 0:
        raise SystemExit("the job failed")


def read_stage(path: Path, scratch: Path) -> None:
    """The job's read stage alone: its reader, chunk by chunk, nothing done with the chunks."""
    try:
        from containerlib.tables.header import read_header
        from preprocessing.command import build_parser, settings_from
        from preprocessing.conversion import iter_chunks
        from preprocessing.inputs import load_decided
        from preprocessing.layout import resolve_schema
    except ImportError:  # a --code checkout from before the job was in modules: its one module held them all
        from preprocessing.preprocess import build_parser, iter_chunks, load_decided, read_header, resolve_schema

        def settings_from(args: argparse.Namespace) -> argparse.Namespace:
            return args

    settings = settings_from(build_parser().parse_args(["--output-dir", str(scratch), *JOB_ARGUMENTS]))
    schema = resolve_schema(settings, load_decided(None), str(path), read_header(path))
    for _ in iter_chunks(path, schema, settings.chunk_rows):
        pass


def write_stage(output_bytes: int, scratch: Path) -> None:
    """``output_bytes`` written to a file in 4 MB blocks, as many bytes as the job's output files hold."""
    import numpy as np

    block = np.ones(4 << 20, dtype=np.uint8)
    with open(scratch / "floor.bin", "wb") as out:
        for start in range(0, output_bytes, len(block)):
            out.write(block[: min(len(block), output_bytes - start)].data)
    (scratch / "floor.bin").unlink()


Result = tuple[str, float, str, float, float, float, float]


def measure(folder: Path, rows: int, features: int, repeat: int) -> list[Result]:
    """(input, file MB, baseline name, best baseline seconds, best job seconds, best floor seconds, CPU seconds of
    the best job run) for CSV and Parquet."""
    import pandas as pd
    import pyarrow.parquet as pq

    print(f"generating (or reusing) {rows:,} x {features} rows as CSV and Parquet in {folder}", flush=True)
    csv, parquet = generate(folder, rows, features)
    results = []
    for name, path, baseline_name, baseline in (
        ("CSV", csv, "pandas.read_csv", lambda: pd.read_csv(csv)),
        ("Parquet", parquet, "read_table().to_pandas()", lambda: pq.read_table(parquet).to_pandas()),
    ):
        output, scratch = folder / f"out-{name}", folder / f"floor-{name}"
        scratch.mkdir(exist_ok=True)
        baseline_seconds, job_seconds, job_cpu, read_seconds, write_seconds = [], [], [], [], []
        for _ in range(repeat):  # interleaved, so a busy machine slows all alike
            baseline_seconds.append(timed(baseline))
            wall, cpu = timed_with_cpu(lambda path=path, output=output: run_job(path.parent, output))
            job_seconds.append(wall)
            job_cpu.append(cpu)
            output_bytes = sum(file.stat().st_size for file in output.rglob("*.pbr"))
            read_seconds.append(timed(lambda path=path, to=scratch: read_stage(path, to)))
            write_seconds.append(timed(lambda size=output_bytes, to=scratch: write_stage(size, to)))
        written = sum(json.loads((output / "summary" / "summary.json").read_text())["rows"].values())  # one host
        assert written == rows, f"preprocess wrote {written} rows, expected {rows}"
        shutil.rmtree(output, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
        size = path.stat().st_size / 1e6
        floor_seconds = min(read_seconds) + min(write_seconds)  # each stage at its best: the lowest floor measured
        cpu = job_cpu[job_seconds.index(min(job_seconds))]  # the best run's
        results.append((name, size, baseline_name, min(baseline_seconds), min(job_seconds), floor_seconds, cpu))
    return results


def report(results: list[Result], rows: int, features: int) -> bool:
    """Print the table with each target met or not; True when all are."""
    import numpy
    import pandas
    import pyarrow

    print(
        f"\nPreprocess, {rows:,} x {features} numeric rows (binary label); Python {platform.python_version()}, "
        f"pandas {pandas.__version__}, pyarrow {pyarrow.__version__}, numpy {numpy.__version__}, "
        f"{os.cpu_count()} CPUs"
    )
    header = ("input", "file MB", "baseline", "baseline rows/s", "preprocess s", "preprocess rows/s", "ratio",
              "target", "floor s", "vs floor", "target", "best ratio", "CPU s", "CPU/cores")  # fmt: skip
    widths = (7, 8, 24, 16, 13, 18, 7, 15, 8, 9, 16, 10, 6, 9)
    cores = os.cpu_count() or 1
    print(_row(header, widths))
    all_met = True
    for name, size_mb, baseline_name, baseline_seconds, job_seconds, floor_seconds, cpu_seconds in results:
        ratio = baseline_seconds / job_seconds
        met = ratio >= TARGETS[name]
        over_floor = job_seconds / floor_seconds
        floor_met = over_floor <= FLOOR_TARGETS[name]
        all_met &= met and floor_met
        cells = (name, f"{size_mb:,.0f}", baseline_name, f"{rows / baseline_seconds:,.0f}", f"{job_seconds:.2f}",
                 f"{rows / job_seconds:,.0f}", f"{ratio:.2f}x", f">= {TARGETS[name]}x {_met(met)}",
                 f"{floor_seconds:.2f}", f"{over_floor:.2f}x", f"<= {FLOOR_TARGETS[name]}x {_met(floor_met)}",
                 f"{baseline_seconds / floor_seconds:.2f}x", f"{cpu_seconds:.2f}",
                 f"{cpu_seconds / cores / floor_seconds:.2f}x")  # fmt: skip
        print(_row(cells, widths))
    print("ratio = preprocess rows/s / baseline rows/s (the baseline only parses the file into memory); best of runs")
    print("floor = the job's read stage alone + writing its output's bytes, each best of runs; vs floor = preprocess s "
          "/ floor s; best ratio = baseline s / floor s")  # fmt: skip
    print(f"CPU s = the best job run's CPU time, all threads; CPU/cores = CPU s / {cores} cores / floor s, the least "
          "'vs floor' that work allows even with every core busy throughout")  # fmt: skip
    return all_met


def _met(met: bool) -> str:
    return "met" if met else "NOT met"


def _row(cells: tuple[str, ...], widths: tuple[int, ...]) -> str:
    return "  ".join(f"{cell:>{widths[index]}}" for index, cell in enumerate(cells))  # Python 3.9: no zip(strict=)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--rows",
        type=lambda text: [int(part) for part in text.split(",")],
        default=[300_000, 1_000_000],
        help="data set sizes, comma-separated (default: 300000,1000000)",
    )
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each, best taken (default: %(default)s)")
    parser.add_argument("--data-dir", type=Path, help="generate the data here and keep it for the next run")
    parser.add_argument("--python", help="run the benchmark under this interpreter instead")
    parser.add_argument(
        "--code",
        type=Path,
        default=REPOSITORY,
        help="checkout whose preprocessing/ runs, e.g. the main branch's for a before figure (default: this one)",
    )
    options = parser.parse_args()
    if options.python:
        argv = [*sys.argv[1:]]
        index = argv.index("--python")
        del argv[index : index + 2]
        return subprocess.run([options.python, str(Path(__file__).resolve()), *argv], check=False).returncode
    sys.path.insert(0, str(options.code.resolve()))
    all_met = True
    for rows in options.rows:
        folder = options.data_dir / f"{rows}x{options.features}" if options.data_dir else None
        scratch = folder or Path(tempfile.mkdtemp(prefix="bench-preprocess-"))
        try:
            results = measure(scratch, rows, options.features, options.repeat)
        finally:
            if folder is None:
                shutil.rmtree(scratch, ignore_errors=True)
        all_met &= report(results, rows, options.features)
    print("targets:", "all met" if all_met else "NOT all met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
