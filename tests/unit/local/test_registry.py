"""The local model registry: CreateModelPackage semantics, approval, and concurrent registrations."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from support.model_packages import ACCOUNT, IMAGE, REGION, request

from pipeline.local.registry import LocalRegistry, ModelPackage, RegistryError

REPORT = {
    "binary_classification_metrics": {"auc": {"value": 0.91, "standard_deviation": 0.01}},
    "gate": {"metric": "auc", "value": 0.91},
}


def test_register_creates_group_and_numbers_versions(tmp_path: Path) -> None:
    registry = LocalRegistry(tmp_path / "registry.db")
    first = registry.register(request(), metrics=REPORT, region=REGION, account=ACCOUNT)
    second = registry.register(request(ModelApprovalStatus="Approved"), region=REGION, account=ACCOUNT)
    other = registry.register(request("other-group"), region=REGION, account=ACCOUNT)

    assert isinstance(first, ModelPackage)
    assert (first.group, first.version, second.version, other.version) == ("LinearLearnerModels", 1, 2, 1)
    assert first.arn == f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:model-package/linearlearnermodels/1"
    assert first.approval_status == "PendingManualApproval" and second.approval_status == "Approved"
    assert first.image == IMAGE
    assert first.model_data_url == "s3://bucket/pipe/train/job-1/output/model.tar.gz"
    assert first.metrics_report_uri == "s3://bucket/pipe/exec-1/evaluation.json"
    assert first.metrics == REPORT and second.metrics is None
    assert first.content_types == ("application/x-recordio-protobuf", "text/csv")
    assert first.response_types == ("application/jsonlines", "application/json")
    assert first.realtime_instance_types == ("ml.m5.large",)
    assert first.transform_instance_types == ("ml.m5.xlarge",)
    assert first.source_execution == "arn:aws:sagemaker:eu-west-1:123456789012:pipeline/p/execution/e1"
    assert first.customer_metadata == {"predictor_type": "binary_classifier"}
    assert first.created_time.tzinfo is not None and first.created_time <= second.created_time

    groups = registry.list_groups()
    assert [(g.name, g.package_count) for g in groups] == [("LinearLearnerModels", 2), ("other-group", 1)]
    assert groups[0].arn == f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:model-package-group/linearlearnermodels"
    assert [p.version for p in registry.list_packages("LinearLearnerModels")] == [1, 2]
    assert [(p.group, p.version) for p in registry.list_packages()] == [
        ("LinearLearnerModels", 1),
        ("LinearLearnerModels", 2),
        ("other-group", 1),
    ]
    assert registry.describe(first.arn) == first
    assert registry.describe("LinearLearnerModels/2") == second
    # Group names are case-insensitive as in SageMaker: same group, next version, original spelling kept.
    third = registry.register(request("linearlearnermodels"), region=REGION, account=ACCOUNT)
    assert (third.group, third.version) == ("LinearLearnerModels", 3)


def test_missing_status_defaults_to_pending(tmp_path: Path) -> None:
    body = request()
    del body["ModelApprovalStatus"], body["ModelMetrics"], body["MetadataProperties"]
    package = LocalRegistry(tmp_path / "r.db").register(body, region=REGION, account=ACCOUNT)
    assert package.approval_status == "PendingManualApproval"
    assert package.metrics_report_uri is None and package.source_execution is None


def test_approve_and_reject_change_status(tmp_path: Path) -> None:
    registry = LocalRegistry(tmp_path / "registry.db")
    package = registry.register(request(), region=REGION, account=ACCOUNT)
    approved = registry.update_status(package.arn, "Approved", "metrics reviewed")
    assert approved.approval_status == "Approved" and approved.approval_description == "metrics reviewed"
    assert approved.last_modified_time >= package.last_modified_time
    assert registry.describe(package.arn).approval_status == "Approved"
    rejected = registry.update_status("LinearLearnerModels/1", "Rejected")
    assert rejected.approval_status == "Rejected" and rejected.approval_description is None
    assert registry.describe(package.arn.upper().replace("ARN:AWS:SAGEMAKER", "arn:aws:sagemaker")).version == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"ModelPackageGroupName": ""}, "ModelPackageGroupName is required"),
        ({"ModelPackageGroupName": "bad_name!"}, "must be 1-63 letters"),
        ({"ModelApprovalStatus": "Maybe"}, "'Maybe' is not one of"),
        ({"InferenceSpecification": None}, "InferenceSpecification is required"),
        ({"InferenceSpecification": {"Containers": []}}, "InferenceSpecification.Containers is required"),
        ({"InferenceSpecification": {"Containers": [{"Image": IMAGE}]}}, "Containers[0].ModelDataUrl is required"),
        (
            {"InferenceSpecification": {"Containers": [{"Image": IMAGE, "ModelDataUrl": "/tmp/model.tar.gz"}]}},
            "not an s3:// URI",
        ),
        ({"ModelMetrics": {"ModelQuality": {"Statistics": {"ContentType": "application/json"}}}}, "S3Uri is required"),
        ({"CustomerMetadataProperties": {"a": 1}}, "CustomerMetadataProperties must map strings"),
        # SageMaker's CustomerMetadata pattern: no parentheses, commas or semicolons; at most 256 characters
        ({"CustomerMetadataProperties": {"Why": "auc 0.9 (champion 0.8)"}}, "characters may hold only letters, spaces"),
        ({"CustomerMetadataProperties": {"Long": "x" * 257}}, "keys of 1-128 and values of 1-256 characters"),
        ({"CustomerMetadataProperties": {"": "x"}}, "keys of 1-128 and values of 1-256"),
        ({"CustomerMetadataProperties": {f"k{i}": "v" for i in range(51)}}, "51 entries, at most 50"),
    ],
)
def test_invalid_requests_fail_clearly_and_register_nothing(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    registry = LocalRegistry(tmp_path / "registry.db")
    with pytest.raises(RegistryError, match=message.replace("[", r"\[").replace("]", r"\]")):
        registry.register(request(**change), region=REGION, account=ACCOUNT)
    assert registry.list_packages() == []


def test_unknown_packages_and_statuses_fail_clearly(tmp_path: Path) -> None:
    registry = LocalRegistry(tmp_path / "registry.db")
    assert registry.list_groups() == [] and registry.list_packages() == []
    with pytest.raises(RegistryError, match="not found"):
        registry.describe("LinearLearnerModels/1")
    package = registry.register(request(), region=REGION, account=ACCOUNT)
    with pytest.raises(RegistryError, match="LinearLearnerModels/7 not found"):
        registry.describe("LinearLearnerModels/7")
    with pytest.raises(RegistryError, match="expected an ARN or <group>/<version>"):
        registry.describe("LinearLearnerModels")
    with pytest.raises(RegistryError, match="'Deployed' is not one of"):
        registry.update_status(package.arn, "Deployed")
    assert registry.describe(package.arn).approval_status == "PendingManualApproval"


def _register_many(db_path: str, worker: int, count: int, start: Any, results: Any) -> None:
    """One process: wait for the others, then register ``count`` versions back to back."""
    registry = LocalRegistry(Path(db_path))
    start.wait()
    for index in range(count):
        body = request(CustomerMetadataProperties={"worker": str(worker), "index": str(index)})
        package = registry.register(body, region=REGION, account=ACCOUNT)
        results.put((package.version, f"{worker}-{index}"))


def test_concurrent_registrations_lose_and_repeat_no_version(tmp_path: Path) -> None:
    db_path = tmp_path / "registry.db"
    workers, per_worker = 4, 5
    context = multiprocessing.get_context("spawn")
    start, queue = context.Barrier(workers), context.Queue()
    processes = [
        context.Process(target=_register_many, args=(str(db_path), worker, per_worker, start, queue))
        for worker in range(workers)
    ]
    for process in processes:
        process.start()
    results = [queue.get(timeout=60) for _ in range(workers * per_worker)]  # (version, who got it)
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0

    returned = sorted(version for version, _ in results)
    assert returned == list(range(1, workers * per_worker + 1))
    packages = LocalRegistry(db_path).list_packages("LinearLearnerModels")
    assert [p.version for p in packages] == list(range(1, workers * per_worker + 1))
    stored = {f"{p.customer_metadata['worker']}-{p.customer_metadata['index']}" for p in packages}
    assert stored == {f"{w}-{i}" for w in range(workers) for i in range(per_worker)}
    # every process saw the version it was given, and the database agrees on who got which
    by_version = {p.version: f"{p.customer_metadata['worker']}-{p.customer_metadata['index']}" for p in packages}
    assert all(by_version[version] == who for version, who in results)
    with sqlite3.connect(db_path) as db:
        assert db.execute("SELECT COUNT(*) FROM model_package_groups").fetchone() == (1,)
