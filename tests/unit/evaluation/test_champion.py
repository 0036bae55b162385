"""The champion comparison below the pipeline: the container module's exact SageMaker and S3 requests (botocore
Stubber), Evaluate scoring a real champion artifact on real test shards, the gate's decision, and the local stand-in
endpoint answering real boto3 clients from a real local registry and S3 folder."""

from __future__ import annotations

import io
import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from botocore.exceptions import ClientError
from botocore.response import StreamingBody
from botocore.stub import Stubber
from sklearn import metrics as skm
from support.aws_stubs import aws_session
from support.evaluation_inputs import binary_case, write_job_inputs

from containerlib.linear_learner.model import LinearModel
from containerlib.linear_learner.writer import artifact_bytes
from evaluation import EvaluationError
from evaluation.champion import Champion, ChampionError, download_model, find_champion
from evaluation.gate import GateSettings, decide
from evaluation.job import evaluate
from pipeline.local.aws_endpoint import serve
from pipeline.local.registry import LocalRegistry
from pipeline.local.s3 import LocalS3

REGION, ACCOUNT = "eu-west-1", "123456789012"
GROUP = "churn-models"
ARN = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:model-package/{GROUP}"
MODEL_URL = "s3://models-bucket/churn/train/job-7/output/model.tar.gz"
LIST_REQUEST = {
    "ModelPackageGroupName": GROUP,
    "ModelApprovalStatus": "Approved",
    "SortBy": "CreationTime",
    "SortOrder": "Descending",
    "MaxResults": 100,
}
CREATED = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)


def stubbed_clients() -> tuple[Any, Stubber, Any, Stubber]:
    session = aws_session(REGION)
    sagemaker, s3 = session.client("sagemaker"), session.client("s3")
    return sagemaker, Stubber(sagemaker), s3, Stubber(s3)


def summary(version: int, status: str = "Completed") -> dict[str, Any]:
    return {
        "ModelPackageGroupName": GROUP,
        "ModelPackageVersion": version,
        "ModelPackageArn": f"{ARN}/{version}",
        "CreationTime": CREATED,
        "ModelPackageStatus": status,
        "ModelApprovalStatus": "Approved",
    }


def description(version: int, url: str | None = MODEL_URL) -> dict[str, Any]:
    container: dict[str, Any] = {"Image": "123.dkr.ecr.eu-west-1.amazonaws.com/linear-learner:1"}
    if url:
        container["ModelDataUrl"] = url
    return {
        "ModelPackageName": GROUP,
        "ModelPackageGroupName": GROUP,
        "ModelPackageVersion": version,
        "ModelPackageArn": f"{ARN}/{version}",
        "CreationTime": CREATED,
        "ModelPackageStatus": "Completed",
        "ModelPackageStatusDetails": {"ValidationStatuses": []},
        "ModelApprovalStatus": "Approved",
        "InferenceSpecification": {"Containers": [container], "SupportedContentTypes": ["text/csv"]},
    }


def body(data: bytes) -> StreamingBody:
    return StreamingBody(io.BytesIO(data), len(data))


# ------------------------------------------------------------------------------------------- the container module


def test_the_newest_approved_completed_version_is_the_champion_read_across_pages() -> None:
    sagemaker, stub, _, _ = stubbed_clients()
    # the newest approved version is still being created: the champion is the next Completed one, on the next page
    stub.add_response(
        "list_model_packages",
        {"ModelPackageSummaryList": [summary(9, "InProgress")], "NextToken": "page-2"},
        LIST_REQUEST,
    )
    stub.add_response(
        "list_model_packages",
        {"ModelPackageSummaryList": [summary(7), summary(4)]},
        {**LIST_REQUEST, "NextToken": "page-2"},
    )
    stub.add_response("describe_model_package", description(7), {"ModelPackageName": f"{ARN}/7"})
    with stub:
        champion = find_champion(sagemaker, GROUP)
    stub.assert_no_pending_responses()
    assert champion == Champion(f"{ARN}/7", GROUP, 7, MODEL_URL)


