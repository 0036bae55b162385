"""Deploy an approved model version to a stage's endpoint, smoke-test it, and record that it passed.

``--stage staging`` takes the version asked for (``--model-package``: an ARN, a version number of the group, or
latest-approved, the default); ``--stage prod`` takes exactly the version staging serves and that passed staging's
smoke test (another one is refused). Re-deploying the live version is a no-op. The flow: the smoke test's rows (the
version's execution's test split and its batch-transform answers) are read first; on staging a live version answers
the same rows and a worse candidate is refused before anything changes; then the endpoint is created or updated
(blue/green, rolled back automatically by the service when its 5xx or latency alarm fires), the new endpoint answers
the rows and must answer what batch transform answered, and the pass is recorded; a failed smoke test puts the
previous version back. Exit 0 when the stage serves the version, 1 otherwise (refused, rolled back, failed).

With ``--sagemaker`` on SageMaker (``llpipe endpoints --sagemaker`` shows the stages). Locally each stage is an
``llpipe serve`` process of the work dir's registry on its own port (``--port``; staging 8081, prod 8080), started
in the background and left serving; a roll-out replaces it on the same port, and a new server that does not come up
is replaced by the previous version again (``llpipe endpoints`` shows them, ``llpipe undeploy`` stops one).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipeline.api._shared import DEFAULT_WORKDIR
from pipeline.cli.arguments import add_config_arguments, config_from_args, port_number, positive_int
from pipeline.core.deployment import DEFAULT_QUALITY_TOLERANCE, DEFAULT_SMOKE_ROWS, STAGES


def _seconds(text: str) -> int:
    value = int(text) if text.isdigit() else -1
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"expected 0 to 3600 seconds, got {text!r}")
    return value


def _tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected 0 to 1, got {value}")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--stage", required=True, choices=STAGES, help="which endpoint")
    parser.add_argument(
        "--model-package",
        metavar="ARN|VERSION|latest-approved",
        help="staging: the version (default latest-approved); prod: must be the version that passed staging",
    )
    parser.add_argument("--sagemaker", action="store_true", help="deploy on SageMaker (boto3)")
    local = parser.add_argument_group("local endpoints (without --sagemaker)")
    local.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR, help="the local work dir (.llpipe)")
    local.add_argument(
        "--port",
        type=port_number,
        metavar="N",
        help="the stage's port for its first deployment (staging 8081, prod 8080)",
    )
    parser.add_argument(
        "--if-newer",
        action="store_true",
        help="skip (exit 0) a version older than the one the stage serves (what an approval event's build passes)",
    )
    parser.add_argument(
        "--allow-new-columns",
        action="store_true",
        help="deploy a version whose request columns differ from the live version's (added, removed or reordered: "
        "refused by default, as clients sending the live version's rows would fail)",
    )
    parser.add_argument(
        "--smoke-rows", type=positive_int, default=DEFAULT_SMOKE_ROWS, metavar="N", help="test rows sent (%(default)s)"
    )
    parser.add_argument(
        "--quality-tolerance",
        type=_tolerance,
        default=DEFAULT_QUALITY_TOLERANCE,
        metavar="X",
        help="staging: how far the candidate's metric may be below the live version's on the rows (%(default)s)",
    )
    rollout = parser.add_argument_group("roll-out (SageMaker blue/green)")
    rollout.add_argument("--traffic", choices=("all-at-once", "canary"), default="all-at-once", help="traffic shift")
    rollout.add_argument("--canary-percent", type=int, default=10, metavar="P", help="canary: capacity share first")
    rollout.add_argument("--canary-wait", type=_seconds, default=300, metavar="S", help="canary: seconds before all")
    rollout.add_argument(
        "--bake", type=_seconds, default=300, metavar="S", help="seconds the old fleet stays, alarms watching (300)"
    )
    rollout.add_argument("--poll-seconds", type=positive_int, default=30, metavar="S", help="DescribeEndpoint interval")
    rollout.add_argument(
        "--instance-type", metavar="TYPE", help="the stage's instance type (config: <stage>_instance_type)"
    )
    rollout.add_argument("--instance-count", type=positive_int, metavar="N", help="the stage's instance count")
    rollout.add_argument(
        "--data-capture-percentage", type=int, metavar="P", help="share of requests captured, 0 to 100 (default 20)"
    )
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON (progress on stderr)")
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    import dataclasses

    from pipeline.api._shared import deploy_version
    from pipeline.cli.render.deployment import outcome_json, print_outcome, progress_printer
    from pipeline.core.errors import UsageError

    config = config_from_args(args)
    stage_settings = {
        f"{args.stage}_instance_type": args.instance_type,
        f"{args.stage}_instance_count": args.instance_count,
        "data_capture_percentage": args.data_capture_percentage,
    }
    config = dataclasses.replace(config, **{key: value for key, value in stage_settings.items() if value is not None})
    traffic = None
    if args.sagemaker:
        from pipeline.sagemaker.endpoint_requests import Traffic

        try:
            traffic = Traffic(args.traffic, args.canary_percent, args.canary_wait, args.bake)
        except ValueError as error:
            raise UsageError(str(error)) from None
    try:
        outcome = deploy_version(
            config,
            args.stage,
            args.model_package,
            sagemaker=args.sagemaker,
            workdir=args.workdir,
            port=args.port,
            smoke_rows=args.smoke_rows,
            quality_tolerance=args.quality_tolerance,
            progress=progress_printer(to_stderr=args.json),
            if_newer=args.if_newer,
            allow_new_columns=args.allow_new_columns,
            traffic=traffic,
            poll_seconds=args.poll_seconds,
        )
    except KeyboardInterrupt:
        if args.sagemaker:
            print(
                "llpipe deploy: stopped waiting; a change the endpoint had started carries on at the service "
                "(llpipe endpoints --sagemaker shows where it is)",
                file=sys.stderr,
            )
        raise
    if args.json:
        print(json.dumps(outcome_json(outcome), indent=2))
    else:
        print_outcome(outcome)
    return outcome.exit_code
