"""What each stage serves: the endpoint, its status, the model version and the execution that trained it, since
when, and whether it passed its smoke test there (locally: the ``llpipe serve`` processes ``llpipe deploy`` started,
with their addresses; ``--sagemaker``: SageMaker's endpoints)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pipeline.api._shared import DEFAULT_WORKDIR
from pipeline.cli.arguments import add_config_arguments, config_from_args
from pipeline.cli.render import safe_console


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sagemaker", action="store_true", help="the stages' endpoints on SageMaker")
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR, help="the local work dir (.llpipe)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from pipeline.cli.render.deployment import ENDPOINTS_TABLE_MIN_WIDTH, endpoints_lines, endpoints_table, live_json
    from pipeline.core.deployment import STAGES

    config = config_from_args(args)
    if args.sagemaker:
        from pipeline.sagemaker.endpoints import SageMakerEndpoints

        target: Any = SageMakerEndpoints(config)
    else:
        from pipeline.api._shared import local_endpoints

        target = local_endpoints(args.workdir, config)
    rows = [(stage, target.endpoint_name(stage), target.live(stage)) for stage in STAGES]
    if args.json:
        print(json.dumps([live_json(live, stage, endpoint) for stage, endpoint, live in rows], indent=2))
        return 0

    console = safe_console()
    if console.width < ENDPOINTS_TABLE_MIN_WIDTH:
        for line in endpoints_lines(rows):
            console.print(line, markup=False, highlight=False)
        return 0
    console.print(endpoints_table(rows))
    return 0