def test_no_approved_version_or_no_group_yet_means_no_champion() -> None:
    sagemaker, stub, _, _ = stubbed_clients()
    stub.add_response("list_model_packages", {"ModelPackageSummaryList": []}, LIST_REQUEST)
    stub.add_client_error("list_model_packages", "ResourceNotFound", "group does not exist", 400, LIST_REQUEST)
    with stub:
        assert find_champion(sagemaker, GROUP) is None
        assert find_champion(sagemaker, GROUP) is None
    stub.assert_no_pending_responses()


def test_a_registry_that_cannot_be_read_fails_rather_than_passing_the_challenger() -> None:
    sagemaker, stub, _, _ = stubbed_clients()
    stub.add_client_error("list_model_packages", "AccessDeniedException", "not authorized", 400, LIST_REQUEST)
    stub.add_response("list_model_packages", {"ModelPackageSummaryList": [summary(3)]}, LIST_REQUEST)
    stub.add_response("describe_model_package", description(3, url=None), {"ModelPackageName": f"{ARN}/3"})
    with stub:
        with pytest.raises(ChampionError, match=f"model package group {GROUP}: cannot list .*AccessDeniedException"):
            find_champion(sagemaker, GROUP)
        with pytest.raises(ChampionError, match=r"champion .*/3: InferenceSpecification.Containers\[0\].ModelDataUrl"):
            find_champion(sagemaker, GROUP)


def test_the_artifact_is_fetched_with_one_get_object_and_never_left_half_written(tmp_path: Path) -> None:
    _, _, s3, stub = stubbed_clients()
    champion = Champion(f"{ARN}/7", GROUP, 7, MODEL_URL)
    expected = {"Bucket": "models-bucket", "Key": "churn/train/job-7/output/model.tar.gz"}
    stub.add_response("get_object", {"Body": body(b"model bytes" * 1000), "ContentLength": 11000}, expected)
    stub.add_client_error("get_object", "NoSuchKey", "The specified key does not exist.", 404, expected)
    with stub:
        path = download_model(s3, champion, tmp_path / "one")
        assert path.read_bytes() == b"model bytes" * 1000
        with pytest.raises(ChampionError, match=f"cannot download {MODEL_URL}: .*NoSuchKey"):
            download_model(s3, champion, tmp_path / "two")
    assert list((tmp_path / "two").iterdir()) == []
    stub.assert_no_pending_responses()


# ----------------------------------------------------------------------------------------- Evaluate's comparison


def champion_artifact(weights: list[float], bias: float) -> bytes:
    model = LinearModel(
        "binary_classifier", "logistic", np.asarray(weights, dtype=np.float32).reshape(-1, 1),
        np.asarray([bias], dtype=np.float32), threshold=0.5,
    )  # fmt: skip
    return artifact_bytes(model)


def job_with_champion(tmp_path: Path, artifact: bytes) -> tuple[Any, tuple[Path, Path, Path], list[Stubber]]:
    labels, scores, predicted = binary_case(400)
    records = [{"score": float(s), "predicted_label": int(p)} for s, p in zip(scores, predicted, strict=True)]
    paths = write_job_inputs(tmp_path, labels, records)
    sagemaker, sagemaker_stub, s3, s3_stub = stubbed_clients()
    sagemaker_stub.add_response("list_model_packages", {"ModelPackageSummaryList": [summary(2)]}, LIST_REQUEST)
    sagemaker_stub.add_response("describe_model_package", description(2), {"ModelPackageName": f"{ARN}/2"})
    s3_stub.add_response(
        "get_object",
        {"Body": body(artifact), "ContentLength": len(artifact)},
        {"Bucket": "models-bucket", "Key": "churn/train/job-7/output/model.tar.gz"},
    )
    return (lambda region: (sagemaker, s3)), paths, [sagemaker_stub, s3_stub]


