"""Rows per second of the Preprocess job on 1,000,000 x 50 numeric rows, from CSV and from Parquet.

Baselines, measured in the same run on the same files: ``pandas.read_csv`` of the whole CSV file and
``pyarrow.parquet.read_table(...).to_pandas()`` of the Parquet file, i.e. only parsing the input into memory. The ratio
says what the whole job (parse, check, split, shuffle, shard, encode RecordIO, write) costs relative to that.
The data is generated into a temporary folder and deleted afterwards.

    python benchmarks/preprocess.py [--rows N] [--features N]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from rich.console import Console
from rich.table import Table

from preprocessing.preprocess import build_parser, load_summary, preprocess


def generate(folder: Path, rows: int, features: int) -> tuple[Path, Path]:
    """A binary data set: ``features`` float columns and a 0/1 label, as one CSV and one Parquet file."""
    rng = np.random.default_rng(0)
    data = rng.normal(size=(rows, features)).astype(np.float32)
    label = (data[:, :5].sum(axis=1) + rng.normal(size=rows) > 0).astype(np.int8)
    frame = pd.DataFrame(data, columns=[f"f{i}" for i in range(features)])
    frame["label"] = label
    (folder / "csv").mkdir()
    (folder / "parquet").mkdir()
    csv, parquet = folder / "csv" / "data.csv", folder / "parquet" / "data.parquet"
    frame.to_csv(csv, index=False, float_format="%.6g")
    frame.to_parquet(parquet, index=False)
    return csv, parquet


def timed(action) -> float:  # noqa: ANN001 - any callable
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def run_job(input_dir: Path, output_dir: Path) -> None:
    args = build_parser().parse_args(
        [
            "--input-dir", str(input_dir), "--output-dir", str(output_dir), "--resource-config",
            str(output_dir / "no-resource-config.json"), "--label-column", "label",
            "--predictor-type", "binary_classifier", "--train-shards", "4",
        ]
    )  # fmt: skip
    preprocess(args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=50)
    options = parser.parse_args()
    console = Console(width=150)
    folder = Path(tempfile.mkdtemp(prefix="bench-preprocess-"))
    try:
        with console.status(f"generating {options.rows:,} x {options.features} rows as CSV and Parquet"):
            csv, parquet = generate(folder, options.rows, options.features)
        results = []
        for name, path, baseline_name, baseline in (
            ("CSV", csv, "pandas.read_csv", lambda: pd.read_csv(csv)),
            ("Parquet", parquet, "pyarrow read_table().to_pandas()", lambda: pq.read_table(parquet).to_pandas()),
        ):
            with console.status(f"{name}: baseline {baseline_name}"):
                baseline_seconds = timed(baseline)
            output = folder / f"out-{name}"
            with console.status(f"{name}: preprocess"):
                job_seconds = timed(lambda path=path, output=output: run_job(path.parent, output))
            rows = sum(load_summary(output / "summary")["rows"].values())
            assert rows == options.rows, f"preprocess wrote {rows} rows, expected {options.rows}"
            size_mb = path.stat().st_size / 1e6
            results.append((name, size_mb, baseline_name, baseline_seconds, job_seconds))
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    table = Table(title=f"Preprocess, {options.rows:,} x {options.features} numeric rows (binary label)")
    for column in ("input", "file MB", "baseline", "baseline rows/s", "preprocess s", "preprocess rows/s", "ratio"):
        table.add_column(column, justify="right")
    for name, size_mb, baseline_name, baseline_seconds, job_seconds in results:
        table.add_row(
            name,
            f"{size_mb:,.0f}",
            baseline_name,
            f"{options.rows / baseline_seconds:,.0f}",
            f"{job_seconds:.1f}",
            f"{options.rows / job_seconds:,.0f}",
            f"{baseline_seconds / job_seconds:.2f}x",
        )
    console.print(table)
    console.print("ratio = preprocess rows/s / baseline rows/s (the baseline only parses the file into memory)")


if __name__ == "__main__":
    main()
