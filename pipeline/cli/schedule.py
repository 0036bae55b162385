"""Schedule executions of the pipeline with EventBridge Scheduler (one schedule named after the pipeline)."""

from __future__ import annotations

import argparse
import sys

from pipeline.config import add_config_arguments, config_from_args
from pipeline.inference import add_inference_arguments


def configure(parser: argparse.ArgumentParser) -> None:
    """Exactly one of --cron, --rate, --delete; the role EventBridge Scheduler assumes; shared configuration."""
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--cron", metavar="EXPR", help="EventBridge cron, 6 fields, e.g. '0 3 * * ? *' (03:00 UTC)")
    what.add_argument("--rate", metavar="EXPR", help="e.g. '1 day', '12 hours'")
    what.add_argument("--delete", action="store_true", help="delete the schedule")
    parser.add_argument(
        "--scheduler-role-arn",
        metavar="ARN",
        help="role EventBridge Scheduler assumes to start executions (default: the pipeline role)",
    )
    parser.add_argument("--disabled", action="store_true", help="create or update the schedule disabled")
    parser.add_argument(
        "--param", action="append", default=[], metavar="NAME=VALUE", help="parameter every execution gets (repeat)"
    )
    add_inference_arguments(parser, s3=True)
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Upsert or delete the schedule; its executions get the given and inferred parameters, defaults for the rest."""
    from pipeline.inference import infer_s3, print_inferred
    from pipeline.parameters import check_overrides, parse_overrides
    from pipeline.sagemaker_ops import (
        aws_call,
        aws_session,
        delete_schedule,
        deployed_parameters,
        put_object,
        put_schedule,
        schedule_expression,
    )

    config = config_from_args(args)
    if args.delete:
        if delete_schedule(config):
            print(f"deleted schedule {config.pipeline_name}")
        else:
            print(f"no schedule named {config.pipeline_name}; nothing to delete")
        return 0
    expression = schedule_expression(cron=args.cron, rate=args.rate)
    session = aws_session(config)
    given = parse_overrides(args.param)
    declared = deployed_parameters(config, session) if given or not args.no_infer else {}
    check_overrides(list(declared.values()), given)
    with aws_call(f"sampling the input of {config.pipeline_name}"):
        inferred = infer_s3(config.pipeline_prefix, declared, given, session, args)
    if inferred is not None:
        print_inferred(inferred, sys.stdout)
        put_object(config, inferred.uri, inferred.body, session)
    arn = put_schedule(
        config,
        expression,
        role_arn=args.scheduler_role_arn,
        session=session,
        enabled=not args.disabled,
        parameters={**given, **(inferred.parameters if inferred else {})},
    )
    print(f"scheduled {config.pipeline_name} {expression}: {arn}")
    return 0