def test_evaluate_scores_the_champion_on_the_same_records_with_the_same_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clients, (predictions_dir, test_dir, output_dir), stubs = job_with_champion(
        tmp_path, champion_artifact([0.8, -0.3, 0.1], 0.2)
    )
    monkeypatch.setattr("evaluation.gate.aws_clients", clients)
    settings = GateSettings(0.6, 0.05, GROUP, REGION)
    with stubs[0], stubs[1]:
        report = evaluate(predictions_dir, test_dir, output_dir, "binary_classifier", 30, 0, gate=settings)
    for stub in stubs:
        stub.assert_no_pending_responses()

    # the champion's scores recomputed independently: the same test features (write_job_inputs' generator)
    labels = binary_case(400)[0].astype(int)
    features = np.random.default_rng(7).normal(size=(400, 3)).astype(np.float32)
    champion_scores = 1 / (1 + np.exp(-(features @ np.array([0.8, -0.3, 0.1], np.float32) + np.float32(0.2))))
    champion = report["champion"]
    assert champion["model_package_arn"] == f"{ARN}/2" and champion["version"] == 2
    assert champion["model_data_url"] == MODEL_URL
    auc = champion["binary_classification_metrics"]["auc"]["value"]
    assert auc == pytest.approx(skm.roc_auc_score(labels, champion_scores), abs=1e-9)
    assert champion["gate"] == {"metric": "auc", "value": auc}
    assert set(champion["binary_classification_metrics"]) == set(report["binary_classification_metrics"])
    challenger = report["gate"]["value"]
    assert report["decision"] == {
        "promote": challenger >= 0.6 and challenger >= auc - 0.05,
        "metric": "auc",
        "challenger_value": challenger,
        "metric_threshold": 0.6,
        "threshold_floor": 0.6,  # MetricThreshold as set: the automatic floor is computed, not applied
        "automatic_floor": {**report["decision"]["automatic_floor"], "applied": False},
        "defaults_floor": "none",  # not a tuned run
        "kept_model": "none",
        "model_data_url": "none",
        "raw_columns_note": "",  # no raw rows given
        "champion_model_package_arn": f"{ARN}/2",
        "champion_value": auc,
        "champion_tolerance": 0.05,
        "champion_floor": auc - 0.05,
        # no train channel given: no baseline, and its floor is the challenger's own value (the condition holds)
        "baseline_value": "none",
        "baseline_tolerance": -1.0,
        "baseline_floor": challenger,
        # each floor named for what it is, in the QualityGateFailed step's message
        "floors": f"the champion's floor {auc - 0.05} (champion version 2's auc {auc} minus ChampionTolerance 0.05);"
        f" the baseline's floor {challenger} (BaselineTolerance -1 is negative, so off: the challenger's own value)",
        "reason": report["decision"]["reason"],
    }
    assert f"champion version 2 (auc {auc:.6g} on this test split)" in report["decision"]["reason"]
    written = json.loads((output_dir / "evaluation.json").read_text())
    assert written["decision"] == report["decision"] and written["champion"]["version"] == 2


def test_a_champion_whose_artifact_cannot_be_read_fails_evaluate_and_writes_no_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clients, (predictions_dir, test_dir, output_dir), stubs = job_with_champion(tmp_path, b"\x1f\x8b not a model")
    monkeypatch.setattr("evaluation.gate.aws_clients", clients)
    with stubs[0], stubs[1], pytest.raises(EvaluationError) as raised:
        evaluate(predictions_dir, test_dir, output_dir, "binary_classifier", 2, 0, gate=GateSettings(0.6, 0, GROUP))
    assert str(raised.value).startswith(f"champion {ARN}/2 ({MODEL_URL}): cannot read its model artifact: ")
    assert not (output_dir / "evaluation.json").exists()


