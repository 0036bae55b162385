"""Benchmark: issue 40's encoding (one-hot text columns, MissingValues=impute) against the encoding before it
(every text column hashed into 16 buckets; ``MissingValues=drop``, the only earlier policy under which a table with
gaps ran without zeros), on real tables from the ISLP package's wheel, measured in the same run.

Both configurations run the whole local pipeline on the same files with the same SplitSeed, split by a row number
column (``IdColumn``: the split of encoded features would otherwise move rows between the splits when the encoding
changes); ``HashBuckets=16`` reproduces the former encoding byte for byte
(tests/unit/preprocessing/test_preprocess_pinned.py). Prints per table
and seed Linear Learner's test metric (binary: AUC; regression: RMSE), the report's scikit-learn baseline, and the
ratio after / before.

    pip download --no-deps ISLP -d /tmp/islp
    python benchmarks/encoding.py --wheel /tmp/islp/islp-0.6.0-py3-none-any.whl [--seeds 0 1 2] [--tables OJ ...]
    python benchmarks/encoding.py    # the generated crash-shaped table only (no download): what make bench runs
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import time
import zipfile
from pathlib import Path

import pandas as pd

# table: (label column, predictor type, columns dropped: row names and other labels)
TABLES = {
    "Default": ("default", "binary_classifier", []),
    "OJ": ("Purchase", "binary_classifier", ["STORE"]),
    "Carseats": ("Sales", "regressor", []),
    "Hitters": ("Salary", "regressor", []),
    # generated, the crash table's shape: a Yes/No column whose two values share one of 16 buckets ("US=Yes" and
    # "US=No" do) carries most of the signal, and a fifth of the ages are missing
    "crash": ("dead", "binary_classifier", []),
}
ROW_ID = "row_id"  # added to each table: the split is by its hash, the same rows in both configurations
BEFORE = {"HashBuckets": "16", "MissingValues": "drop", "IdColumn": ROW_ID}
AFTER = {"IdColumn": ROW_ID}  # the defaults otherwise: HashBuckets=0 (schema-decided), MissingValues=impute


def crash_table(rows: int = 4000, seed: int = 7) -> pd.DataFrame:
    """4,000 crashes: death far likelier without the belt (US=No: the column name collides on purpose), by speed
    band and age; 20% of the ages missing."""
    import numpy as np

    rng = np.random.default_rng(seed)
    belt = rng.random(rows) < 0.7
    speed = rng.choice(["0-20", "20-40", "40-60", "60+"], rows)
    age = rng.normal(45, 18, rows).clip(16, 95).round(0)
    logit = -3.0 - 2.5 * belt + 0.6 * pd.Series(speed).map({"0-20": 0, "20-40": 1, "40-60": 2, "60+": 3}) + 0.03 * age
    dead = rng.random(rows) < 1 / (1 + np.exp(-logit))
    ages = pd.Series(age, dtype=object)
    ages[rng.random(rows) < 0.2] = None
    return pd.DataFrame(
        {"US": np.where(belt, "Yes", "No"), "speed": speed, "age": ages, "dead": np.where(dead, "yes", "no")}
    )


def write_table(wheel: Path | None, name: str, folder: Path) -> Path:
    """ISLP/data/<name>.csv from the wheel (or the generated crash table), without its row-name column, as one CSV."""
    if name == "crash":
        frame = crash_table()
    else:
        assert wheel is not None, "the ISLP tables come from the wheel"
        with zipfile.ZipFile(wheel) as archive:
            frame = pd.read_csv(io.BytesIO(archive.read(f"ISLP/data/{name}.csv")))
    frame = frame.loc[:, [column for column in frame.columns if not column.startswith("Unnamed")]]
    frame = frame.drop(columns=TABLES[name][2], errors="ignore")
    frame.insert(0, ROW_ID, [f"row{index}" for index in range(len(frame))])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.csv"
    frame.to_csv(path, index=False)
    return path


def run_once(run, path: Path, name: str, seed: int, overrides: dict[str, str]) -> dict:
    from pipeline.local.data import user_data

    label, predictor, _ = TABLES[name]
    started = time.perf_counter()
    prepared = run.prepare(user_data(path, label, predictor), {**overrides, "SplitSeed": str(seed)}, sample_rows=10_000)
    record = prepared.execute()
    evaluate = record.steps.get("Evaluate")
    if evaluate is None or evaluate.status != "Succeeded":
        raise SystemExit(f"{name} seed {seed} {overrides}: the run failed: {record.failure_reason}")
    report = json.loads(run.s3.path(evaluate.properties["PropertyFiles"]["EvaluationReport"]).read_text())
    section, metric = (
        ("regression_metrics", "rmse") if predictor == "regressor" else ("binary_classification_metrics", "auc")
    )
    return {
        "table": name, "seed": seed, "metric": metric, "linear_learner": report[section][metric]["value"],
        "baseline": report["baseline"][section][metric]["value"], "test_records": report["dataset"]["item_count"],
        "seconds": time.perf_counter() - started,
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--wheel", type=Path, help="the ISLP wheel (pip download --no-deps ISLP); without it, the generated table only"
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--tables", nargs="+", choices=list(TABLES), help="default: every table there is")
    parser.add_argument("--workdir", type=Path, default=Path(".llpipe/encoding-benchmark"))
    args = parser.parse_args()

    from pipeline.definition.config import load_config
    from pipeline.local.runner import build_local_run
    from pipeline.local.workdir import Workdir

    tables = args.tables or [name for name in TABLES if args.wheel or name == "crash"]
    if args.wheel is None and set(tables) != {"crash"}:
        parser.error("the ISLP tables need --wheel")
    run = build_local_run(load_config(env={}), Workdir(args.workdir))
    print(f"{'table':<10}{'seed':>5}{'metric':>7}{'before':>9}{'after':>9}{'after/before':>14}"
          f"{'base before':>13}{'base after':>12}{'test rows':>11}")  # fmt: skip
    ratios: dict[str, list[float]] = {}
    for name in tables:
        path = write_table(args.wheel, name, args.workdir / "tables")
        for seed in args.seeds:
            before = run_once(run, path, name, seed, BEFORE)
            after = run_once(run, path, name, seed, AFTER)
            ratio = after["linear_learner"] / before["linear_learner"]
            ratios.setdefault(name, []).append(ratio)
            print(
                f"{name:<10}{seed:>5}{after['metric']:>7}{before['linear_learner']:>9.4f}"
                f"{after['linear_learner']:>9.4f}{ratio:>14.4f}{before['baseline']:>13.4f}{after['baseline']:>12.4f}"
                f"{before['test_records']:>5}/{after['test_records']:<5}",
                flush=True,
            )
    print("\nmean ratio after / before (AUC: above 1 is better; RMSE: below 1 is better)")
    for name, values in ratios.items():
        print(f"{name:<10}{statistics.fmean(values):.4f} over {len(values)} seed(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
