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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.config import ConfigError, add_config_arguments, config_from_args

ACTIONS = ("list", "describe", "approve", "reject")
NEW_STATUS = {"approve": "Approved", "reject": "Rejected"}
PAGE_SIZE = 100


class ModelsError(Exception):
    """A request the user can fix (no such version, missing target); printed as one line."""


def configure(parser: argparse.ArgumentParser) -> None:
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
    parser.add_argument("--workdir", type=Path, default=Path(".llpipe"), help="local work dir (default .llpipe)")
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    try:
        config = config_from_args(args)
        if args.action != "list" and not args.target:
            raise ModelsError(f"{args.action} needs a target: a version number, latest, <group>/<version> or an ARN")
        if args.sagemaker:
            return _run_sagemaker(args, config.model_package_group, config.region)
        return _run_local(args, config.model_package_group)
    except (ConfigError, ModelsError) as error:
        print(f"llpipe models: error: {error}", file=sys.stderr)
        return 1


def _package_name(target: str, group: str) -> str:
    """``3`` -> ``group/3``; ``group/3`` and ARNs unchanged."""
    return f"{group}/{target}" if target.isdigit() else target


# ------------------------------------------------------------------------------------------------------- local


def _run_local(args: argparse.Namespace, group: str) -> int:
    from pipeline.local.registry import LocalRegistry, RegistryError

    registry = LocalRegistry(args.workdir / "registry.db")
    try:
        if args.action == "list":
            packages = registry.list_packages(None if args.all_groups else group)
            _print_list([_local_view(package) for package in packages], args.json, with_gate=True)
            return 0
        if args.target == "latest":
            packages = registry.list_packages(group)
            if not packages:
                raise ModelsError(f"model package group {group} has no versions in {registry.db_path}")
            name = packages[-1].arn
        else:
            name = _package_name(args.target, group)
        if args.action == "describe":
            _print_package(_local_view(registry.describe(name)), args.json)
        else:
            package = registry.update_status(name, NEW_STATUS[args.action], args.description)
            _print_package(_local_view(package), args.json, headline=f"{package.arn} is now {package.approval_status}")
    except RegistryError as error:
        raise ModelsError(str(error)) from None
    return 0


def _local_view(package: Any) -> dict[str, Any]:
    view = package.to_dict()
    gate = (package.metrics or {}).get("gate")
    view["gate"] = gate if isinstance(gate, dict) else None
    decision = (package.metrics or {}).get("decision")
    reason = decision.get("reason") if isinstance(decision, dict) else None
    view["champion_comparison"] = reason or champion_comparison(package.customer_metadata)
    return view


def champion_comparison(metadata: Any) -> str | None:
    """The champion this version was compared with, from the metadata the pipeline's Register step records."""
    if not isinstance(metadata, dict) or "ChampionModelPackageArn" not in metadata:
        return None
    metric = metadata.get("GateMetric", "metric")
    if metadata["ChampionModelPackageArn"] == "none":
        return f"{metric} {metadata.get('ChallengerValue')}; no approved champion to compare with"
    return (
        f"{metric} {metadata.get('ChallengerValue')} vs champion {metadata['ChampionModelPackageArn']} "
        f"{metadata.get('ChampionValue')} on the same test split (tolerance {metadata.get('ChampionTolerance')})"
    )


# ---------------------------------------------------------------------------------------------------- SageMaker


def sagemaker_client(region: str) -> Any:
    """The boto3 SageMaker client (a function so tests can hand in a stubbed one)."""
    import boto3

    return boto3.client("sagemaker", region_name=region)


def _run_sagemaker(args: argparse.Namespace, group: str, region: str) -> int:
    from botocore.exceptions import BotoCoreError, ClientError

    client = sagemaker_client(region)
    try:
        if args.action == "list":
            groups = list(_sagemaker_groups(client)) if args.all_groups else [group]
            views = [_summary_view(summary) for name in groups for summary in _sagemaker_packages(client, name)]
            _print_list(views, args.json, with_gate=False)
            return 0
        name = _latest_arn(client, group) if args.target == "latest" else _package_name(args.target, group)
        if args.action == "describe" or not name.startswith("arn:"):
            description = client.describe_model_package(ModelPackageName=name)
            if args.action == "describe":
                _print_package(_described_view(description), args.json)
                return 0
            name = description["ModelPackageArn"]
        update: dict[str, Any] = {"ModelPackageArn": name, "ModelApprovalStatus": NEW_STATUS[args.action]}
        if args.description is not None:
            update["ApprovalDescription"] = args.description
        client.update_model_package(**update)
        result = {"arn": name, "approval_status": NEW_STATUS[args.action], "approval_description": args.description}
        print(json.dumps(result, indent=2) if args.json else f"{name} is now {NEW_STATUS[args.action]}")
    except ClientError as error:
        raise ModelsError(f"SageMaker: {error}") from None
    except BotoCoreError as error:
        raise ModelsError(f"AWS: {error}") from None
    return 0


def _sagemaker_groups(client: Any) -> Iterator[str]:
    request: dict[str, Any] = {"SortBy": "CreationTime", "SortOrder": "Ascending", "MaxResults": PAGE_SIZE}
    while True:
        page = client.list_model_package_groups(**request)
        yield from (summary["ModelPackageGroupName"] for summary in page["ModelPackageGroupSummaryList"])
        if not page.get("NextToken"):
            return
        request["NextToken"] = page["NextToken"]