def test_a_champion_of_another_kind_or_width_cannot_be_compared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    regressor = LinearModel("regressor", "squared_loss", np.ones((3, 1), np.float32), np.zeros(1, np.float32))
    clients, paths, stubs = job_with_champion(tmp_path / "kind", artifact_bytes(regressor))
    monkeypatch.setattr("evaluation.gate.aws_clients", clients)
    with stubs[0], stubs[1], pytest.raises(EvaluationError, match="is a regressor, this execution evaluates a binary"):
        evaluate(*paths, "binary_classifier", 2, 0, gate=GateSettings(0.6, 0, GROUP))
    clients, paths, stubs = job_with_champion(tmp_path / "width", champion_artifact([1.0, 2.0], 0.0))
    monkeypatch.setattr("evaluation.gate.aws_clients", clients)
    # before: "cannot read its model artifact: /tmp/champion-.../champion-model.tar.gz: ...: the model takes 2
    # features, the data has 3": as if damaged, named by the job's temporary copy, with nothing to do about it
    width = (
        rf"^champion {ARN}/2 \({MODEL_URL}\) takes 2 features, this execution's data has 3: it was trained on other "
        r"columns \(or another HashBuckets\), so the two cannot be compared \(reject the champion or register into "
        r"another model package group\)$"
    )
    with stubs[0], stubs[1], pytest.raises(EvaluationError, match=width):
        evaluate(*paths, "binary_classifier", 2, 0, gate=GateSettings(0.6, 0, GROUP))


def test_a_champion_that_scores_nan_fails_evaluate_naming_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clients, paths, stubs = job_with_champion(tmp_path, champion_artifact([float("nan"), 1.0, 1.0], 0.0))
    monkeypatch.setattr("evaluation.gate.aws_clients", clients)
    with stubs[0], stubs[1], pytest.raises(EvaluationError, match=r"record 0 of the test split scores nan, not finite"):
        evaluate(*paths, "binary_classifier", 2, 0, gate=GateSettings(0.6, 0, GROUP))


@pytest.mark.parametrize(
    ("value", "threshold", "champion_value", "tolerance", "promote", "floor"),
    [
        (0.80, 0.6, None, 0.0, True, 0.80),  # no champion: the threshold alone decides
        (0.55, 0.6, None, 0.0, False, 0.55),
        (0.80, 0.6, 0.80, 0.0, True, 0.80),  # as good as the champion is good enough
        (0.79, 0.6, 0.80, 0.0, False, 0.80),
        (0.79, 0.6, 0.80, 0.02, True, 0.78),  # within the tolerance
        (0.59, 0.6, 0.50, 0.0, False, 0.50),  # beats the champion, misses the threshold
    ],
)
def test_the_decision_needs_the_threshold_and_the_champion_floor(
    value: float, threshold: float, champion_value: float | None, tolerance: float, promote: bool, floor: float
) -> None:
    champion = None
    if champion_value is not None:
        champion = {"model_package_arn": f"{ARN}/1", "version": 1, "gate": {"metric": "auc", "value": champion_value}}
    decision = decide("auc", value, GateSettings(threshold, tolerance, GROUP), champion, GROUP)
    assert decision["promote"] is promote
    assert decision["champion_floor"] == pytest.approx(floor)
    # the pipeline's Condition step decides the same from the report: gate >= threshold and gate >= floor
    assert (value >= threshold and value >= decision["champion_floor"]) is promote
    assert decision["champion_value"] == (champion_value if champion else "none")
    if champion is None:
        assert decision["reason"].endswith(
            f"no approved champion (model package group {GROUP}): the threshold alone decides"
        )
        assert decision["floors"].startswith(
            f"the champion's floor {value} (no approved champion: the challenger's own value)"
        )
    else:
        assert f"ChampionTolerance {tolerance:g}" in decision["reason"]


def test_gate_settings_reject_a_negative_or_missing_tolerance() -> None:
    with pytest.raises(EvaluationError, match="ChampionTolerance is -0.1, expected a finite number >= 0"):
        GateSettings(0.6, -0.1)
    with pytest.raises(EvaluationError, match="MetricThreshold is nan"):
        GateSettings(math.nan)


# -------------------------------------------------------------------------------- the local stand-in endpoint


