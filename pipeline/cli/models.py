"""List, describe, approve or reject registered model versions.

Works on the local registry (<workdir>/registry.db, written by llpipe run) or, with --sagemaker, on the
SageMaker Model Registry. A version is named by its number in the group (--group, default from the
configuration), "latest", <group>/<version> or its ARN. Examples:

    llpipe models list
    llpipe models describe latest --json
    llpipe models approve 3 --description "metrics reviewed"
    llpipe models reject linear-learner-models/2 --sagemaker --region eu-west-1
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pipeline.api._shared import DEFAULT_WORKDIR
from pipeline.cli.arguments import add_config_arguments, config_from_args
from pipeline.cli.render import safe_console
from pipeline.core.names import CHAMPION
from pipeline.core.safe_text import printable

ACTIONS = ("list", "describe", "approve", "reject")


def configure(parser: argparse.ArgumentParser) -> None:
    """The action and its target, the group, output format and which registry."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("action", choices=ACTIONS, help="what to do")
    parser.add_argument(
        "target", nargs="?", help="describe/approve/reject: a version number, latest, <group>/<version> or an ARN"
    )
    parser.add_argument(
        "--group", dest="model_package_group", metavar="G", help="model package group (same as --model-package-group)"
    )
    parser.add_argument("--all-groups", action="store_true", help="list: every group, not only --group")
    parser.add_argument("--description", help="approve/reject: the approval description to record")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--sagemaker", action="store_true", help="use the SageMaker Model Registry (boto3)")
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR, help="local work dir (default .llpipe)")
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Do the action on the local registry or, with --sagemaker, on SageMaker's; print a table, fields or JSON."""
    from pipeline.api import models as versions

    config = config_from_args(args)
    group = config.model_package_group
    if args.action != "list" and not args.target:
        raise versions.ModelsError(
            f"{args.action} needs a target: a version number, latest, <group>/<version> or an ARN"
        )
    if args.action == "list" and args.target:
        raise versions.ModelsError(
            f"list takes no target (got {args.target!r}): use --group G for one group's versions, "
            f"or describe {args.target} for one version"
        )
    if args.action == "list":
        scope = None if args.all_groups else group
        if args.sagemaker:
            _print_list(versions.sagemaker_list(config.region, scope), args.json, with_gate=False)
        else:
            _print_list(versions.local_list(_registry_db(args), scope), args.json, with_gate=True)
    elif args.action == "describe":
        if args.sagemaker:
            _print_package(versions.sagemaker_describe(config.region, args.target, group), args.json)
        else:
            _print_package(versions.local_describe(_registry_db(args), args.target, group), args.json)
    else:
        status = versions.NEW_STATUS[args.action]
        if args.sagemaker:
            result = versions.sagemaker_set_status(config.region, args.target, group, status, args.description)
            print(json.dumps(result, indent=2) if args.json else f"{result['arn']} is now {status}")
        else:
            view = versions.local_set_status(_registry_db(args), args.target, group, status, args.description)
            _print_package(view, args.json, headline=f"{view['arn']} is now {view['approval_status']}")
    return 0


def _registry_db(args: argparse.Namespace) -> Path:
    from pipeline.api.models import registry_db

    return registry_db(args.workdir)


# ------------------------------------------------------------------------------------------------------ output


def _gate_text(gate: dict[str, Any] | None) -> str:
    if not gate or not isinstance(gate.get("value"), (int, float)):
        return "-"
    return f"{gate.get('metric', '?')} {gate['value']:.4f}"


def _trained_on_text(trained: dict[str, Any] | None) -> str:
    """``4 columns, label churned, data churn-070c...``: what a version was trained on, as far as the work dir knows."""
    if not trained:
        return "-"
    columns = trained.get("columns")
    parts = [f"{len(columns)} columns" if columns is not None else "columns unknown"]
    if trained.get("label"):
        parts.append(f"label {trained['label']}")
    if trained.get("data"):
        parts.append(f"data {str(trained['data']).rstrip('/').rsplit('/', 1)[-1]}")
    return ", ".join(parts)


def _print_list(views: list[dict[str, Any]], as_json: bool, with_gate: bool) -> None:
    if as_json:
        print(json.dumps(views, indent=2))
        return
    if not views:
        print("no model packages")
        return
    from rich.table import Table
    from rich.text import Text

    trained = ["trained on"] if any("trained_on" in view for view in views) else []
    table = Table("group", "version", "status", "created (UTC)", *(["gate"] if with_gate else []), *trained, "ARN")
    for view in views:
        gate = [_gate_text(view.get("gate"))] if with_gate else []
        on = [_trained_on_text(view.get("trained_on"))] if trained else []
        created = view["created_time"][:19].replace("T", " ")
        cells = (str(view["group"]), str(view["version"]), view["approval_status"], created, *gate, *on, view["arn"])
        table.add_row(*(Text(cell) for cell in cells))  # stored text: no markup
    safe_console(width=None if sys.stdout.isatty() else 200).print(table)


def _print_package(view: dict[str, Any], as_json: bool, headline: str | None = None) -> None:
    if as_json:
        print(json.dumps(view, indent=2))
        return
    if headline:
        print(printable(headline))
    for key, value in view.items():
        if key == "metrics":
            continue
        if key == "gate":
            value = _gate_text(value)
        elif isinstance(value, (list, dict)):
            value = ", ".join(value) if isinstance(value, list) else json.dumps(value)
        print(f"{key:>24}: {printable(value) if value not in (None, '') else '-'}")
    report = view.get("metrics") or {}
    champion = report.get(CHAMPION) if isinstance(report.get(CHAMPION), dict) else {}
    for section, metrics in report.items():
        if section.endswith("_metrics") and isinstance(metrics, dict):
            against = champion.get(section) if isinstance(champion.get(section), dict) else {}
            heading = f" (champion version {champion.get('version')} on the same test split)" if against else ""
            print(printable(f"{section}:{heading}"))
            for name, metric in metrics.items():
                if isinstance(metric, dict) and "value" in metric:
                    deviation = metric.get("standard_deviation")
                    spread = f" ± {deviation:.4f}" if isinstance(deviation, (int, float)) else ""
                    theirs = (against.get(name) or {}).get("value") if isinstance(against.get(name), dict) else None
                    versus = f"   champion {theirs:.6f}" if isinstance(theirs, (int, float)) else ""
                    print(printable(f"{name:>42}: {metric['value']:.6f}{spread}{versus}"))
