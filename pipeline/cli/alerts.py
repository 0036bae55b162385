"""Alert an SNS topic when an execution of the pipeline fails (an EventBridge rule on its status changes).

The topic's access policy must let EventBridge publish: a statement allowing ``sns:Publish`` to the principal
``events.amazonaws.com`` (see the README).
"""

from __future__ import annotations

import argparse

from pipeline.cli.arguments import add_config_arguments, config_from_args


def configure(parser: argparse.ArgumentParser) -> None:
    """Exactly one of --sns-topic ARN or --delete, plus the shared configuration."""
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--sns-topic", metavar="ARN", help="SNS topic to notify of failed executions")
    what.add_argument("--delete", action="store_true", help="delete the alert rule")
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Create or update the rule and its target, or delete them."""
    from pipeline.core.errors import UsageError
    from pipeline.sagemaker.alerts import alert_rule_name, delete_failure_alert, put_failure_alert

    config = config_from_args(args)
    if args.delete:
        deleted = delete_failure_alert(config)
        print(f"deleted rule {alert_rule_name(config)}" if deleted else "no alert rule; nothing to delete")
        return 0
    topic = args.sns_topic
    if not (topic.startswith("arn:") and topic.split(":")[2:3] == ["sns"]):
        raise UsageError(f"--sns-topic {topic!r}: expected an SNS topic ARN (arn:aws:sns:REGION:ACCOUNT:NAME)")
    rule_arn = put_failure_alert(config, topic)
    print(f"failed executions of {config.pipeline_name} now notify {topic}")
    print(f"rule {rule_arn}")
    return 0