def register(registry: LocalRegistry, version_url: str, status: str) -> str:
    request = {
        "ModelPackageGroupName": GROUP,
        "ModelApprovalStatus": status,
        "InferenceSpecification": {
            "Containers": [
                {"Image": "123.dkr.ecr.eu-west-1.amazonaws.com/linear-learner:1", "ModelDataUrl": version_url}
            ],
            "SupportedContentTypes": ["text/csv"],
            "SupportedResponseMIMETypes": ["application/jsonlines"],
        },
        "ModelMetrics": {"ModelQuality": {"Statistics": {"ContentType": "application/json", "S3Uri": "s3://b/e.json"}}},
        "MetadataProperties": {"GeneratedBy": "arn:aws:sagemaker:eu-west-1:123456789012:pipeline/p/execution/e1"},
        "CustomerMetadataProperties": {"ChampionModelPackageArn": "none"},
    }
    return registry.register(request, region=REGION, account=ACCOUNT).arn


@pytest.fixture
def endpoint(tmp_path: Path) -> Any:
    s3 = LocalS3(tmp_path / "s3")
    registry = LocalRegistry(tmp_path / "registry.db")
    for version, status in enumerate(("Approved", "Rejected", "Approved", "PendingManualApproval"), start=1):
        register(registry, f"s3://models-bucket/run-{version}/model.tar.gz", status)
        s3.put_bytes(f"s3://models-bucket/run-{version}/model.tar.gz", f"model {version}".encode())
    with serve(s3, registry.db_path, REGION) as running:
        session = aws_session(REGION)
        yield (
            running,
            session.client("sagemaker", endpoint_url=running.url),
            session.client("s3", endpoint_url=running.url),
        )


def test_the_endpoint_lists_as_sagemaker_does_ascending_by_default_filtered_and_paged(endpoint: Any) -> None:
    running, sagemaker, _ = endpoint
    everything = sagemaker.list_model_packages(ModelPackageGroupName=GROUP)["ModelPackageSummaryList"]
    assert [s["ModelPackageVersion"] for s in everything] == [1, 2, 3, 4]  # the default order is ascending
    assert isinstance(everything[0]["CreationTime"], datetime)
    approved = sagemaker.list_model_packages(**{**LIST_REQUEST, "ModelPackageGroupName": GROUP, "MaxResults": 1})
    assert [s["ModelPackageVersion"] for s in approved["ModelPackageSummaryList"]] == [3]
    second = sagemaker.list_model_packages(**{**LIST_REQUEST, "MaxResults": 1, "NextToken": approved["NextToken"]})
    assert [s["ModelPackageVersion"] for s in second["ModelPackageSummaryList"]] == [1]
    assert "NextToken" not in second
    assert second["ModelPackageSummaryList"][0]["ModelPackageStatus"] == "Completed"
    assert sagemaker.list_model_packages(ModelPackageGroupName="no-such-group")["ModelPackageSummaryList"] == []
    assert running.endpoint.requests[:2] == [
        {"service": "sagemaker", "operation": "ListModelPackages", "parameters": {"ModelPackageGroupName": GROUP}},
        {"service": "sagemaker", "operation": "ListModelPackages", "parameters": {**LIST_REQUEST, "MaxResults": 1}},
    ]


def test_the_endpoint_describes_packages_and_serves_s3_objects(endpoint: Any, tmp_path: Path) -> None:
    running, sagemaker, s3 = endpoint
    described = sagemaker.describe_model_package(ModelPackageName=f"{ARN}/3")
    assert described["ModelPackageVersion"] == 3 and described["ModelApprovalStatus"] == "Approved"
    container = described["InferenceSpecification"]["Containers"][0]
    assert container["ModelDataUrl"] == "s3://models-bucket/run-3/model.tar.gz"
    assert described["CustomerMetadataProperties"] == {"ChampionModelPackageArn": "none"}
    assert described["ModelMetrics"]["ModelQuality"]["Statistics"]["S3Uri"] == "s3://b/e.json"
    with pytest.raises(ClientError, match="ValidationException.*does not exist"):
        sagemaker.describe_model_package(ModelPackageName=f"{ARN}/99")

    assert s3.get_object(Bucket="models-bucket", Key="run-3/model.tar.gz")["Body"].read() == b"model 3"
    assert s3.head_object(Bucket="models-bucket", Key="run-3/model.tar.gz")["ContentLength"] == 7
    listed = s3.list_objects_v2(Bucket="models-bucket", Prefix="run-")
    assert [item["Key"] for item in listed["Contents"]] == [f"run-{v}/model.tar.gz" for v in (1, 2, 3, 4)]
    with pytest.raises(ClientError, match="NoSuchKey"):
        s3.get_object(Bucket="models-bucket", Key="run-9/model.tar.gz")
    with pytest.raises(ClientError, match="UnknownOperationException"):
        sagemaker.list_model_package_groups()
    assert [(r["service"], r["operation"]) for r in running.endpoint.requests] == [
        ("sagemaker", "DescribeModelPackage"),
        ("sagemaker", "DescribeModelPackage"),
        ("s3", "GetObject"),
        ("s3", "HeadObject"),
        ("s3", "ListObjectsV2"),
        ("s3", "GetObject"),
        ("sagemaker", "ListModelPackageGroups"),
    ]


