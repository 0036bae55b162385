"""``llpipe models``: the local registry end to end, and the exact SageMaker requests with botocore's Stubber."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from pipeline.api import models as model_versions
from pipeline.cli import main
from pipeline.local.registry import LocalRegistry

REGION, ACCOUNT = "eu-west-1", "123456789012"
GROUP = "churn-models"


def register(workdir: Path, group: str = GROUP, auc: float = 0.9) -> str:
    request = {
        "ModelPackageGroupName": group,
        "InferenceSpecification": {
            "Containers": [{"Image": "img:1", "ModelDataUrl": f"s3://b/{group}/model.tar.gz"}],
            "SupportedContentTypes": ["text/csv"],
            "SupportedResponseMIMETypes": ["application/jsonlines"],
        },
        "ModelMetrics": {"ModelQuality": {"Statistics": {"ContentType": "application/json", "S3Uri": "s3://b/e.json"}}},
    }
    report = {
        "binary_classification_metrics": {"auc": {"value": auc, "standard_deviation": 0.01}},
        "gate": {"metric": "auc", "value": auc},
    }
    registry = LocalRegistry(workdir / "registry.db")
    return registry.register(request, metrics=report, region=REGION, account=ACCOUNT).arn


def llpipe(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["models", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_local_list_describe_approve_reject(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = register(tmp_path, auc=0.81)
    second = register(tmp_path, auc=0.86)
    register(tmp_path, group="other-models")
    workdir = ["--workdir", str(tmp_path), "--group", GROUP]

    code, out, _ = llpipe(capsys, "list", *workdir, "--json")
    assert code == 0
    listed = json.loads(out)
    assert [(p["version"], p["approval_status"], p["gate"]["value"]) for p in listed] == [
        (1, "PendingManualApproval", 0.81),
        (2, "PendingManualApproval", 0.86),
    ]
    code, out, _ = llpipe(capsys, "list", "--workdir", str(tmp_path), "--all-groups", "--json")
    assert [(p["group"], p["version"]) for p in json.loads(out)] == [(GROUP, 1), (GROUP, 2), ("other-models", 1)]
    code, out, _ = llpipe(capsys, "list", *workdir)
    assert code == 0 and "auc 0.8600" in out and second in out

    code, out, _ = llpipe(capsys, "approve", "2", *workdir, "--description", "reviewed")
    assert code == 0 and f"{second} is now Approved" in out
    assert LocalRegistry(tmp_path / "registry.db").describe(second).approval_description == "reviewed"
    code, out, _ = llpipe(capsys, "reject", first, *workdir, "--json")
    assert json.loads(out)["approval_status"] == "Rejected"
    code, out, _ = llpipe(capsys, "describe", "latest", *workdir, "--json")
    described = json.loads(out)
    assert (described["arn"], described["approval_status"]) == (second, "Approved")
    assert described["metrics"]["gate"] == {"metric": "auc", "value": 0.86}
    code, out, _ = llpipe(capsys, "describe", f"{GROUP}/1", *workdir)
    assert code == 0 and "Rejected" in out and "auc: 0.810000 ± 0.0100" in out

    statuses = [p.approval_status for p in LocalRegistry(tmp_path / "registry.db").list_packages(GROUP)]
    assert statuses == ["Rejected", "Approved"]


def test_local_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = llpipe(capsys, "list", "--workdir", str(tmp_path))
    assert code == 0 and "no model packages" in out
    code, _, err = llpipe(capsys, "approve", "--workdir", str(tmp_path))
    assert code == 1 and err.strip() == (
        "llpipe models: approve needs a target: a version number, latest, <group>/<version> or an ARN"
    )
    code, _, err = llpipe(capsys, "list", "extra", "--workdir", str(tmp_path))  # was read as a target, ignored
    assert code == 1 and err.strip() == (
        "llpipe models: list takes no target (got 'extra'): use --group G for one group's versions, "
        "or describe extra for one version"
    )
    register(tmp_path)
    code, _, err = llpipe(capsys, "describe", "9", "--workdir", str(tmp_path), "--group", GROUP)
    assert code == 1 and err.strip() == f"llpipe models: model package {GROUP}/9 not found"
    code, _, err = llpipe(capsys, "describe", "latest", "--workdir", str(tmp_path), "--group", "nope")
    assert code == 1 and "model package group nope has no versions" in err


CREATED = datetime(2026, 11, 30, 4, 0, tzinfo=timezone.utc)


def package_arn(group: str, version: int) -> str:
    return f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:model-package/{group}/{version}"


def summary(group: str, version: int, status: str = "PendingManualApproval") -> dict[str, Any]:
    return {
        "ModelPackageGroupName": group,
        "ModelPackageVersion": version,
        "ModelPackageArn": package_arn(group, version),
        "CreationTime": CREATED,
        "ModelPackageStatus": "Completed",
        "ModelApprovalStatus": status,
    }


@pytest.fixture
def stubbed(monkeypatch: pytest.MonkeyPatch) -> Stubber:
    """A real botocore SageMaker client whose requests are checked by the Stubber (no network)."""
    client = boto3.client("sagemaker", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    regions: list[str] = []

    def make_client(region: str) -> Any:
        regions.append(region)
        return client

    monkeypatch.setattr(model_versions, "sagemaker_client", make_client)
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()
    assert regions == [REGION]


SAGEMAKER = ["--sagemaker", "--region", REGION, "--group", GROUP]


def test_sagemaker_list_pages_through_model_packages(stubbed: Stubber, capsys: pytest.CaptureFixture[str]) -> None:
    first_request = {
        "ModelPackageGroupName": GROUP,
        "SortBy": "CreationTime",
        "SortOrder": "Ascending",
        "MaxResults": 100,
    }
    stubbed.add_response(
        "list_model_packages", {"ModelPackageSummaryList": [summary(GROUP, 1)], "NextToken": "t1"}, first_request
    )
    stubbed.add_response(
        "list_model_packages",
        {"ModelPackageSummaryList": [summary(GROUP, 2, "Approved")]},
        {**first_request, "NextToken": "t1"},
    )
    code, out, _ = llpipe(capsys, "list", *SAGEMAKER, "--json")
    assert code == 0
    assert json.loads(out) == [
        {
            "group": GROUP,
            "version": 1,
            "arn": package_arn(GROUP, 1),
            "approval_status": "PendingManualApproval",
            "created_time": CREATED.isoformat(),
        },
        {
            "group": GROUP,
            "version": 2,
            "arn": package_arn(GROUP, 2),
            "approval_status": "Approved",
            "created_time": CREATED.isoformat(),
        },
    ]


def test_sagemaker_list_all_groups(stubbed: Stubber, capsys: pytest.CaptureFixture[str]) -> None:
    groups = [
        {
            "ModelPackageGroupName": name,
            "ModelPackageGroupArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:model-package-group/{name}",
            "CreationTime": CREATED,
            "ModelPackageGroupStatus": "Completed",
        }
        for name in ("a-models", "b-models")
    ]
    order = {"SortBy": "CreationTime", "SortOrder": "Ascending", "MaxResults": 100}
    stubbed.add_response("list_model_package_groups", {"ModelPackageGroupSummaryList": groups}, order)
    for name in ("a-models", "b-models"):
        stubbed.add_response(
            "list_model_packages",
            {"ModelPackageSummaryList": [summary(name, 1)]},
            {"ModelPackageGroupName": name, **order},
        )
    code, out, _ = llpipe(capsys, "list", *SAGEMAKER, "--all-groups")
    assert code == 0 and package_arn("a-models", 1) in out and package_arn("b-models", 1) in out


def describe_response(version: int, status: str = "PendingManualApproval") -> dict[str, Any]:
    return {
        "ModelPackageName": GROUP,
        "ModelPackageGroupName": GROUP,
        "ModelPackageVersion": version,
        "ModelPackageArn": package_arn(GROUP, version),
        "CreationTime": CREATED,
        "ModelPackageStatus": "Completed",
        "ModelPackageStatusDetails": {"ValidationStatuses": []},
        "ModelApprovalStatus": status,
        "InferenceSpecification": {
            "Containers": [{"Image": "img:1", "ModelDataUrl": "s3://b/model.tar.gz"}],
            "SupportedContentTypes": ["text/csv"],
            "SupportedResponseMIMETypes": ["application/jsonlines"],
        },
        "ModelMetrics": {
            "ModelQuality": {"Statistics": {"ContentType": "application/json", "S3Uri": "s3://b/exec/evaluation.json"}}
        },
        "MetadataProperties": {"GeneratedBy": "arn:aws:sagemaker:eu-west-1:123456789012:pipeline/p/execution/x"},
    }


def test_sagemaker_describe_by_version_number(stubbed: Stubber, capsys: pytest.CaptureFixture[str]) -> None:
    stubbed.add_response("describe_model_package", describe_response(3), {"ModelPackageName": f"{GROUP}/3"})
    code, out, _ = llpipe(capsys, "describe", "3", *SAGEMAKER, "--json")
    view = json.loads(out)
    assert code == 0
    assert view["arn"] == package_arn(GROUP, 3) and view["metrics_report_uri"] == "s3://b/exec/evaluation.json"
    assert view["source_execution"].endswith("execution/x") and view["model_data_url"] == "s3://b/model.tar.gz"


def test_sagemaker_approve_latest(stubbed: Stubber, capsys: pytest.CaptureFixture[str]) -> None:
    stubbed.add_response(
        "list_model_packages",
        {"ModelPackageSummaryList": [summary(GROUP, 4)]},
        {"ModelPackageGroupName": GROUP, "SortBy": "CreationTime", "SortOrder": "Descending", "MaxResults": 1},
    )
    stubbed.add_response(
        "update_model_package",
        {"ModelPackageArn": package_arn(GROUP, 4)},
        {"ModelPackageArn": package_arn(GROUP, 4), "ModelApprovalStatus": "Approved", "ApprovalDescription": "ok"},
    )
    code, out, _ = llpipe(capsys, "approve", "latest", *SAGEMAKER, "--description", "ok")
    assert code == 0 and out.strip() == f"{package_arn(GROUP, 4)} is now Approved"


def test_sagemaker_reject_by_group_version_resolves_the_arn(
    stubbed: Stubber, capsys: pytest.CaptureFixture[str]
) -> None:
    stubbed.add_response("describe_model_package", describe_response(2), {"ModelPackageName": f"{GROUP}/2"})
    stubbed.add_response(
        "update_model_package",
        {"ModelPackageArn": package_arn(GROUP, 2)},
        {"ModelPackageArn": package_arn(GROUP, 2), "ModelApprovalStatus": "Rejected"},
    )
    code, out, _ = llpipe(capsys, "reject", f"{GROUP}/2", *SAGEMAKER, "--json")
    assert code == 0 and json.loads(out)["approval_status"] == "Rejected"


def test_sagemaker_reject_by_arn_sends_only_the_update(stubbed: Stubber, capsys: pytest.CaptureFixture[str]) -> None:
    arn = package_arn(GROUP, 5)
    stubbed.add_response(
        "update_model_package", {"ModelPackageArn": arn}, {"ModelPackageArn": arn, "ModelApprovalStatus": "Rejected"}
    )
    code, _, _ = llpipe(capsys, "reject", arn, *SAGEMAKER)
    assert code == 0


def test_sagemaker_errors_are_one_line(stubbed: Stubber, capsys: pytest.CaptureFixture[str]) -> None:
    stubbed.add_client_error(
        "describe_model_package",
        service_error_code="ValidationException",
        service_message="ModelPackage churn-models/8 does not exist.",
        expected_params={"ModelPackageName": f"{GROUP}/8"},
    )
    code, _, err = llpipe(capsys, "describe", "8", *SAGEMAKER)
    assert code == 1 and err.startswith("llpipe models: SageMaker: ") and "does not exist" in err
    assert len(err.strip().splitlines()) == 1