def _sagemaker_packages(client: Any, group: str) -> Iterator[dict[str, Any]]:
    request: dict[str, Any] = {
        "ModelPackageGroupName": group,
        "SortBy": "CreationTime",
        "SortOrder": "Ascending",
        "MaxResults": PAGE_SIZE,
    }
    while True:
        page = client.list_model_packages(**request)
        yield from page["ModelPackageSummaryList"]
        if not page.get("NextToken"):
            return
        request["NextToken"] = page["NextToken"]


def _latest_arn(client: Any, group: str) -> str:
    page = client.list_model_packages(
        ModelPackageGroupName=group, SortBy="CreationTime", SortOrder="Descending", MaxResults=1
    )
    if not page["ModelPackageSummaryList"]:
        raise ModelsError(f"model package group {group} has no versions in SageMaker")
    return page["ModelPackageSummaryList"][0]["ModelPackageArn"]


def _summary_view(summary: dict[str, Any]) -> dict[str, Any]:
    return {
        "group": summary.get("ModelPackageGroupName"),
        "version": summary.get("ModelPackageVersion"),
        "arn": summary["ModelPackageArn"],
        "approval_status": summary.get("ModelApprovalStatus"),
        "created_time": summary["CreationTime"].isoformat(),
    }


def _described_view(description: dict[str, Any]) -> dict[str, Any]:
    """DescribeModelPackage in the local view's field names."""
    inference = description.get("InferenceSpecification") or {}
    container = (inference.get("Containers") or [{}])[0]
    statistics = ((description.get("ModelMetrics") or {}).get("ModelQuality") or {}).get("Statistics") or {}
    last_modified = description.get("LastModifiedTime")
    return {
        "group": description.get("ModelPackageGroupName"),
        "version": description.get("ModelPackageVersion"),
        "arn": description["ModelPackageArn"],
        "approval_status": description.get("ModelApprovalStatus"),
        "created_time": description["CreationTime"].isoformat(),
        "last_modified_time": last_modified.isoformat() if last_modified else None,
        "image": container.get("Image"),
        "model_data_url": container.get("ModelDataUrl"),
        "metrics_report_uri": statistics.get("S3Uri"),
        "content_types": inference.get("SupportedContentTypes", []),
        "response_types": inference.get("SupportedResponseMIMETypes", []),
        "realtime_instance_types": inference.get("SupportedRealtimeInferenceInstanceTypes", []),
        "transform_instance_types": inference.get("SupportedTransformInstanceTypes", []),
        "source_execution": (description.get("MetadataProperties") or {}).get("GeneratedBy"),
        "approval_description": description.get("ApprovalDescription"),
        "description": description.get("ModelPackageDescription"),
        "customer_metadata": description.get("CustomerMetadataProperties", {}),
        "champion_comparison": champion_comparison(description.get("CustomerMetadataProperties")),
    }


# ------------------------------------------------------------------------------------------------------ output


def _gate_text(gate: dict[str, Any] | None) -> str:
    if not gate or not isinstance(gate.get("value"), (int, float)):
        return "-"
    return f"{gate.get('metric', '?')} {gate['value']:.4f}"


def _print_list(views: list[dict[str, Any]], as_json: bool, with_gate: bool) -> None:
    if as_json:
        print(json.dumps(views, indent=2))
        return
    if not views:
        print("no model packages")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("group", "version", "status", "created (UTC)", *(["gate"] if with_gate else []), "ARN")
    for view in views:
        gate = [_gate_text(view.get("gate"))] if with_gate else []
        created = view["created_time"][:19].replace("T", " ")
        table.add_row(str(view["group"]), str(view["version"]), view["approval_status"], created, *gate, view["arn"])
    Console(width=None if sys.stdout.isatty() else 200).print(table)


def _print_package(view: dict[str, Any], as_json: bool, headline: str | None = None) -> None:
    if as_json:
        print(json.dumps(view, indent=2))
        return
    if headline:
        print(headline)
    for key, value in view.items():
        if key == "metrics":
            continue
        if key == "gate":
            value = _gate_text(value)
        elif isinstance(value, (list, dict)):
            value = ", ".join(value) if isinstance(value, list) else json.dumps(value)
        print(f"{key:>24}: {value if value not in (None, '') else '-'}")
    report = view.get("metrics") or {}
    champion = report.get("champion") if isinstance(report.get("champion"), dict) else {}
    for section, metrics in report.items():
        if section.endswith("_metrics") and isinstance(metrics, dict):
            against = champion.get(section) if isinstance(champion.get(section), dict) else {}
            heading = f" (champion version {champion.get('version')} on the same test split)" if against else ""
            print(f"{section}:{heading}")
            for name, metric in metrics.items():
                if isinstance(metric, dict) and "value" in metric:
                    deviation = metric.get("standard_deviation")
                    spread = f" ± {deviation:.4f}" if isinstance(deviation, (int, float)) else ""
                    theirs = (against.get(name) or {}).get("value") if isinstance(against.get(name), dict) else None
                    versus = f"   champion {theirs:.6f}" if isinstance(theirs, (int, float)) else ""
                    print(f"{name:>42}: {metric['value']:.6f}{spread}{versus}")