def test_the_container_module_finds_and_fetches_the_champion_through_the_endpoint(
    endpoint: Any, tmp_path: Path
) -> None:
    running, sagemaker, s3 = endpoint
    champion = find_champion(sagemaker, GROUP)
    assert champion == Champion(f"{ARN}/3", GROUP, 3, "s3://models-bucket/run-3/model.tar.gz")
    assert download_model(s3, champion, tmp_path / "download").read_bytes() == b"model 3"
    assert running.endpoint.requests == [
        {"service": "sagemaker", "operation": "ListModelPackages", "parameters": LIST_REQUEST},
        {"service": "sagemaker", "operation": "DescribeModelPackage", "parameters": {"ModelPackageName": f"{ARN}/3"}},
        {
            "service": "s3",
            "operation": "GetObject",
            "parameters": {"Bucket": "models-bucket", "Key": "run-3/model.tar.gz"},
        },
    ]
    assert running.environment()["AWS_ENDPOINT_URL"] == running.url and running.url.startswith("http://127.0.0.1:")


# ------------------------------------------------------------------------- a local processing job's AWS access

JOB_SCRIPT = """
import json, os, pathlib, sys
import boto3
result = {name: os.environ.get(name) for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_REGION")}
try:
    listed = boto3.client("sagemaker").list_model_packages(ModelPackageGroupName="churn-models", SortOrder="Descending")
    result["versions"] = [summary["ModelPackageVersion"] for summary in listed["ModelPackageSummaryList"]]
    result["object"] = boto3.client("s3").get_object(Bucket="bkt", Key="code/job.py")["Body"].read().decode()[:6]
except Exception as error:
    result["error"] = type(error).__name__
pathlib.Path(sys.argv[1], "result.json").write_text(json.dumps(result))
"""


def aws_job_definition(isolated: bool) -> dict[str, Any]:
    return {
        "Version": "2020-12-01",
        "Parameters": [],
        "Steps": [
            {
                "Name": "Job",
                "Type": "Processing",
                "Arguments": {
                    "ProcessingResources": {"ClusterConfig": {"InstanceCount": 1}},
                    "AppSpecification": {
                        "ImageUri": "sklearn-image",
                        "ContainerEntrypoint": ["python3", "/opt/ml/processing/input/code/job.py"],
                        "ContainerArguments": ["/opt/ml/processing/output"],
                    },
                    "NetworkConfig": {"EnableNetworkIsolation": isolated},
                    "ProcessingInputs": [
                        {
                            "InputName": "code",
                            "S3Input": {"S3Uri": "s3://bkt/code/", "LocalPath": "/opt/ml/processing/input/code"},
                        }
                    ],
                    "ProcessingOutputConfig": {
                        "Outputs": [
                            {
                                "OutputName": "result",
                                "S3Output": {"S3Uri": "s3://bkt/out/", "LocalPath": "/opt/ml/processing/output"},
                            }
                        ]
                    },
                },
            }
        ],
    }


