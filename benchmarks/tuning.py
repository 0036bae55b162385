"""Does tuning pay on small imbalanced data? The pipeline run locally twice on the same table, end to end through
Register: once with the defaults (one Train step) and once with a Tuning step of ``--jobs`` training jobs.

``--table caravan`` takes ISLP's Caravan insurance table (5,822 rows, 85 features, 6% buyers), downloaded by the
benchmark (``public_tables.py``: ``pip download --no-deps ISLP`` into a cache folder); the default is a generated
table. The report's standard deviation of the test AUC is printed beside the difference: the tuned model must not be
worse than the untuned one by more than that noise.

Prints, for both runs, the validation objective the tuning optimises (the untuned Train step's final value of the same
metric is the baseline) and the test AUC of the Evaluate step's report, measured in the same run. The table
(5,000 rows, about 6% positives, 12 features of which 4 informative, some on other scales) is generated from a seed
into the work dir by tests/support/imbalanced_table.py. Caching is off, so every step really runs.

    python benchmarks/tuning.py [--table caravan] [--jobs 12] [--parallel 2] [--objective OBJECTIVE] [--rows 5000]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
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


def run(
    workdir: Path, data: Path, overrides: dict[str, Any], objective: str | None, label: str, parameters: dict[str, str]
) -> dict[str, Any]:
    """One local execution; its status, validation objective, test AUC (and its deviation), registered version and
    wall time."""
    settings = {**overrides, **({"tuning_objective": objective} if objective else {})}
    config = load_config(settings, env={})
    objective = config.tuning_objective
    local_run = build_local_run(config, Workdir.at(workdir), use_cache=False)
    started = time.perf_counter()
    record = local_run.execute(user_data(data, label, "binary_classifier"), {"MetricThreshold": "0.5", **parameters})
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
        "test_auc_sd": report_deviation(summary, "auc"),
        **defaults_view(summary),
        "objective": objective,
        "registered": package.get("version"),
        "seconds": seconds,
        "tuning": summary["tuning"],
    }


def defaults_view(summary: dict[str, Any]) -> dict[str, Any]:
    """A tuned run's two models on the same test split (the report's ``tuning``): the tuned one's and the untuned
    defaults' AUC, which the run kept and the gate's decision; empty for an untuned run."""
    path = summary["paths"].get("report")
    report = json.loads(Path(path).read_text()) if path else {}
    if "tuning" not in report:
        return {}
    tuning, decision = report["tuning"], report.get("decision") or {}
    return {
        "tuned_auc": tuning["tuned_value"],
        "defaults_auc": tuning["defaults_value"],
        "kept": tuning["kept"],
        "promote": decision.get("promote"),
    }


def report_deviation(summary: dict[str, Any], metric: str) -> float:
    """The report's standard deviation of ``metric`` (NaN without a report)."""
    path = summary["paths"].get("report")
    if not path:
        return float("nan")
    section = json.loads(Path(path).read_text())["binary_classification_metrics"]
    value = section.get(metric, {}).get("standard_deviation")
    return float(value) if isinstance(value, (int, float)) else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=12, help="training jobs of the tuning job")
    parser.add_argument("--parallel", type=int, default=2, help="training jobs at once")
    parser.add_argument("--strategy", default="Bayesian", choices=("Bayesian", "Random"))
    parser.add_argument(
        "--objective",
        default=None,
        help=f"the tuning objective (default: the configuration's, "
        f"{DEFAULT_OBJECTIVE} unless it follows the predictor type)",
    )
    parser.add_argument("--table", default="generated", choices=("generated", "caravan"))
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--positives", type=float, default=0.06)
    parser.add_argument("--workdir", type=Path, default=Path(".llpipe/benchmark-tuning"))
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object")
    parser.add_argument(
        "--seeds",
        default=None,
        help="comma-separated SplitSeeds: the tuned run alone per seed (it trains the defaults beside it)",
    )
    args = parser.parse_args()
    workdir = args.workdir.resolve()
    label, parameters = "label", {}
    if args.table == "caravan":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from public_tables import write

        data, table = write("caravan", workdir / "data")
        label, parameters = table.label, {"LabelValues": "No,Yes"}
    else:
        data = load_table_module().write_imbalanced_table(
            workdir / "data" / "table.csv", rows=args.rows, positive_share=args.positives
        )
    tuning = {"tuning_max_jobs": args.jobs, "tuning_max_parallel_jobs": args.parallel, "tuning_strategy": args.strategy}
    if args.seeds is not None:
        return per_seed(workdir, data, tuning, args.objective, label, parameters, args.seeds)
    untuned = run(workdir, data, {}, args.objective, label, parameters)
    tuned = run(
        workdir,
        data,
        {
            "tuning_max_jobs": args.jobs,
            "tuning_max_parallel_jobs": args.parallel,
            "tuning_strategy": args.strategy,
        },
        args.objective,
        label,
        parameters,
    )
    if args.json:
        print(json.dumps({"untuned": untuned, "tuned": tuned}, indent=2, default=str))
        return 0
    objective = tuned["objective"]
    direction = objective_type(objective).lower()
    if args.table == "caravan":
        print(f"table: ISLP Caravan, 5,822 rows, 85 features, 6% positives: {data}")
    else:
        print(f"table: {args.rows} rows, {args.positives:.0%} positives, 12 features (4 informative): {data}")
    print(f"objective: {objective} ({direction}d); tuning: {args.jobs} jobs, {args.parallel} at once, {args.strategy}")
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
    noise = untuned["test_auc_sd"]
    difference = tuned["test_auc"] - untuned["test_auc"]
    print(
        f"validation objective tuned / untuned: {tuned['validation'] / untuned['validation']:.3f} "
        f"({'better' if better else 'not better'}); test AUC tuned - untuned: {difference:+.4f} "
        f"(the report's standard deviation {noise:.4f}: {'within' if difference >= -noise else 'beyond'} the noise)"
    )
    if "defaults_auc" in tuned:
        print(
            f"the tuned run: its tuned model AUC {tuned['tuned_auc']:.4f}, its untuned defaults' model (its Train "
            f"step) {tuned['defaults_auc']:.4f} on the same test split; kept the {tuned['kept']} model (test AUC "
            f"{tuned['test_auc']:.4f}), {'registered' if tuned['promote'] else 'not registered'}"
        )
    if tuned["tuning"]:
        print(f"best training job: {tuned['tuning']['best_training_job']} {tuned['tuning']['best_hyperparameters']}")
    return 0


def per_seed(
    workdir: Path,
    data: Path,
    tuning: dict[str, Any],
    objective: str | None,
    label: str,
    parameters: dict[str, str],
    seeds: str,
) -> int:
    """One tuned run per split seed: the tuned model's, the defaults' and the registered (kept) model's test AUC."""
    print(f"{'seed':>4} {'tuned AUC':>9} {'defaults AUC':>12} {'kept':>8} {'registered AUC':>14} {'sd':>6} {'s':>6}")
    for seed in (int(item) for item in seeds.split(",")):
        result = run(workdir, data, tuning, objective, label, {**parameters, "SplitSeed": str(seed)})
        print(
            f"{seed:>4} {result.get('tuned_auc', float('nan')):>9.4f} {result.get('defaults_auc', float('nan')):>12.4f}"
            f" {result.get('kept', '-'):>8} {result['test_auc']:>14.4f} {result['test_auc_sd']:>6.4f}"
            f" {result['seconds']:>6.0f} ({result['status']}, version {result['registered'] or '-'})",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
