"""Upload the code bundles and create the pipeline on SageMaker, or update it (and its tags) if it exists."""

from __future__ import annotations

import argparse

from pipeline.cli.arguments import add_config_arguments, config_from_args


def configure(parser: argparse.ArgumentParser) -> None:
    """``--description`` plus the shared configuration flags."""
    parser.add_argument("--description", help="pipeline description shown in SageMaker Studio")
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Build the definition offline, then upload and upsert (``pipeline.api._shared``); one line each."""
    from pipeline.api._shared import upsert_pipeline

    config = config_from_args(args)
    result = upsert_pipeline(config, description=args.description)
    verb = "created" if result.created else "updated"
    print(f"uploaded {len(result.uploaded)} code objects to {config.pipeline_prefix}/code/")
    print(f"{verb} pipeline {result.pipeline_arn}")
    return 0