@pytest.mark.parametrize("isolated", [False, True])
def test_a_local_processing_job_reaches_the_registry_and_s3_through_boto3_unless_isolated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated: bool
) -> None:
    from pipeline.local.executions import ExecutionStore
    from pipeline.local.interpreter import Interpreter
    from pipeline.local.jobs import local_runners
    from pipeline.local.workdir import Workdir

    # this process's AWS configuration must not leak into the job: it would send the job to the real service
    monkeypatch.setenv("AWS_PROFILE", "someone-elses-profile")
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER", "http://127.0.0.1:9")
    s3 = LocalS3(tmp_path / "s3")
    s3.put_bytes("s3://bkt/code/job.py", JOB_SCRIPT.encode())
    registry = LocalRegistry(tmp_path / "registry.db")
    for status in ("Approved", "PendingManualApproval"):
        register(registry, "s3://bkt/code/job.py", status)
    interpreter = Interpreter(
        runners=local_runners(Workdir(tmp_path), region=REGION, account=ACCOUNT),
        store=ExecutionStore(tmp_path / "executions"),
        read_json=lambda uri: json.loads(s3.path(uri).read_text()),
        pipeline_name="aws-test",
    )
    record = interpreter.run(aws_job_definition(isolated), {})
    assert record.status == "Succeeded", record.failure_reason
    result = json.loads(s3.path("s3://bkt/out/result.json").read_text())
    assert result["AWS_PROFILE"] is None
    requests = record.folder / "steps" / "Job" / "aws-requests.json"
    if isolated:  # no endpoint, no credentials: like an isolated container, the job reaches no API
        assert result == {"AWS_ENDPOINT_URL": None, "AWS_PROFILE": None, "AWS_REGION": None, "error": "NoRegionError"}
        assert not requests.exists()
        return
    assert result["AWS_ENDPOINT_URL"].startswith("http://127.0.0.1:") and result["AWS_REGION"] == REGION
    assert result["versions"] == [2, 1] and result["object"] == "\nimpor"
    assert json.loads(requests.read_text()) == [
        {
            "service": "sagemaker",
            "operation": "ListModelPackages",
            "parameters": {"ModelPackageGroupName": GROUP, "SortOrder": "Descending"},
        },
        {"service": "s3", "operation": "GetObject", "parameters": {"Bucket": "bkt", "Key": "code/job.py"}},
    ]


