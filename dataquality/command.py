"""The analyzer's command line: settings from the environment (as the Model Monitor image takes them), the exit
status (bad input: one line on stderr and in SageMaker's exit-message file, status 1)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping

import dataquality
from containerlib import exit_message
from containerlib.errors import InputError
from dataquality.job import analyze
from dataquality.settings import Settings


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(dataquality.__doc__ or "").splitlines()[0])
    exit_message.add_arguments(parser, "names this host in the exit message")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None, environ: Mapping[str, str] = os.environ) -> int:
    args = parse_args(argv)
    try:
        settings = Settings.from_environment(environ)
        outcome = analyze(settings)
    except InputError as error:
        return exit_message.report_input_error("analyze", error, args)
    except Exception as error:
        exit_message.report_defect("analyze", error, args)
        raise
    features = outcome.statistics["features"]
    print(
        f"analyze: {outcome.statistics['dataset']['item_count']} records, {len(features)} features; wrote "
        f"statistics and constraints to {settings.output_path}"
    )
    if outcome.violations is not None:
        print(f"analyze: {len(outcome.violations)} constraint violation(s) against the baseline")
        for item in outcome.violations:
            print(f"analyze: {item['constraint_check_type']} on {item['feature_name']}: {item['description']}")
    if settings.publish_cloudwatch_metrics:
        print("analyze: publish_cloudwatch_metrics is Enabled: the local analyzer publishes no CloudWatch metrics")
    return 0
