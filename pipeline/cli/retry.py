"""Retry a failed execution on SageMaker (RetryPipelineExecution): its failed steps run again, succeeded ones stay.

Exit codes with --wait are those of ``llpipe start --wait``: 0 succeeded, 1 a step failed, 3 the quality gate
failed, 4 stopped; 2 for bad arguments.
"""

from __future__ import annotations

import argparse

from pipeline.cli.arguments import (
    add_config_arguments,
    config_from_args,
    hint_local_execution,
    refuse_local_execution,
)


def configure(parser: argparse.ArgumentParser) -> None:
    """The execution, ``--max-parallel``, ``--wait``, shared configuration."""
    from pipeline.cli.arguments import add_max_parallel_argument

    parser.add_argument("execution", metavar="ID|ARN", help="the failed execution (id or full ARN)")
    add_max_parallel_argument(parser)
    parser.add_argument("--wait", action="store_true", help="watch the steps until the execution finishes")
    parser.add_argument("--poll-seconds", type=float, default=30.0, help="seconds between polls with --wait (30)")
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Retry; print the ARN; with --wait, the live step table, the compute used and the final status's exit code."""
    from pipeline.cli.start import wait_and_report
    from pipeline.sagemaker.inspect import execution_arn
    from pipeline.sagemaker.start import retry

    refuse_local_execution(args.execution, "retry")
    config = config_from_args(args)
    with hint_local_execution(args.execution, "retry"):
        arn = retry(config, execution_arn(config, args.execution), max_parallel=args.max_parallel)
    print(f"retrying {arn}")
    if not args.wait:
        return 0
    return wait_and_report(config, arn, args.poll_seconds)
