"""Run the whole pipeline on this machine by interpreting its SageMaker definition JSON.

With no data option it runs the bundled example (scikit-learn's breast cancer data set, 2 processing and 2 training
instances). With ``--data FILE_OR_DIR --label-column C --predictor-type T`` it runs on your own CSV/Parquet files.
Before the run the schema is inferred from the first rows of each file (feature order, text columns, label values;
``--no-infer`` turns it off); a value given with ``--param`` is never replaced.
Pipeline parameters are overridden with ``--param Name=Value`` (checked before anything runs). Everything lands in
the work dir (default ``.llpipe``): ``s3/`` (the local S3 folder), ``registry.db``, ``executions/<id>/``.
Exit code 0 only when the execution succeeded.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pipeline.api._shared import DEFAULT_WORKDIR
from pipeline.cli.render import safe_console
from pipeline.core.names import PREDICTOR_TYPES


def configure(parser: argparse.ArgumentParser) -> None:
    """The data, parameter, work dir and output options, plus the shared configuration flags."""
    from pipeline.cli.arguments import Once, add_config_arguments, add_inference_arguments

    data = parser.add_argument_group("data (default: the bundled breast cancer example)")
    data.add_argument(
        "--data", type=Path, action=Once, metavar="FILE_OR_DIR", help="CSV or Parquet file, or a folder of them"
    )
    data.add_argument("--label-column", action=Once, metavar="C", help="the label column of --data")
    data.add_argument("--predictor-type", action=Once, choices=PREDICTOR_TYPES, help="what to train on --data")
    parser.add_argument(
        "--param", action="append", default=[], metavar="Name=Value", help="pipeline parameter override (repeat)"
    )
    add_inference_arguments(parser)
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR, help="where everything lands (.llpipe)")
    parser.add_argument("--no-cache", action="store_true", help="run every step even if a cached run matches")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--quiet", action="store_true", help="no live table and no summary; only errors")
    output.add_argument("--json", action="store_true", help="print one JSON object with the outcome at the end")
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Execute the pipeline locally; 0 when the execution succeeded, 1 when it failed, 2 on a usage error."""

    from pipeline.api._shared import execute_local, local_source, open_workdir
    from pipeline.cli.arguments import config_from_args, parse_overrides
    from pipeline.cli.render.summary import print_summary, summarise
    from pipeline.cli.schema_inference import print_inferred
    from pipeline.core.errors import DataError

    if args.data is None and (args.label_column or args.predictor_type):
        raise DataError("--label-column and --predictor-type describe --data; pass --data FILE_OR_DIR too")
    if args.data is not None and not (args.label_column and args.predictor_type):
        # deliberate: the parameters' defaults (label, binary_classifier) describe the example data, not yours; a
        # silent binary_classifier would train a classifier on regression labels that happen to be 0/1
        missing = [
            flag
            for flag, given in (("--label-column C", args.label_column), ("--predictor-type T", args.predictor_type))
            if not given
        ]
        raise DataError(
            f"--data needs {' and '.join(missing)}: they describe your data, so --data takes no default for them"
            f" (T is one of {', '.join(PREDICTOR_TYPES)}; the PredictorType default binary_classifier is the example"
            " data's, and would train a classifier on regression labels that happen to be 0/1)"
        )
    overrides = parse_overrides(args.param)
    config = config_from_args(args)
    workdir = open_workdir(args.workdir)
    source = local_source(args.data, args.label_column, args.predictor_type, workdir)

    def show_inferred(inferred: Any, local_path: Path) -> None:
        if not args.quiet:
            print_inferred(inferred, sys.stderr if args.json else sys.stdout, local_path)

    options = {
        "use_cache": not args.no_cache,
        "infer": not args.no_infer,
        "sample_rows": args.sample_rows,
        "on_inferred": show_inferred,
        "on_warning": lambda text: print(f"Warning: {text}", file=sys.stderr),
    }
    if args.quiet or args.json:
        execution = execute_local(config, workdir, source, overrides, **options)
    else:
        from pipeline.cli.render.progress import LiveSteps

        with LiveSteps(safe_console(stderr=False)) as live:
            execution = execute_local(config, workdir, source, overrides, on_change=live.update, **options)
    summary = summarise(execution)
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
    elif not args.quiet:
        print_summary(summary, safe_console(highlight=False))
    elif not execution.succeeded:
        print(f"llpipe run: execution {execution.id} failed: {execution.failure_reason}", file=sys.stderr)
    return 0 if execution.succeeded else 1
