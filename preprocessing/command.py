"""Preprocess's command line: the arguments, parsed once into :class:`~preprocessing.settings.Settings`, and the
exit status (a bad input is one line on stderr and in SageMaker's exit-message file, status 1)."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import preprocessing
from containerlib import exit_message
from containerlib.errors import InputError
from containerlib.names import PREDICTOR_TYPES
from containerlib.stop_signals import Stopped, stop_signals_checked
from preprocessing.baseline import DEFAULT_BASELINE_ROWS
from preprocessing.job import preprocess
from preprocessing.raw_rows import DEFAULT_RAW_ROWS
from preprocessing.settings import MISSING_POLICIES, Settings, split_list


def parse_feature_dim(text: str) -> int | None:
    if text.strip().lower() == "auto":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'auto', got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"feature dim must be positive, got {value}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or a positive integer, got {text}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The job's arguments; paths default to SageMaker's container layout."""
    parser = argparse.ArgumentParser(prog="preprocess.py", description=(preprocessing.__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--input-dir",
        type=Path,
        default=Path("/opt/ml/processing/input/data"),
        help="folder of CSV/Parquet input files (default: %(default)s)",
    )
    parser.add_argument(
        "--input-source",
        metavar="URI",
        help="where --input-dir's files came from, e.g. the input's S3 prefix: messages name files by it "
        "(s3://bucket/in/d.csv row 7), not by their path here",
    )
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=Path("/opt/ml/processing/output"),
        help="root of the train/, validation/, test/ and summary/ sub-folders (default: %(default)s)",
    )
    parser.add_argument(
        "--mlflow-tracking-uri",
        default="",
        help="log this host's MLflow run here (an http(s):// tracking server or a SageMaker MLflow ARN), nested "
        "under --mlflow-parent-run-id; off when either is empty",
    )
    parser.add_argument("--mlflow-parent-run-id", default="", help="the execution's MLflow run")
    exit_message.add_arguments(parser, "absent means a single host algo-1")
    parser.add_argument(
        "--schema",
        type=Path,
        help="the schema the client decided: a JSON file or a folder holding one (arguments given win over it)",
    )
    parser.add_argument("--label-column", required=True, help="name of the label column")
    parser.add_argument("--predictor-type", required=True, choices=PREDICTOR_TYPES, help="Linear Learner's")
    parser.add_argument("--feature-columns", help="comma-separated feature columns (default: all but label and id)")
    parser.add_argument("--id-column", help="split by a hash of this column instead of the row content; not a feature")
    parser.add_argument(
        "--categorical-columns", help="comma-separated text feature columns (one-hot or hashed, as the schema decided)"
    )
    parser.add_argument(
        "--hash-buckets",
        type=_non_negative_int,
        default=0,
        help="0: each categorical column encoded as the schema decided (one-hot or hashed; 16 buckets without a "
        "decision); N: every categorical column feature-hashed into N buckets (default: %(default)s)",
    )
    parser.add_argument("--label-values", help="comma-separated label values mapped to 0, 1, ... in this order")
    parser.add_argument("--num-classes", type=int, help="multiclass: labels must be below this")
    parser.add_argument(
        "--data-version",
        default="",
        help="the pipeline's DataVersion: recorded in the summary; on SageMaker it makes new data a new cache key",
    )
    parser.add_argument(
        "--feature-dim",
        type=parse_feature_dim,
        default="auto",
        metavar="N|auto",
        help="fail unless the data has exactly N features (default: auto, any)",
    )
    parser.add_argument(
        "--train-shards",
        type=_positive_int,
        default=1,
        help="minimum number of train files overall; each host writes ceil(N / hosts) (default: %(default)s)",
    )
    parser.add_argument(
        "--validation-shards",
        type=_positive_int,
        default=1,
        help="minimum number of validation files overall, so that each training instance gets its share; each host "
        "writes ceil(N / hosts) (default: %(default)s)",
    )
    parser.add_argument("--validation-fraction", type=float, default=0.15, help="(default: %(default)s)")
    parser.add_argument("--test-fraction", type=float, default=0.15, help="(default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the split hash and the shuffles (default: 0)")
    parser.add_argument(
        "--missing",
        choices=MISSING_POLICIES,
        default="error",
        help="empty/NaN/inf values: impute (the schema's medians, a (missing) feature; rows without a label dropped), "
        "fail, zero (features only), or drop the row (default: %(default)s)",
    )
    parser.add_argument(
        "--chunk-rows", type=_positive_int, default=100_000, help="rows read at a time (default: %(default)s)"
    )
    parser.add_argument(
        "--shuffle-memory-mb",
        type=float,
        default=512.0,
        help="rows of a shard's on-disk bucket, counted as 4 bytes a number: a larger shard is dealt to buckets "
        "before each is shuffled; the shuffle's own memory is about 6 bytes a row of a bucket, the rows stay on disk "
        "(default: 512)",
    )
    parser.add_argument(
        "--baseline-rows",
        type=int,
        default=DEFAULT_BASELINE_ROWS,
        help="raw feature rows sampled (over all hosts) into baseline/ for the data-quality check; 0: none "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--raw-rows",
        type=int,
        default=DEFAULT_RAW_ROWS,
        help="raw rows of each of the train and test splits sampled (over all hosts) into rows/ for Evaluate's "
        "raw-column baseline; 0: none (default: %(default)s)",
    )
    return parser


def settings_from(args: argparse.Namespace) -> Settings:
    """The parsed arguments as the job's settings (comma-separated lists split, empty optional values as absent)."""
    return Settings(
        label_column=args.label_column,
        predictor_type=args.predictor_type,
        input_dir=args.input_dir,
        input_source=args.input_source,
        output_dir=args.output_dir,
        resource_config=args.resource_config,
        exit_message_file=args.exit_message_file,
        schema=args.schema,
        feature_columns=split_list(args.feature_columns),
        id_column=args.id_column or None,
        categorical_columns=split_list(args.categorical_columns),
        hash_buckets=args.hash_buckets,
        label_values=split_list(args.label_values),
        num_classes=args.num_classes,
        data_version=args.data_version,
        feature_dim=args.feature_dim,
        train_shards=args.train_shards,
        validation_shards=args.validation_shards,
        validation_fraction=args.validation_fraction,
        test_fraction=args.test_fraction,
        seed=args.seed,
        missing=args.missing,
        chunk_rows=args.chunk_rows,
        shuffle_memory_mb=args.shuffle_memory_mb,
        baseline_rows=args.baseline_rows,
        raw_rows=args.raw_rows,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        # a stopped job removes what it had written, like a failed one; raised where the job checks, as it has threads
        with stop_signals_checked() as stop:
            summary = preprocess(settings_from(args), stop.check)
    except Stopped as stop:
        print(f"preprocess: {stop}", file=sys.stderr, flush=True)
        return stop.exit_code
    except KeyboardInterrupt:
        print("preprocess: interrupted (SIGINT)", file=sys.stderr, flush=True)
        return 128 + signal.SIGINT
    except InputError as error:
        return exit_message.report_input_error("preprocess", error, args)
    except Exception as error:
        exit_message.report_defect("preprocess", error, args)
        raise
    if args.mlflow_tracking_uri and args.mlflow_parent_run_id:
        from preprocessing.mlflow_run import log_preprocess

        run = log_preprocess(args.mlflow_tracking_uri, args.mlflow_parent_run_id, summary)
        if run is not None:
            print(f"preprocess: MLflow run {run} (under {args.mlflow_parent_run_id})", flush=True)
    return 0
