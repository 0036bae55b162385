"""What each stage serves: the endpoint, its status, the model version and the execution that trained it, since
when, and whether it passed its smoke test there (``--sagemaker``: SageMaker's endpoints)."""

from __future__ import annotations

import argparse
import json

from pipeline.cli.arguments import add_config_arguments, config_from_args


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sagemaker", action="store_true", help="the stages' endpoints on SageMaker")
    parser.add_argument("--json", action="store_true", help="print JSON")
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from pipeline.cli.deploy import LOCAL_PENDING
    from pipeline.cli.render.deployment import endpoints_table, live_json
    from pipeline.core.deployment import STAGES
    from pipeline.core.errors import UsageError

    config = config_from_args(args)
    if not args.sagemaker:
        raise UsageError(LOCAL_PENDING)
    from pipeline.sagemaker.endpoints import SageMakerEndpoints

    target = SageMakerEndpoints(config)
    rows = [(stage, target.endpoint_name(stage), target.live(stage)) for stage in STAGES]
    if args.json:
        print(json.dumps([live_json(live, stage, endpoint) for stage, endpoint, live in rows], indent=2))
        return 0
    from rich.console import Console

    Console().print(endpoints_table(rows))
    return 0
