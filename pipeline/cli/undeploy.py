"""Remove a stage's endpoint: locally, stop its ``llpipe serve`` process; on SageMaker (``--sagemaker``), the endpoint
and what ``llpipe deploy`` created for it: its endpoint configs and models (named
``<endpoint>-v<version>-<hash>``) and its two rollback alarms. A data-quality monitoring schedule on the endpoint
(``llpipe monitor --schedule``) must be deleted first."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pipeline.api._shared import DEFAULT_WORKDIR
from pipeline.cli.arguments import add_config_arguments, config_from_args
from pipeline.core.deployment import STAGES


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stage", required=True, choices=STAGES, help="which endpoint")
    parser.add_argument("--sagemaker", action="store_true", help="on SageMaker")
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR, help="the local work dir (.llpipe)")
    parser.add_argument("--poll-seconds", type=float, default=15.0, metavar="S", help="DescribeEndpoint interval")
    parser.add_argument("--json", action="store_true", help="print what was removed as JSON")
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from pipeline.cli.render.deployment import progress_printer

    config = config_from_args(args)
    if not args.sagemaker:
        return _undeploy_local(args, config)
    from pipeline.sagemaker.endpoints import SageMakerEndpoints

    removed = SageMakerEndpoints(config, poll_seconds=args.poll_seconds).undeploy(
        args.stage, progress_printer(to_stderr=args.json)
    )
    if args.json:
        print(json.dumps(removed.__dict__, indent=2))
        return 0
    state = "deleted" if removed.endpoint_deleted else "no endpoint named"
    print(f"{args.stage}: {state} {removed.endpoint}")
    for kind, names in (("endpoint configs", removed.endpoint_configs), ("models", removed.models)):
        print(f"  {kind}: {', '.join(names) if names else 'none'}")
    print(f"  alarms: {', '.join(removed.alarms) if removed.alarms else 'none'}")
    return 0


def _undeploy_local(args: argparse.Namespace, config: Any) -> int:
    """Stop the stage's ``llpipe serve`` process (SIGTERM, by its recorded pid) and forget the stage."""
    from pipeline.api._shared import local_endpoints
    from pipeline.cli.render.deployment import progress_printer

    target = local_endpoints(args.workdir, config)
    with target.changing(args.stage):
        state = target.undeploy(args.stage, progress_printer(to_stderr=args.json))
    if args.json:
        endpoint = target.endpoint_name(args.stage)
        print(json.dumps({"stage": args.stage, "endpoint": endpoint, "stopped": state is not None}))
        return 0
    if state is None:
        print(f"{args.stage}: no local endpoint ({target.endpoint_name(args.stage)} was not deployed)")
    else:
        print(f"{args.stage}: stopped {state.endpoint} (version {state.version}, {state.handle})")
    return 0
