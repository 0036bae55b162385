"""Does tuning pay on small imbalanced data? The pipeline run locally twice on the same table, end to end through
Register: once with the defaults (one Train step) and once with a Tuning step of ``--jobs`` training jobs.

Prints, for both runs, the validation objective the tuning optimises (the untuned Train step's final value of the same
metric is the baseline) and the test AUC of the Evaluate step's report, measured in the same run. The table
(5,000 rows, about 6% positives, 12 features of which 4 informative, some on other scales) is generated from a seed
into the work dir by tests/support/imbalanced_table.py. Caching is off, so every step really runs.

    python benchmarks/tuning.py [--jobs 12] [--parallel 2] [--objective validation:objective_loss] [--rows 5000]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from pipeline.api.execution import LocalExecution
from pipeline.cli.render.summary import summarise
from pipeline.definition.config import load_config
from pipeline.definition.tuning import DEFAULT_OBJECTIVE, objective_type
from pipeline.local.data import user_data
from pipeline.local.runner import build_local_run
from pipeline.local.workdir import Workdir

TABLE = Path(__file__).resolve().parent.parent / "tests" / "imbalanced_table.py"


def load_table_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("imbalanced_table", TABLE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(workdir: Path, data: Path, overrides: dict[str, Any], objective: str) -> dict[str, Any]:
    """One local execution; its status, validation objective, test AUC, registered version and wall time."""
    config = load_config({**overrides, "tuning_objective": objective}, env={})
    local_run = build_local_run(config, Workdir.at(workdir), use_cache=False)
    started = time.perf_counter()
    record = local_run.execute(user_data(data, "label", "binary_classifier"), {"MetricThreshold": "0.5"})
    seconds = time.perf_counter() - started
    summary = summarise(LocalExecution(record, local_run.s3), render_plots=False)
    if summary["tuning"]:
        validation = summary["tuning"]["best_value"]
    else:
        metrics = record.steps["Train"].properties.get("FinalMetricDataList", [])
        validation = next((item["Value"] for item in metrics if item["MetricName"] == objective), float("nan"))
    package = summary["model_package"] or {}
    return {
        "execution": record.id,
        "status": record.status,
        "validation": validation,
        "test_auc": summary["metrics"].get("auc", float("nan")),
        "registered": package.get("version"),
        "seconds": seconds,
        "tuning": summary["tuning"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=12, help="training jobs of the tuning job")
    parser.add_argument("--parallel", type=int, default=2, help="training jobs at once")
    parser.add_argument("--strategy", default="Bayesian", choices=("Bayesian", "Random"))
    parser.add_argument("--objective", default=DEFAULT_OBJECTIVE)
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--positives", type=float, default=0.06)
    parser.add_argument("--workdir", type=Path, default=Path(".llpipe/benchmark-tuning"))
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object")
    args = parser.parse_args()
    workdir = args.workdir.resolve()
    data = load_table_module().write_imbalanced_table(
        workdir / "data" / "table.csv", rows=args.rows, positive_share=args.positives
    )
    untuned = run(workdir, data, {}, args.objective)
    tuned = run(
        workdir,
        data,
        {
            "tuning_max_jobs": args.jobs,
            "tuning_max_parallel_jobs": args.parallel,
            "tuning_strategy": args.strategy,
        },
        args.objective,
    )
    if args.json:
        print(json.dumps({"untuned": untuned, "tuned": tuned}, indent=2, default=str))
        return 0
    direction = objective_type(args.objective).lower()
    print(f"table: {args.rows} rows, {args.positives:.0%} positives, 12 features (4 informative): {data}")
    print(
        f"objective: {args.objective} ({direction}d); tuning: {args.jobs} jobs, {args.parallel} at once, "
        f"{args.strategy}"
    )
    print(f"{'run':<10} {'status':<10} {'validation':>11} {'test AUC':>9} {'registered':>10} {'seconds':>8}")
    for name, result in (("untuned", untuned), ("tuned", tuned)):
        print(
            f"{name:<10} {result['status']:<10} {result['validation']:>11.5f} {result['test_auc']:>9.4f} "
            f"{result['registered'] or '-':>10} {result['seconds']:>8.1f}"
        )
    better = (
        tuned["validation"] < untuned["validation"]
        if direction == "minimize"
        else (tuned["validation"] > untuned["validation"])
    )
    print(
        f"validation objective tuned / untuned: {tuned['validation'] / untuned['validation']:.3f} "
        f"({'better' if better else 'not better'}); test AUC tuned - untuned: "
        f"{tuned['test_auc'] - untuned['test_auc']:+.4f}"
    )
    if tuned["tuning"]:
        print(f"best training job: {tuned['tuning']['best_training_job']} {tuned['tuning']['best_hyperparameters']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
