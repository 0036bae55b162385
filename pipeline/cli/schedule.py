"""Schedule executions of the pipeline with EventBridge Scheduler (one schedule named after the pipeline).

Each scheduled execution gets DataVersion = its scheduled time, so it re-runs Preprocess and everything after it
on the data under InputDataUrl at that time instead of reusing the previous execution's cached results. Unless
``--no-infer``, the schema is inferred once now from the input (as ``llpipe start`` does), uploaded, and its
SchemaUrl and short decisions become fixed parameters of every scheduled execution; so do the instance counts and
volumes the input's listing needs now (``pipeline.core.sizing``).
"""

from __future__ import annotations

import argparse
import json
import sys

from pipeline.cli.arguments import add_config_arguments, add_inference_arguments, config_from_args, parse_overrides
from pipeline.definition.config import PipelineConfig


def configure(parser: argparse.ArgumentParser) -> None:
    """Exactly one of --cron, --rate, --delete; fixed ``--param`` overrides; the scheduler role; --dry-run."""
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--cron", metavar="EXPR", help="EventBridge cron, 6 fields, e.g. '0 3 * * ? *' (03:00 UTC)")
    what.add_argument("--rate", metavar="EXPR", help="e.g. '1 day', '12 hours'")
    what.add_argument("--delete", action="store_true", help="delete the schedule")
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="pipeline parameter every scheduled execution gets (repeat); DataVersion is the scheduled time",
    )
    parser.add_argument(
        "--scheduler-role-arn",
        metavar="ARN",
        help="role EventBridge Scheduler assumes to start executions (default: the pipeline role)",
    )
    parser.add_argument("--disabled", action="store_true", help="create or update the schedule disabled")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the CreateSchedule request as JSON; reads only the input sample (none with --no-infer)",
    )
    add_inference_arguments(parser, s3=True)
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Upsert or delete the schedule, or print the request with --dry-run."""
    from pipeline.cli.schema_inference import infer_for_execution
    from pipeline.core.errors import UsageError
    from pipeline.sagemaker import aws
    from pipeline.sagemaker.deploy import put_object
    from pipeline.sagemaker.schedule import delete_schedule, put_schedule, schedule_expression, sized_for_schedule
    from pipeline.sagemaker.start import check_schema_url, deployed_parameters

    config = config_from_args(args)
    if args.delete:
        if args.dry_run or args.param:
            raise UsageError("--delete takes neither --param nor --dry-run")
        if delete_schedule(config):
            print(f"deleted schedule {config.pipeline_name}")
        else:
            print(f"no schedule named {config.pipeline_name}; nothing to delete")
        return 0
    expression = schedule_expression(cron=args.cron, rate=args.rate)
    given = parse_overrides(args.param)
    session = declared = inferred = None
    if not args.no_infer:  # the deployed parameters are read once, for the inference and the schedule
        session = aws.session(config)
        declared = deployed_parameters(config, session)
        inferred = infer_for_execution(
            config, given, session, args, sys.stderr if args.dry_run else sys.stdout, declared
        )
    overrides = {**given, **(inferred.parameters if inferred else {})}
    if session is not None and declared is not None and inferred is None:  # a SchemaUrl the user gave, read now
        check_schema_url(session, declared, given)
    if session is not None and declared is not None:  # sized from the listing now, like start: fixed in the schedule
        overrides.update(sized_for_schedule(config, declared, overrides, session))
    if args.dry_run:
        print(dry_run(config, expression, overrides, args.scheduler_role_arn, not args.disabled))
        note = "dry run: nothing uploaded or scheduled (the JSON fits aws scheduler create-schedule --cli-input-json)"
        print(note, file=sys.stderr)
        return 0
    if inferred is not None:
        put_object(config, inferred.uri, inferred.body, session)
    arn = put_schedule(
        config,
        expression,
        overrides,
        role_arn=args.scheduler_role_arn,
        session=session,
        enabled=not args.disabled,
        declared=declared,
    )
    print(f"scheduled {config.pipeline_name} {expression}: {arn}")
    return 0


def dry_run(
    config: PipelineConfig, expression: str, overrides: dict[str, str], role_arn: str | None, enabled: bool
) -> str:
    """The request as indented JSON, overrides checked against the definition ``llpipe upsert`` would deploy."""
    from pipeline.definition.build import build_definition
    from pipeline.definition.service_limits import check_definition
    from pipeline.sagemaker.schedule import schedule_request

    definition = json.loads(build_definition(config).definition_json)
    check_definition(definition, overrides)  # the overrides' types, and what the service would refuse
    request = schedule_request(config, expression, overrides, role_arn=role_arn, enabled=enabled)
    return json.dumps(request, indent=2, default=lambda value: value.isoformat())
