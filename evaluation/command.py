"""Evaluate's command line: the arguments and the exit status (a bad input is one line on stderr and in SageMaker's
exit-message file, status 1)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import evaluation
from containerlib import exit_message
from containerlib.errors import InputError
from containerlib.names import DECISION, PREDICTOR_TYPES, RAW_BASELINE, REPORT_NAME, SKLEARN_BASELINE
from containerlib.stop_signals import Stopped, stop_signals_raise
from evaluation.collect import MAX_EXACT_RECORDS
from evaluation.gate import GateSettings
from evaluation.job import DEFAULT_BOOTSTRAP_ROUNDS, DEFAULT_SEED, evaluate


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(evaluation.__doc__ or "").splitlines()[0])
    parser.add_argument("--predictions-dir", type=Path, default=Path("/opt/ml/processing/input/predictions"))
    parser.add_argument("--test-dir", type=Path, default=Path("/opt/ml/processing/input/test"))
    parser.add_argument("--output-dir", type=Path, default=Path("/opt/ml/processing/output/evaluation"))
    parser.add_argument("--predictor-type", required=True, choices=PREDICTOR_TYPES)
    parser.add_argument(
        "--summary-dir", type=Path, help="Preprocess's summary folder: its label values name the classes in the report"
    )
    parser.add_argument(
        "--train-dir", type=Path, help="the train channel: fit the scikit-learn baseline on a sample of it, report it"
    )
    parser.add_argument(
        "--train-uri", help="the train channel as an S3 prefix (read with boto3, only as far as the sample needs)"
    )
    parser.add_argument(
        "--model-uri", help="the model artifact's S3 URI (read with boto3): the report lists its coefficients"
    )
    parser.add_argument(
        "--rows-dir",
        type=Path,
        help="Preprocess's rows/ (raw train and test rows): fit scikit-learn on the raw columns too, report it",
    )
    parser.add_argument(
        "--defaults-model-uri",
        help="a tuned run's untuned model (model.tar.gz S3 URI): score it too, and gate the tuned model against it",
    )
    parser.add_argument("--bootstrap-rounds", type=int, default=DEFAULT_BOOTSTRAP_ROUNDS)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument(
        "--max-exact-records",
        type=int,
        default=MAX_EXACT_RECORDS,
        help="test records up to which the metrics are exact; past it a fixed-size sketch (evaluation/sketch.py)",
    )
    parser.add_argument("--loss", default="auto", help="the training loss: hinge_loss makes a binary score a margin")
    parser.add_argument("--metric-threshold", type=float, help="the gate's MetricThreshold: write the decision")
    parser.add_argument("--champion-tolerance", type=float, default=0.0, help="how much worse than the champion")
    parser.add_argument(
        "--baseline-tolerance",
        type=float,
        default=-1.0,
        help="with a value >= 0 the gate also needs the metric within this of the baseline's (negative: off)",
    )
    parser.add_argument("--model-package-group", help="compare with this group's newest approved version")
    parser.add_argument("--region", help="the registry's AWS region (default: boto3's configuration)")
    parser.add_argument(
        "--mlflow-tracking-uri",
        help="log the step's MLflow run here (an http(s):// tracking server or a SageMaker MLflow ARN), nested "
        "under --mlflow-parent-run-id; off when either is empty",
    )
    parser.add_argument("--mlflow-parent-run-id", help="the execution's MLflow run (with --mlflow-tracking-uri)")
    exit_message.add_arguments(parser, "names this host in the exit message")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        settings = None
        if args.metric_threshold is not None:
            settings = GateSettings(
                args.metric_threshold,
                args.champion_tolerance,
                args.model_package_group,
                args.region,
                args.baseline_tolerance,
            )
        with stop_signals_raise():  # a stopped job removes its temporary files (the champion's model) like a failed one
            report = evaluate(
                args.predictions_dir,
                args.test_dir,
                args.output_dir,
                args.predictor_type,
                args.bootstrap_rounds,
                args.seed,
                args.loss,
                args.summary_dir,
                settings,
                args.train_dir,
                args.train_uri,
                args.region,
                args.max_exact_records,
                args.model_uri,
                args.rows_dir,
                args.defaults_model_uri,
            )
    except Stopped as stop:
        print(f"evaluate: {stop}", file=sys.stderr, flush=True)
        return stop.exit_code
    except InputError as error:
        return exit_message.report_input_error("evaluate", error, args)
    except Exception as error:
        exit_message.report_defect("evaluate", error, args)
        raise
    gate = report["gate"]
    print(
        f"evaluate: {report['dataset']['item_count']} records from {report['dataset']['file_count']} test shards; "
        f"gate {gate['metric']} = {gate['value']:.6g}; wrote {args.output_dir / REPORT_NAME}"
    )
    if SKLEARN_BASELINE in report:
        section = report[SKLEARN_BASELINE]
        baseline = section["gate"]
        print(
            f"evaluate: baseline ({section['model']}, {section['train_records']} train records) "
            f"{baseline['metric']} = {baseline['value']:.6g}; Linear Learner minus baseline "
            f"{baseline['challenger_minus_baseline']:+.4g}"
        )
    if RAW_BASELINE in report:
        section = report[RAW_BASELINE]
        raw = section["gate"]
        on = (
            "the same test records" if section["same_test_records"] else f"a sample of {section['test_rows']} test rows"
        )
        print(
            f"evaluate: baseline on the raw columns ({section['train_rows']} train rows, scored on {on}) "
            f"{raw['metric']} = {raw['value']:.6g}; Linear Learner minus it {raw['challenger_minus_baseline']:+.4g}"
        )
    if "tuning" in report:  # a tuned run: which of the tuned and the untuned defaults' models is kept
        tuning = report["tuning"]
        print(
            f"evaluate: tuned {tuning['metric']} = {tuning['tuned_value']:.6g}, untuned defaults' "
            f"{tuning['defaults_value']:.6g} on the same test records; kept the {tuning['kept']} model "
            f"({tuning['model_data_url']})"
        )
    if DECISION in report:
        decision = report[DECISION]
        print(f"evaluate: {'promote' if decision['promote'] else 'do not promote'}: {decision['reason']}")
        if decision.get("raw_columns_note"):
            print(f"evaluate: note: {decision['raw_columns_note']}")
    if args.mlflow_tracking_uri and args.mlflow_parent_run_id:
        from evaluation.mlflow_run import log_evaluation

        run = log_evaluation(args.mlflow_tracking_uri, args.mlflow_parent_run_id, report, args.output_dir)
        if run is not None:
            print(f"evaluate: MLflow run {run} (under {args.mlflow_parent_run_id})")
    return 0
