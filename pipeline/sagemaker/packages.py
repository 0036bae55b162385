"""Model package versions of the group in SageMaker's registry: a version named by ARN, number or latest-approved."""

from __future__ import annotations

from typing import Any

from pipeline.core.deployment import LATEST_APPROVED
from pipeline.core.errors import AwsError, UsageError
from pipeline.sagemaker import aws


def package_arn(sagemaker: Any, group: str, target: str | None) -> str:
    """The model package: an ARN as given, a version number of ``group``, or its newest approved version."""
    if target and target.startswith("arn:"):
        return target
    if target in (None, LATEST_APPROVED):
        request = {
            "ModelPackageGroupName": group,
            "ModelApprovalStatus": "Approved",
            "SortBy": "CreationTime",
            "SortOrder": "Descending",
            "MaxResults": 1,
        }
        with aws.call(f"ListModelPackages {group}"):
            found = sagemaker.list_model_packages(**request)["ModelPackageSummaryList"]
        if not found:
            raise AwsError(f"model package group {group} has no approved version")
        return found[0]["ModelPackageArn"]
    if not str(target).isdigit():
        expected = f"a version number, an ARN or {LATEST_APPROVED}"
        raise UsageError(f"expected {expected}", option="model_package", value=target, expected=expected)
    request = {"ModelPackageGroupName": group, "MaxResults": 100}
    while True:
        with aws.call(f"ListModelPackages {group}"):
            page = sagemaker.list_model_packages(**request)
        for summary in page["ModelPackageSummaryList"]:
            if str(summary.get("ModelPackageVersion")) == str(target):
                return summary["ModelPackageArn"]
        if not page.get("NextToken"):
            raise AwsError(f"model package group {group} has no version {target}")
        request["NextToken"] = page["NextToken"]
