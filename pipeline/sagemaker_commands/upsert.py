"""Upload the code bundles and create the pipeline on SageMaker, or update it (and its tags) if it exists."""

from __future__ import annotations

import argparse
import sys

from pipeline.config import ConfigError, add_config_arguments, config_from_args


def configure(parser: argparse.ArgumentParser) -> None:
    """``--description`` plus the shared configuration flags."""
    parser.add_argument("--description", help="pipeline description shown in SageMaker Studio")
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Build the definition offline, then upload and upsert; one line per outcome."""
    from pipeline.definition import build_definition
    from pipeline.sagemaker_ops import AwsError, upsert

    try:
        config = config_from_args(args)
        built = build_definition(config)
        result = upsert(config, built, description=args.description)
    except ConfigError as error:
        print(f"llpipe upsert: {error}", file=sys.stderr)
        return 2
    except (AwsError, FileNotFoundError) as error:
        print(f"llpipe upsert: {error}", file=sys.stderr)
        return 1
    verb = "created" if result.created else "updated"
    print(f"uploaded {len(result.uploaded)} code objects to {config.pipeline_prefix}/code/")
    print(f"{verb} pipeline {result.pipeline_arn}")
    return 0
