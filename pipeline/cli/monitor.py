"""Check an endpoint's served traffic for data-quality drift against the served model's registered baseline.

Locally: the capture files of ``--endpoint`` (SageMaker's layout, under ``<bucket>/<pipeline>/datacapture/<endpoint>/
<variant>/yyyy/mm/dd/hh/`` in the work dir's local S3, as ``llpipe serve`` writes them) of the window ``--start`` to
``--end`` (UTC; default: the past hour) are checked by Model Monitor's analyzer (its local stand-in), each request
against the ``DriftCheckBaselines`` of the version that served it (the capture's ``eventMetadata.modelPackageArn``;
one job per version) or all against ``--model-package``'s, and
``statistics.json``, ``constraints.json`` and ``constraint_violations.json`` are written under
``<bucket>/<pipeline>/monitoring/<endpoint>/<variant>/yyyy/mm/dd/hh/<start>-<end>/`` (a folder per window); the command
prints the violations, draws a plot per drifted feature and exits 1 when there are any. A capture that kept a share of
the requests is said to be a sample, with its percentage; a version whose requests hold no raw rows (the deploy's
smoke test) is skipped with a note.

With ``--schedule`` (SageMaker): create the endpoint's data-quality monitoring schedule (or point the existing one at
the model package's baseline): CreateDataQualityJobDefinition and CreateMonitoringSchedule, hourly by default.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.api._shared import DEFAULT_WORKDIR
from pipeline.cli.render import safe_console

if TYPE_CHECKING:
    from pipeline.definition.config import PipelineConfig


def configure(parser: argparse.ArgumentParser) -> None:
    from pipeline.cli.arguments import add_config_arguments

    parser.add_argument("--endpoint", required=True, help="the endpoint whose captured traffic is checked")
    parser.add_argument("--variant", default="AllTraffic", help="its production variant (default: %(default)s)")
    parser.add_argument("--start", metavar="TIME", help="window start, ISO 8601 UTC (default: an hour before --end)")
    parser.add_argument("--end", metavar="TIME", help="window end (excluded), ISO 8601 UTC (default: now)")
    parser.add_argument(
        "--model-package",
        metavar="VERSION|ARN",
        help="check every request against this version's baseline (a version of the group, an ARN or latest-approved); "
        "default: each against the version that served it",
    )
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR, help="the local work dir (.llpipe)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--schedule",
        action="store_true",
        help="on SageMaker: create or update the endpoint's data-quality monitoring schedule with the baseline",
    )
    parser.add_argument("--cron", metavar="EXPR", help="with --schedule (default hourly: cron(0 * ? * * *))")
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from pipeline.cli.arguments import config_from_args
    from pipeline.core.errors import UsageError

    config = config_from_args(args)
    if args.schedule:
        if args.start or args.end:
            raise UsageError("--schedule takes no --start or --end: the schedule analyses each past hour")
        return _schedule(args, config)
    if args.cron:
        raise UsageError("--cron goes with --schedule")

    from pipeline.api.monitoring import monitor_local
    from pipeline.cli.render.data_quality import print_data_quality

    report = monitor_local(
        args.endpoint,
        start=args.start,
        end=args.end,
        variant=args.variant,
        model_package=args.model_package,
        workdir=args.workdir,
        config=config,
    )
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
        return 1 if report.violations else 0
    console = safe_console()
    console.print(
        f"[bold]Endpoint {report.endpoint}[/bold] ({report.variant}), {report.start:%Y-%m-%d %H:%M:%S} to "
        f"{report.end:%Y-%m-%d %H:%M:%S} UTC: {len(report.parts)} model package version(s) served it",
        soft_wrap=True,
    )
    for note in report.notes:
        console.print(f"Skipped: {note}", soft_wrap=True, markup=False)
    for part in report.parts:
        served = "all requests" if part.requests is None else f"{part.requests} request(s)"
        console.print(f"\n[bold]{served} against the baseline of {part.model_package_arn}[/bold]", soft_wrap=True)
        if part.note:
            console.print(f"Sampled: {part.note}", soft_wrap=True, markup=False)
        print_data_quality(part.view, console)
        if part.unseen_categories:
            shown = ", ".join(f"{column} {count}" for column, count in part.unseen_categories.items())
            console.print(
                f"[yellow]rows answered with a value never seen in training (scored as column=(other)): {shown}"
                "[/yellow]",
                soft_wrap=True,
            )
        if part.view.get("violation_report"):
            console.print(f"Report: {part.view['violation_report']}", soft_wrap=True)
        for plot in part.plots:
            console.print(f"Plot: {plot}", soft_wrap=True)
        console.print(f"Record: {part.record}", soft_wrap=True)
    return 1 if report.violations else 0


def _schedule(args: argparse.Namespace, config: PipelineConfig) -> int:
    from pipeline.sagemaker.monitoring import HOURLY, schedule_data_quality

    made = schedule_data_quality(config, args.endpoint, args.model_package, args.cron or HOURLY)
    if args.json:
        print(json.dumps(made.__dict__, indent=2))
        return 0
    verb = "created" if made.created else "updated"
    print(f"{verb} monitoring schedule {made.schedule_name} ({made.cron}): {made.schedule_arn}")
    print(f"  job definition {made.job_definition_name}: {made.job_definition_arn}")
    print(f"  baseline of {made.model_package_arn}:\n    {made.statistics}\n    {made.constraints}")
    return 0
