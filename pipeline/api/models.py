"""Registered model versions in the local registry (``<workdir>/registry.db``) or the SageMaker Model Registry.

Both backends answer in the same view (a dict with the local registry's field names), so ``llpipe models`` prints
them alike. A version is named by its number in the group, ``latest``, ``<group>/<version>`` or its ARN.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pipeline.core.errors import ModelsError
from pipeline.core.images import is_linear_learner
from pipeline.core.names import DECISION, GATE, SERVING_ROLE_VARIABLE

__all__ = [
    "champion_comparison",
    "container_text",
    "local_describe",
    "local_list",
    "local_set_status",
    "package_name",
    "registry_db",
    "sagemaker_client",
    "sagemaker_describe",
    "sagemaker_list",
    "sagemaker_set_status",
]

NEW_STATUS = {"approve": "Approved", "reject": "Rejected"}
PAGE_SIZE = 100


def registry_db(workdir: str | Path) -> Path:
    """The local registry of the work dir at ``workdir`` (``registry.db``, written by the Register step)."""
    from pipeline.local.workdir import Workdir

    return Workdir.at(Path(workdir)).registry_db


def package_name(target: str, group: str) -> str:
    """``3`` -> ``group/3``; ``group/3`` and ARNs unchanged; a version below 1 (``-1``, ``0``) or anything else (a
    name, ``abc``) is a ``ModelsError`` saying which forms are accepted, for both registries alike."""
    if target.startswith("arn:"):
        return target
    prefix, _, number = target.rpartition("/")
    if number.lstrip("+-").isdigit() and int(number) < 1:
        raise ModelsError(
            f"model package version {target}: versions are numbered from 1 (`llpipe models list` shows them)"
        )
    if not number.isdigit() or (prefix == "" and "/" in target):
        raise ModelsError(
            f"model package version {target!r}: expected a version number of group {group} (e.g. 3), latest,"
            f" <group>/<version> (e.g. {group}/3) or a model package ARN (arn:aws:sagemaker:...:model-package/...);"
            " `llpipe models list` shows them"
        )
    return f"{group}/{target}" if target.isdigit() else target


# ------------------------------------------------------------------------------------------------------- local


@contextmanager
def _registry_errors() -> Iterator[None]:
    from pipeline.local.registry import RegistryError

    try:
        yield
    except RegistryError as error:
        raise ModelsError(str(error)) from None


def local_list(registry_db: Path, group: str | None) -> list[dict[str, Any]]:
    """Every version of ``group`` (every group when None), oldest first."""
    from pipeline.local.registry import LocalRegistry
    from pipeline.local.table_groups import trained_on
    from pipeline.local.workdir import Workdir

    workdir = Workdir(Path(registry_db).parent)
    with _registry_errors():
        packages = LocalRegistry(registry_db).list_packages(group)
        # what each version was trained on: several tables in one work dir each have a group of their own
        return [{**_local_view(package), "trained_on": trained_on(workdir, package)} for package in packages]


def _local_name(registry: Any, target: str, group: str) -> str:
    if target != "latest":
        return package_name(target, group)
    packages = registry.list_packages(group)
    if not packages:
        raise ModelsError(f"model package group {group} has no versions in {registry.db_path}")
    return packages[-1].arn


def local_describe(registry_db: Path, target: str, group: str) -> dict[str, Any]:
    """One version's view."""
    from pipeline.local.registry import LocalRegistry

    registry = LocalRegistry(registry_db)
    with _registry_errors():
        return _local_view(registry.describe(_local_name(registry, target, group)))


def local_set_status(
    registry_db: Path, target: str, group: str, status: str, description: str | None
) -> dict[str, Any]:
    """Approve or reject one version; its updated view."""
    from pipeline.local.registry import LocalRegistry

    registry = LocalRegistry(registry_db)
    with _registry_errors():
        return _local_view(registry.update_status(_local_name(registry, target, group), status, description))


def _local_view(package: Any) -> dict[str, Any]:
    view = package.to_dict()
    # the inference pipeline, a line each: image (role), as DescribeModelPackage's view shows it
    view["containers"] = [container_text(container) for container in package.containers]
    gate = (package.metrics or {}).get(GATE)
    view["gate"] = gate if isinstance(gate, dict) else None
    decision = (package.metrics or {}).get(DECISION)
    reason = decision.get("reason") if isinstance(decision, dict) else None
    view["champion_comparison"] = reason or champion_comparison(package.customer_metadata)
    return view


def container_text(container: Any) -> str:
    """``<image> (<role>)``: the featurizer and labels containers by their role, Linear Learner by its image."""
    role = (container.get("Environment") or {}).get(SERVING_ROLE_VARIABLE)
    return f"{container.get('Image')}" + (f" ({role})" if role else "")


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


@contextmanager
def _aws_errors() -> Iterator[None]:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except ClientError as error:
        raise ModelsError(f"SageMaker: {error}") from None
    except BotoCoreError as error:
        raise ModelsError(f"AWS: {error}") from None


def sagemaker_list(region: str, group: str | None) -> list[dict[str, Any]]:
    """Every version of ``group`` (every group when None), oldest first, as list summaries (no metrics)."""
    client = sagemaker_client(region)
    with _aws_errors():
        groups = list(_sagemaker_groups(client)) if group is None else [group]
        return [_summary_view(summary) for name in groups for summary in _sagemaker_packages(client, name)]


def sagemaker_describe(region: str, target: str, group: str) -> dict[str, Any]:
    """DescribeModelPackage of one version, in the local view's field names."""
    client = sagemaker_client(region)
    with _aws_errors():
        name = _latest_arn(client, group) if target == "latest" else package_name(target, group)
        return _described_view(client.describe_model_package(ModelPackageName=name))


def sagemaker_set_status(region: str, target: str, group: str, status: str, description: str | None) -> dict[str, Any]:
    """UpdateModelPackage with the new approval status; ``{"arn", "approval_status", "approval_description"}``."""
    client = sagemaker_client(region)
    with _aws_errors():
        name = _latest_arn(client, group) if target == "latest" else package_name(target, group)
        if not name.startswith("arn:"):
            name = client.describe_model_package(ModelPackageName=name)["ModelPackageArn"]
        update: dict[str, Any] = {"ModelPackageArn": name, "ModelApprovalStatus": status}
        if description is not None:
            update["ApprovalDescription"] = description
        client.update_model_package(**update)
    return {"arn": name, "approval_status": status, "approval_description": description}


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
    containers = inference.get("Containers") or [{}]
    # the Linear Learner container (the middle one of the inference pipeline) is the version's image and artifact
    container = next((c for c in containers if is_linear_learner(str(c.get("Image", "")))), containers[0])
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
        "containers": [container_text(item) for item in containers if item],
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
        "data_quality": _baseline_uris(description.get("ModelMetrics")),
        "drift_check_data_quality": _baseline_uris(description.get("DriftCheckBaselines")),
    }


def _baseline_uris(section: dict[str, Any] | None) -> dict[str, str]:
    """``{"Statistics": uri, "Constraints": uri}`` of a description's ``ModelDataQuality`` (the local view's form)."""
    quality = (section or {}).get("ModelDataQuality") or {}
    return {kind: source["S3Uri"] for kind, source in quality.items() if isinstance(source, dict) and "S3Uri" in source}
