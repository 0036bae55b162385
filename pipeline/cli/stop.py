"""Stop a running execution on SageMaker (StopPipelineExecution); its running jobs are stopped too."""

from __future__ import annotations

import argparse

from pipeline.cli.arguments import (
    add_config_arguments,
    config_from_args,
    hint_local_execution,
    refuse_local_execution,
)


def configure(parser: argparse.ArgumentParser) -> None:
    """The execution and the shared configuration."""
    parser.add_argument("execution", metavar="ID|ARN", help="the execution to stop (id or full ARN)")
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Ask SageMaker to stop; the execution goes Stopping, then Stopped (see `llpipe execution show`)."""
    from pipeline.sagemaker.inspect import execution_arn
    from pipeline.sagemaker.start import stop

    refuse_local_execution(args.execution, "stop")
    config = config_from_args(args)
    with hint_local_execution(args.execution, "stop"):
        arn = stop(config, execution_arn(config, args.execution))
    print(f"stopping {arn}")
    return 0