def test_the_pipeline_role_lets_evaluate_read_the_champion() -> None:
    policy = json.loads((Path(__file__).resolve().parents[3] / "iam" / "pipeline-role-policy.json").read_text())
    grants: dict[str, set[str]] = {}
    for statement in policy["Statement"]:
        actions = [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
        resources = [statement["Resource"]] if isinstance(statement["Resource"], str) else statement["Resource"]
        for action in actions:
            grants.setdefault(action, set()).update(resources)
    group_versions = "arn:aws:sagemaker:${AWS_REGION}:${AWS_ACCOUNT_ID}:model-package/${MODEL_PACKAGE_GROUP}/*"
    assert grants["sagemaker:ListModelPackages"] == {"*"}  # a list action: no resource-level permissions
    assert group_versions in grants["sagemaker:DescribeModelPackage"]
    assert "arn:aws:s3:::${ARTIFACT_BUCKET}/*" in grants["s3:GetObject"]
    assert "${KMS_KEY_ARN}" in grants["kms:Decrypt"]


def test_the_champion_module_is_container_code_importing_boto3_only_when_it_looks_up() -> None:
    """Python 3.9 syntax; the standard library at import time; boto3/botocore (in the image) only inside functions."""
    import ast
    import sys

    tree = ast.parse(
        (Path(__file__).resolve().parents[3] / "evaluation" / "champion.py").read_text(), feature_version=(3, 9)
    )

    def modules(nodes: list[ast.stmt]) -> set[str]:
        found = {alias.name.split(".")[0] for node in nodes if isinstance(node, ast.Import) for alias in node.names}
        return found | {node.module.split(".")[0] for node in nodes if isinstance(node, ast.ImportFrom) and node.module}

    top_level = modules(tree.body)
    everywhere = modules(list(ast.walk(tree)))
    assert top_level <= set(sys.stdlib_module_names)
    assert everywhere - set(sys.stdlib_module_names) == {"boto3", "botocore"}


# ------------------------------------------------------------------------------------------------------ plots


def report_with_champion(predictor_type: str) -> dict[str, Any]:
    """A challenger and a champion scored by Evaluate's own code on the same 300 records."""
    from containerlib.predictions import Scored
    from evaluation.gate import champion_section
    from evaluation.report import build_report

    generator = np.random.default_rng(3)
    if predictor_type == "regressor":
        labels = generator.normal(size=300)
        ours, theirs = labels + generator.normal(scale=0.3, size=300), labels + generator.normal(scale=0.9, size=300)
        scored = [Scored(labels, ours, None, 1), Scored(labels, theirs, None, 1)]
    else:
        classes = 2 if predictor_type == "binary_classifier" else 3
        labels = generator.integers(0, classes, size=300).astype(float)
        scored = []
        for noise in (0.5, 2.0):
            logits = np.eye(classes)[labels.astype(int)] * 2 + generator.normal(scale=noise, size=(300, classes))
            probabilities = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
            scores = probabilities[:, 1] if classes == 2 else probabilities
            scored.append(Scored(labels, scores, np.argmax(probabilities, axis=1), 1))
    report = build_report(scored[0], predictor_type, 2, 0)
    champion = Champion(f"{ARN}/2", GROUP, 2, MODEL_URL)
    report["champion"] = champion_section(champion, build_report(scored[1], predictor_type, 2, 0), predictor_type)
    return report


@pytest.mark.parametrize(
    ("predictor_type", "files"),
    [
        ("binary_classifier", ["confusion_matrix.png", "precision_recall_curve.png", "roc_curve.png"]),
        ("multiclass_classifier", ["champion_confusion_matrix.png", "confusion_matrix.png"]),
        ("regressor", ["predicted_vs_actual.png", "residuals.png"]),
    ],
)
def test_plots_draw_the_champion_beside_the_new_model(tmp_path: Path, predictor_type: str, files: list[str]) -> None:
    from pipeline.api import plots

    report = report_with_champion(predictor_type)
    path = tmp_path / "evaluation.json"
    path.write_text(json.dumps(report))
    rendered = plots.render_plots(path, tmp_path / "plots")
    assert sorted(p.name for p in rendered) == files and all(p.stat().st_size > 0 for p in rendered)
    champion_auc = report["champion"].get("binary_classification_metrics", {}).get("auc", {}).get("value")
    if predictor_type == "binary_classifier":
        metrics = report["binary_classification_metrics"]
        champion = (report["champion"]["binary_classification_metrics"], "2")
        for figure in (
            plots._roc_figure(metrics, path, champion),
            plots._precision_recall_figure(metrics, path, champion),
        ):
            legend = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
            assert any(label.startswith("champion v2") for label in legend), legend
        roc_legend = [t.get_text() for t in plots._roc_figure(metrics, path, champion).axes[0].get_legend().get_texts()]
        assert f"champion v2 (AUC {champion_auc:.3f})" in roc_legend
    if predictor_type == "regressor":
        labels = np.asarray(report["prediction_sample"]["labels"])
        sample = plots._champion_sample(report["champion"], labels)
        assert sample is not None and sample[1] == "2"
        np.testing.assert_array_equal(sample[0], report["champion"]["prediction_sample"]["predictions"])


def test_the_jobs_aws_clients_are_made_once_per_region_and_aws_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Evaluate asks for its clients up to three times; each new boto3 session would load the SageMaker service's
    model again. Same region and AWS_* variables: the same clients; another region or endpoint: new ones."""
    from evaluation.champion import aws_clients

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    sagemaker, s3 = aws_clients("us-west-2")
    assert aws_clients("us-west-2") == (sagemaker, s3)
    assert sagemaker.meta.service_model.service_name == "sagemaker" and s3.meta.region_name == "us-west-2"
    assert aws_clients("eu-west-1")[1].meta.region_name == "eu-west-1"
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    moved = aws_clients("us-west-2")
    assert moved[1] is not s3 and moved[1].meta.endpoint_url == "http://127.0.0.1:9"
