"""Benchmark: the whole local pipeline at its defaults against Evaluate's scikit-learn baseline on the same splits.

Tables: scikit-learn's bundled datasets (breast cancer, wine, digits, diabetes; no downloads) and generated tables
(binary with 1%, 3% and 10% positives of 20,000 rows, 6% of 5,822 rows x 85 features, a noisy regression). For
every table, SplitSeed value and training instance count (1 and 2) the pipeline runs once, locally, with only the
data parameters set; the report's ``baseline``
section is the scikit-learn model (LogisticRegressionCV / RidgeCV) fitted on the same train split and scored on the
same test split, so each run gives a paired gap. Prints per table the mean gap and its standard deviation over the
runs (binary: AUC difference; multiclass: accuracy difference; regression: relative RMSE difference), per instance
count, and whether the target is met (binary AUC and multiclass accuracy within 0.01 of the baseline, RMSE within 2%).

    python benchmarks/quality.py [--seeds 0 1 2 3 4] [--instances 1 2] [--tables breast_cancer imbalanced_1 ...]

Real public tables with small text columns, missing values and imbalance (``--public caravan default carseats ...``,
``public_tables.py``: ISLP's and palmerpenguins' tables, downloaded by the benchmark with ``pip download --no-deps``
into ``~/.cache/llpipe/benchmark-tables``) run the pipeline at its defaults (schema inferred, as ``llpipe run``
does) for each ``--public-seeds`` SplitSeed, and compare it with the report's ``baseline_raw_columns``: scikit-learn
fitted on the same train rows' raw columns (one-hot text, scaled numbers, median + missing indicator;
LogisticRegressionCV / RidgeCV) and scored on the same test rows. Printed per table, averaged over the seeds: binary
AUC and accuracy, regression RMSE, each against the targets (AUC and accuracy within 0.01, RMSE within 2%).

    python benchmarks/quality.py --tables --public caravan carseats [--public-seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

TARGETS = {"binary_classifier": 0.01, "multiclass_classifier": 0.01, "regressor": 0.02}
METRIC = {"binary_classifier": "auc", "multiclass_classifier": "accuracy", "regressor": "rmse"}
SECTION = {
    "binary_classifier": "binary_classification_metrics",
    "multiclass_classifier": "multiclass_classification_metrics",
    "regressor": "regression_metrics",
}


@dataclass(frozen=True)
class Table:
    name: str
    predictor_type: str
    make: Callable[[], tuple[np.ndarray, np.ndarray]]
    num_classes: int = 3


def _sklearn(loader: str) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
    def make() -> tuple[np.ndarray, np.ndarray]:
        import sklearn.datasets

        return getattr(sklearn.datasets, loader)(return_X_y=True)

    return make


def _imbalanced(
    positives: float, rows: int = 20_000, features: int = 40, separation: float = 0.7
) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
    def make() -> tuple[np.ndarray, np.ndarray]:
        from sklearn.datasets import make_classification

        return make_classification(
            rows, features, n_informative=8, n_redundant=8, weights=[1 - positives], flip_y=0.01,
            class_sep=separation, random_state=1,
        )  # fmt: skip

    return make


def _regression() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import make_regression

    return make_regression(5000, 50, n_informative=10, noise=40.0, random_state=1)


TABLES = {
    table.name: table
    for table in (
        Table("breast_cancer", "binary_classifier", _sklearn("load_breast_cancer")),
        Table("imbalanced_1", "binary_classifier", _imbalanced(0.01)),
        Table("imbalanced_3", "binary_classifier", _imbalanced(0.03)),
        Table("imbalanced_10", "binary_classifier", _imbalanced(0.10)),
        # the shape of the table in issue 26 (5,822 rows, 85 features, 6% positives, a weak signal)
        Table("imbalanced_6_small", "binary_classifier", _imbalanced(0.06, 5822, 85, 0.4)),
        Table("wine", "multiclass_classifier", _sklearn("load_wine"), 3),
        Table("digits", "multiclass_classifier", _sklearn("load_digits"), 10),
        Table("diabetes", "regressor", _sklearn("load_diabetes")),
        Table("regression_noisy", "regressor", _regression),
    )
}


def write_table(table: Table, folder: Path) -> Path:
    """The table as one CSV (features f0.., then label), written once."""
    path = folder / f"{table.name}.csv"
    if not path.is_file():
        features, labels = table.make()
        frame = pd.DataFrame(
            np.asarray(features, dtype=np.float64), columns=[f"f{i}" for i in range(features.shape[1])]
        )
        frame["label"] = labels if table.predictor_type == "regressor" else np.asarray(labels).astype(int)
        folder.mkdir(parents=True, exist_ok=True)
        frame.to_csv(path, index=False, float_format="%.6g")
    return path


def gap(report: dict, predictor_type: str) -> tuple[float, float, float]:
    """(Linear Learner, baseline, gap): AUC/accuracy difference, or RMSE relative difference (positive is worse)."""
    metric, section = METRIC[predictor_type], SECTION[predictor_type]
    ours = report[section][metric]["value"]
    theirs = report["baseline"][section][metric]["value"]
    if predictor_type == "regressor":
        return ours, theirs, (ours - theirs) / theirs
    return ours, theirs, ours - theirs


def run_once(run, table: Table, data: Path, seed: int, instances: int) -> dict:
    from pipeline.local.data import user_data

    overrides = {"SplitSeed": str(seed), "TrainingInstanceCount": str(instances)}
    if table.predictor_type == "multiclass_classifier":
        overrides["NumClasses"] = str(table.num_classes)
    started = time.perf_counter()
    record = run.execute(user_data(data, "label", table.predictor_type), overrides)
    evaluate = record.steps.get("Evaluate")
    if evaluate is None or evaluate.status != "Succeeded":
        raise SystemExit(f"{table.name} seed {seed} x{instances}: the run failed: {record.failure_reason}")
    report = json.loads(run.s3.path(evaluate.properties["PropertyFiles"]["EvaluationReport"]).read_text())
    ours, theirs, difference = gap(report, table.predictor_type)
    return {
        "table": table.name, "seed": seed, "instances": instances, "linear_learner": ours, "baseline": theirs,
        "gap": difference, "seconds": time.perf_counter() - started, "test_records": report["dataset"]["item_count"],
    }  # fmt: skip


def spread(values: list[float]) -> str:
    mean = statistics.fmean(values)
    deviation = statistics.stdev(values) if len(values) > 1 else math.nan
    return f"{mean:+.4f} ± {deviation:.4f}"


def print_table(results: list[dict], instances: list[int]) -> bool:
    """The gap per table (mean ± standard deviation over its runs), per instance count, and the verdict."""
    print(
        "\ngap to the scikit-learn baseline on the same test split (binary: AUC, multiclass: accuracy, higher is"
        " better; regression: relative RMSE, lower is better); mean ± standard deviation over the runs"
    )
    header = f"{'table':<19}{'metric':<10}{'runs':>5}{'LL mean':>10}{'base mean':>11}{'gap (all)':>20}"
    header += "".join(f"{f'gap x{n}':>20}" for n in instances) + f"{'target':>10}  met"
    print(header)
    all_met = True
    for name in dict.fromkeys(row["table"] for row in results):
        rows = [row for row in results if row["table"] == name]
        predictor = TABLES[name].predictor_type
        gaps = [row["gap"] for row in rows]
        mean = statistics.fmean(gaps)
        target = TARGETS[predictor]
        met = mean <= target if predictor == "regressor" else mean >= -target
        all_met &= met
        line = f"{name:<19}{METRIC[predictor]:<10}{len(rows):>5}"
        line += f"{statistics.fmean(r['linear_learner'] for r in rows):>10.4f}"
        line += f"{statistics.fmean(r['baseline'] for r in rows):>11.4f}{spread(gaps):>20}"
        for count in instances:
            line += f"{spread([r['gap'] for r in rows if r['instances'] == count]):>20}"
        bound = f"<= +{target:.0%}" if predictor == "regressor" else f">= -{target}"
        print(line + f"{bound:>10}  {'yes' if met else 'NO'}")
    return all_met


PUBLIC_METRICS = {"binary_classifier": ("auc", "accuracy"), "regressor": ("rmse",)}


def run_public(name: str, seed: int, workdir: Path) -> dict:
    """One pipeline run at its defaults on a public table: each metric of Linear Learner and of scikit-learn on the
    raw columns (the report's ``baseline_raw_columns``), on the same split."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from public_tables import CACHE, write

    from pipeline.api import run_local

    data, table = write(name, CACHE / "csv")  # outside the work dir, which takes no data from inside it
    parameters = {"SplitSeed": str(seed)}
    if table.predictor_type == "binary_classifier":
        values = sorted(str(value) for value in pd.read_csv(data)[table.label].dropna().unique())
        negative = next(value for value in values if value != table.positive)
        parameters["LabelValues"] = f"{negative},{table.positive}"
    started = time.perf_counter()
    execution = run_local(
        data, table.label, table.predictor_type, workdir=workdir, progress=False, mlflow_tracking=False, **parameters
    )
    report = execution.report or {}
    if "baseline_raw_columns" not in report:
        raise SystemExit(f"{name} seed {seed}: no raw-column baseline in the report: {execution.failure_reason}")
    section = SECTION[table.predictor_type]
    row = {"table": name, "predictor_type": table.predictor_type, "seed": seed, "status": execution.status}
    for metric in PUBLIC_METRICS[table.predictor_type]:
        row[metric] = report[section][metric]["value"]
        row[f"{metric}_sklearn_raw"] = report["baseline_raw_columns"][section][metric]["value"]
        row[f"{metric}_sd"] = report[section][metric]["standard_deviation"]
    row["test_records"] = report["dataset"]["item_count"]
    row["same_test_records"] = report["baseline_raw_columns"]["same_test_records"]
    row["seconds"] = time.perf_counter() - started
    return row


def print_public(results: list[dict]) -> bool:
    """Per public table, averaged over its seeds: Linear Learner against scikit-learn on the raw columns."""
    print(
        "\nLinear Learner at its defaults against scikit-learn on the raw columns (same train rows, same test rows), "
        "mean over the seeds; targets: AUC and accuracy within 0.01, RMSE within 2%"
    )
    print(f"{'table':<12}{'metric':<10}{'seeds':>6}{'LL':>10}{'sklearn':>10}{'gap':>10}{'target':>10}  met")
    all_met = True
    for name in dict.fromkeys(row["table"] for row in results):
        rows = [row for row in results if row["table"] == name]
        for metric in PUBLIC_METRICS[rows[0]["predictor_type"]]:
            ours = statistics.fmean(row[metric] for row in rows)
            theirs = statistics.fmean(row[f"{metric}_sklearn_raw"] for row in rows)
            if metric == "rmse":
                difference, bound = (ours - theirs) / theirs, "<= +2%"
                met = difference <= 0.02
                shown = f"{difference:>+10.2%}"
            else:
                difference, bound = ours - theirs, ">= -0.01"
                met = difference >= -0.01
                shown = f"{difference:>+10.4f}"
            all_met &= met
            print(f"{name:<12}{metric:<10}{len(rows):>6}{ours:>10.4f}{theirs:>10.4f}{shown}{bound:>10}  "
                  f"{'yes' if met else 'NO'}")  # fmt: skip
    return all_met


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--instances", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--tables", nargs="*", default=list(TABLES), choices=list(TABLES))
    parser.add_argument("--public", nargs="*", default=[], help="public tables (public_tables.py), e.g. caravan")
    parser.add_argument("--public-seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--workdir", type=Path, default=Path(".llpipe/quality-benchmark"))
    parser.add_argument("--results", type=Path, help="also write every run's figures here (JSON lines)")
    args = parser.parse_args()

    from pipeline.definition.config import load_config
    from pipeline.local.runner import build_local_run
    from pipeline.local.workdir import Workdir

    run = build_local_run(load_config(env={}), Workdir(args.workdir))
    results = []
    started = time.perf_counter()
    for name in args.tables:
        table = TABLES[name]
        data = write_table(table, args.workdir / "tables")
        for seed in args.seeds:
            for instances in args.instances:
                row = run_once(run, table, data, seed, instances)
                results.append(row)
                print(
                    f"{name} seed {seed} x{instances}: Linear Learner {row['linear_learner']:.4f}, baseline "
                    f"{row['baseline']:.4f}, gap {row['gap']:+.4f} ({row['test_records']} test records, "
                    f"{row['seconds']:.0f} s)",
                    flush=True,
                )
                if args.results:
                    with args.results.open("a") as stream:
                        stream.write(json.dumps(row) + "\n")
    met = print_table(results, args.instances) if results else True
    public = []
    for name in args.public:
        for seed in args.public_seeds:
            row = run_public(name, seed, args.workdir)
            public.append(row)
            figures = ", ".join(
                f"{metric} {row[metric]:.4f} (sklearn raw {row[metric + '_sklearn_raw']:.4f}, "
                f"sd {row[metric + '_sd']:.4f})"
                for metric in PUBLIC_METRICS[row["predictor_type"]]
            )
            print(f"{name} seed {seed}: {figures}; {row['test_records']} test rows, {row['seconds']:.0f} s", flush=True)
            if args.results:
                with args.results.open("a") as stream:
                    stream.write(json.dumps(row) + "\n")
    if public:
        met &= print_public(public)
    runs = len(results) + len(public)
    print(f"\n{runs} runs in {time.perf_counter() - started:.0f} s; every target met: {'yes' if met else 'NO'}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
