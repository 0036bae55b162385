"""Schedule executions of the pipeline with EventBridge Scheduler (one schedule named after the pipeline)."""

from __future__ import annotations

import argparse

from pipeline.config import add_config_arguments, config_from_args


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
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Upsert or delete the schedule; executions it starts use every parameter's default."""
    from pipeline.sagemaker_ops import delete_schedule, put_schedule, schedule_expression

    config = config_from_args(args)
    if args.delete:
        if delete_schedule(config):
            print(f"deleted schedule {config.pipeline_name}")
        else:
            print(f"no schedule named {config.pipeline_name}; nothing to delete")
        return 0
    expression = schedule_expression(cron=args.cron, rate=args.rate)
    arn = put_schedule(config, expression, role_arn=args.scheduler_role_arn, enabled=not args.disabled)
    print(f"scheduled {config.pipeline_name} {expression}: {arn}")
    return 0
