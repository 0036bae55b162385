"""``llpipe deploy --sagemaker``: the exact request sequences of a first deployment, an update, a service rollback,
a worse version refused, a failed smoke test restoring the previous version, a no-op and the promotion to prod.

Botocore's Stubber asserts every SageMaker, sagemaker-runtime, CloudWatch and S3 request in order (per client) with
its exact parameters. The test split is real: RecordIO-protobuf shards of scikit-learn's breast cancer table written
by the project's codec, and batch transform's answers for them formatted by the local Linear Learner's
``prediction_lines`` from two real models (a logistic regression on every feature, and a worse one on one feature).
"""

from __future__ import annotations

import io
import json
import re
import tarfile
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pytest
from botocore.response import StreamingBody
from support.aws_stubs import StubbedSession

from containerlib.linear_learner.model import LinearModel
from containerlib.recordio import write_dense
from pipeline import cli
from pipeline.core.botocore_session import new_botocore_session
from pipeline.core.deployment import DeployError, Version, deploy
from pipeline.core.names import JSONLINES, RECORDIO
from pipeline.definition.config import PipelineConfig
from pipeline.linear_learner.inference import prediction_lines
from pipeline.sagemaker import aws
from pipeline.sagemaker import endpoint_requests as requests
from pipeline.sagemaker.endpoints import SageMakerEndpoints

ACCOUNT = "111122223333"
KEY = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
CONFIG = PipelineConfig(
    region="us-east-1",
    role_arn=f"arn:aws:iam::{ACCOUNT}:role/PipelineRole",
    bucket="my-bucket",
    pipeline_name="churn",
    model_package_group="churn-models",
    kms_key_id=KEY,
    tags=(("team", "ml"),),
)
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
STAGING, PROD = "churn-staging", "churn-prod"
EXECUTION = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:pipeline/churn/execution/"
TRANSFORM_JOB = "pipelines-abc-Transform-1a2b3c"
PREFIX = "churn/{}/preprocess/test"
SHARDS = ("part-algo-1.rec", "part-algo-2.rec")


def arn(version: int) -> str:
    return f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:model-package/churn-models/{version}"


@dataclass(frozen=True)
class Split:
    """Two test shards (40 and 20 rows) and each model's batch-transform answers for them."""

    shards: tuple[bytes, ...]
    answers: dict[str, tuple[bytes, ...]]  # model -> .out per shard


def _model(X: np.ndarray, y: np.ndarray) -> LinearModel:
    from sklearn.linear_model import LogisticRegression

    fitted = LogisticRegression(max_iter=2000).fit(X, y)
    return LinearModel("binary_classifier", "logistic", fitted.coef_.T.astype(np.float32), fitted.intercept_)


@pytest.fixture(scope="module")
def split() -> Split:
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    X = ((X - X.mean(axis=0)) / X.std(axis=0)).astype(np.float32)
    good = _model(X[60:], y[60:])
    one = np.zeros_like(X)
    one[:, 3] = X[:, 3]  # mean area alone: a real but much worse model
    worse = _model(one[60:], y[60:])
    parts = [(X[:40], y[:40]), (X[40:60], y[40:60])]
    shards = []
    for features, labels in parts:
        buffer = io.BytesIO()
        write_dense(buffer, features, labels)
        shards.append(buffer.getvalue())
    answers = {
        name: tuple(("\n".join(prediction_lines(model, features)) + "\n").encode() for features, _ in parts)
        for name, model in (("good", good), ("worse", worse))
    }
    return Split(tuple(shards), answers)


def body(data: bytes) -> StreamingBody:
    return StreamingBody(io.BytesIO(data), len(data))


def containers(number: int) -> tuple[dict[str, Any], ...]:
    """The version's inference pipeline as RegisterModel registers it: featurizer, Linear Learner, labels."""
    sklearn = "683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-scikit-learn:1.2-1-cpu-py3"
    featurizer_data = f"s3://churn-bucket/churn/e{number}/preprocess/model/model.tar.gz"

    def script(role: str) -> dict[str, Any]:
        environment = {"LLPIPE_SERVING_ROLE": role, "SAGEMAKER_PROGRAM": "inference.py"}
        environment["SAGEMAKER_SUBMIT_DIRECTORY"] = "s3://churn-bucket/churn/code/abc/sourcedir.tar.gz"
        return {"Image": sklearn, "ModelDataUrl": featurizer_data, "Environment": environment}

    linear_learner = {
        "Image": "382416733822.dkr.ecr.us-east-1.amazonaws.com/linear-learner:1",
        "ModelDataUrl": f"s3://churn-bucket/churn/e{number}/train/model.tar.gz",
        "Environment": {},
    }
    return (script("featurizer"), linear_learner, script("labels"))


def version(number: int) -> Version:
    return Version(arn(number), number, "churn-models", "Approved", f"{EXECUTION}e{number}", containers(number))


# ------------------------------------------------------------------------------------------------ expectations


def expect_package(stub: Any, number: int, status: str = "Approved", listed: bool = True) -> None:
    """ListModelPackages (latest-approved; not for an ARN) and DescribeModelPackage with the execution that made it."""
    if listed:
        stub.add_response(
            "list_model_packages",
            {
                "ModelPackageSummaryList": [
                    {
                        "ModelPackageArn": arn(number),
                        "ModelPackageGroupName": "churn-models",
                        "ModelPackageVersion": number,
                        "CreationTime": NOW,
                        "ModelPackageStatus": "Completed",
                        "ModelApprovalStatus": status,
                    }
                ]
            },
            {
                "ModelPackageGroupName": "churn-models",
                "ModelApprovalStatus": "Approved",
                "SortBy": "CreationTime",
                "SortOrder": "Descending",
                "MaxResults": 1,
            },
        )
    stub.add_response(
        "describe_model_package",
        {
            "ModelPackageName": "churn-models",
            "ModelPackageGroupName": "churn-models",
            "ModelPackageArn": arn(number),
            "ModelPackageVersion": number,
            "CreationTime": NOW,
            "ModelPackageStatus": "Completed",
            "ModelPackageStatusDetails": {"ValidationStatuses": []},
            "ModelApprovalStatus": status,
            # SageMaker Pipelines' RegisterModel records the execution (the EventBridge sample carries it too)
            "MetadataProperties": {"GeneratedBy": f"{EXECUTION}e{number}"},
            "InferenceSpecification": {
                "Containers": list(containers(number)),
                "SupportedContentTypes": ["text/csv", "application/json"],
                "SupportedResponseMIMETypes": ["application/json"],
            },
        },
        {"ModelPackageName": arn(number)},
    )


def not_found(stub: Any, operation: str, message: str, parameters: dict[str, Any]) -> None:
    stub.add_client_error(operation, "ValidationException", message, 400, expected_params=parameters)


def endpoint_answer(endpoint: str, status: str, config: str, reason: str | None = None) -> dict[str, Any]:
    answer = {
        "EndpointName": endpoint,
        "EndpointArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:endpoint/{endpoint}",
        "EndpointConfigName": config,
        "EndpointStatus": status,
        "CreationTime": NOW,
        "LastModifiedTime": NOW,
    }
    return {**answer, "FailureReason": reason} if reason else answer


def config_arn(name: str) -> str:
    return f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:endpoint-config/{name}"


def expect_live(stub: Any, endpoint: str, number: int | None, passed: bool = True, status: str = "InService") -> None:
    """DescribeEndpoint (not found when ``number`` is None), DescribeEndpointConfig and ListTags of the config."""
    if number is None:
        not_found(stub, "describe_endpoint", f'Could not find endpoint "{endpoint}".', {"EndpointName": endpoint})
        return
    name = config_name(endpoint, number)
    stub.add_response("describe_endpoint", endpoint_answer(endpoint, status, name), {"EndpointName": endpoint})
    stub.add_response(
        "describe_endpoint_config",
        {
            "EndpointConfigName": name,
            "EndpointConfigArn": config_arn(name),
            "ProductionVariants": [{"VariantName": "AllTraffic", "ModelName": model_name(endpoint, number)}],
            "CreationTime": NOW,
        },
        {"EndpointConfigName": name},
    )
    tags = [
        {"Key": "llpipe:model-package-arn", "Value": arn(number)},
        {"Key": "llpipe:model-package-version", "Value": str(number)},
        {"Key": "llpipe:pipeline-execution-arn", "Value": f"{EXECUTION}e{number}"},
        {"Key": "llpipe:stage", "Value": endpoint.rsplit("-", 1)[-1]},
    ]
    if passed:
        tags.append({"Key": "llpipe:smoke-test", "Value": "passed: 60 rows at 2026-01-01T00:00:00Z"})
    stub.add_response("list_tags", {"Tags": tags}, {"ResourceArn": config_arn(name)})


COLUMNS = ("tenure", "minutes", "calls", "plan")


def featurizer_archive(columns: tuple[str, ...]) -> bytes:
    """A featurizer's model.tar.gz as Preprocess writes it: the run's schema (feature_columns) and its summary."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, document in (("schema.json", {"feature_columns": list(columns)}), ("summary.json", {})):
            data = json.dumps(document).encode()
            member = tarfile.TarInfo(name)
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    return buffer.getvalue()


def expect_columns(
    session: StubbedSession, live: int, candidate: int, live_columns: tuple[str, ...] = COLUMNS,
    candidate_columns: tuple[str, ...] = COLUMNS,
) -> None:  # fmt: skip
    """DescribeModelPackage of the live version (by the ARN its config is tagged with), then GetObject of the live
    version's and the candidate's featurizer model data (their schemas' request columns)."""
    expect_package(session.stubs["sagemaker"], live, listed=False)
    for number, columns in ((live, live_columns), (candidate, candidate_columns)):
        session.stubs["s3"].add_response(
            "get_object",
            {"Body": body(featurizer_archive(columns))},
            {"Bucket": "churn-bucket", "Key": f"churn/e{number}/preprocess/model/model.tar.gz"},
        )


def expect_test_split(session: StubbedSession, split: Split, number: int, model: str, shards: int = 2) -> None:
    """The Transform step's job (ListPipelineExecutionSteps, DescribeTransformJob), then the shards and answers."""
    sagemaker, s3 = session.stubs["sagemaker"], session.stubs["s3"]
    execution = f"{EXECUTION}e{number}"
    job_arn = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:transform-job/{TRANSFORM_JOB.lower()}"
    sagemaker.add_response(
        "list_pipeline_execution_steps",
        {
            "PipelineExecutionSteps": [
                {"StepName": "Train", "StepStatus": "Succeeded", "Metadata": {}},
                {"StepName": "Transform", "StepStatus": "Succeeded", "Metadata": {"TransformJob": {"Arn": job_arn}}},
            ]
        },
        {"PipelineExecutionArn": execution, "SortOrder": "Ascending"},
    )
    prefix = PREFIX.format(f"e{number}")
    sagemaker.add_response(
        "describe_transform_job",
        {
            "TransformJobName": TRANSFORM_JOB,
            "TransformJobArn": job_arn,
            "TransformJobStatus": "Completed",
            "ModelName": "llpipe-model-abc",
            "TransformInput": {
                "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"s3://my-bucket/{prefix}"}},
                "ContentType": RECORDIO,
                "SplitType": "RecordIO",
            },
            "TransformOutput": {"S3OutputPath": f"s3://my-bucket/churn/e{number}/transform", "Accept": JSONLINES},
            "TransformResources": {"InstanceType": "ml.m5.large", "InstanceCount": 1},
            "CreationTime": NOW,
        },
        {"TransformJobName": TRANSFORM_JOB.lower()},  # as the ARN spells it (Describe*Job does not mind)
    )
    s3.add_response(
        "list_objects_v2",
        {"Contents": [{"Key": f"{prefix}/{name}"} for name in SHARDS], "IsTruncated": False},
        {"Bucket": "my-bucket", "Prefix": prefix},
    )
    for index in range(shards):
        shard = {"Bucket": "my-bucket", "Key": f"{prefix}/{SHARDS[index]}"}
        s3.add_response("get_object", {"Body": body(split.shards[index])}, shard)
        s3.add_response(
            "get_object",
            {"Body": body(split.answers[model][index])},
            {"Bucket": "my-bucket", "Key": f"churn/e{number}/transform/{SHARDS[index]}.out"},
        )


def expect_invoke(session: StubbedSession, endpoint: str, split: Split, model: str) -> None:
    """InvokeEndpoint with the 60 test records as batch transform read them; the answer of ``model``."""
    session.stubs["sagemaker-runtime"].add_response(
        "invoke_endpoint",
        {"Body": body(b"".join(split.answers[model])), "ContentType": JSONLINES},
        {"EndpointName": endpoint, "Body": b"".join(split.shards), "ContentType": RECORDIO, "Accept": JSONLINES},
    )


def model_name(endpoint: str, number: int) -> str:
    stage = endpoint.rsplit("-", 1)[-1]
    return requests.model_request(CONFIG, endpoint, stage, version(number))["ModelName"]


def config_name(endpoint: str, number: int) -> str:
    stage = endpoint.rsplit("-", 1)[-1]
    model = model_name(endpoint, number)
    return requests.endpoint_config_request(CONFIG, endpoint, stage, version(number), model)["EndpointConfigName"]


def version_tags(endpoint: str, number: int) -> list[dict[str, str]]:
    return [
        {"Key": "llpipe:model-package-arn", "Value": arn(number)},
        {"Key": "llpipe:model-package-version", "Value": str(number)},
        {"Key": "llpipe:pipeline-execution-arn", "Value": f"{EXECUTION}e{number}"},
        {"Key": "llpipe:stage", "Value": endpoint.rsplit("-", 1)[-1]},
        {"Key": "team", "Value": "ml"},
    ]


ALARM_COMMON = {
    "Namespace": "AWS/SageMaker",
    "Statistic": "Average",
    "Period": 60,
    "EvaluationPeriods": 3,
    "DatapointsToAlarm": 2,
    "ComparisonOperator": "GreaterThanThreshold",
    "TreatMissingData": "notBreaching",
    "Tags": [{"Key": "team", "Value": "ml"}],
}


def expect_resources(session: StubbedSession, endpoint: str, number: int, alarms_exist: bool = False) -> None:
    """DescribeModel/CreateModel, DescribeAlarms/PutMetricAlarm, DescribeEndpointConfig/CreateEndpointConfig."""
    sagemaker, cloudwatch = session.stubs["sagemaker"], session.stubs["cloudwatch"]
    stage = endpoint.rsplit("-", 1)[-1]
    model, name = model_name(endpoint, number), config_name(endpoint, number)
    not_found(sagemaker, "describe_model", f'Could not find model "{model}".', {"ModelName": model})
    sagemaker.add_response(
        "create_model",
        {"ModelArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:model/{model}"},
        {
            "ModelName": model,
            "ExecutionRoleArn": f"arn:aws:iam::{ACCOUNT}:role/PipelineRole",
            # the package's inference pipeline, container by container, called in order
            "Containers": list(containers(number)),
            "InferenceExecutionConfig": {"Mode": "Serial"},
            "Tags": version_tags(endpoint, number),
        },
    )
    names = [f"{endpoint}-5xx-errors", f"{endpoint}-model-latency"]
    present = [{"AlarmName": alarm} for alarm in names] if alarms_exist else []
    cloudwatch.add_response("describe_alarms", {"MetricAlarms": present}, {"AlarmNames": names})
    if not alarms_exist:
        dimensions = [{"Name": "EndpointName", "Value": endpoint}, {"Name": "VariantName", "Value": "AllTraffic"}]
        cloudwatch.add_response(
            "put_metric_alarm",
            {},
            {
                "AlarmName": names[0],
                "AlarmDescription": f"llpipe deploy: more than 1% of {endpoint}'s invocations fail with 5xx "
                "(rolls back)",
                "MetricName": "Invocation5XXErrors",
                "Threshold": 0.01,
                "Dimensions": dimensions,
                **ALARM_COMMON,
            },
        )
        cloudwatch.add_response(
            "put_metric_alarm",
            {},
            {
                "AlarmName": names[1],
                "AlarmDescription": f"llpipe deploy: {endpoint}'s mean model latency above 250 ms (rolls back)",
                "MetricName": "ModelLatency",
                "Threshold": 250000.0,
                "Dimensions": dimensions,
                **ALARM_COMMON,
            },
        )
    not_found(
        sagemaker,
        "describe_endpoint_config",
        f'Could not find endpoint configuration "{name}".',
        {"EndpointConfigName": name},
    )
    count = 1 if stage == "staging" else 2
    sagemaker.add_response(
        "create_endpoint_config",
        {"EndpointConfigArn": config_arn(name)},
        {
            "EndpointConfigName": name,
            "ProductionVariants": [
                {
                    "VariantName": "AllTraffic",
                    "ModelName": model,
                    "InitialInstanceCount": count,
                    "InstanceType": "ml.m5.large",
                    "InitialVariantWeight": 1.0,
                }
            ],
            "DataCaptureConfig": {
                "EnableCapture": True,
                "InitialSamplingPercentage": 20,
                "DestinationS3Uri": "s3://my-bucket/churn/datacapture",
                "CaptureOptions": [{"CaptureMode": "Input"}, {"CaptureMode": "Output"}],
                "CaptureContentTypeHeader": {
                    "CsvContentTypes": ["text/csv"],
                    "JsonContentTypes": [
                        "application/json",
                        "application/jsonlines",
                        "application/jsonl",
                        "application/x-jsonlines",
                        "application/x-ndjson",
                    ],
                },
                "KmsKeyId": KEY,
            },
            "KmsKeyId": KEY,
            "Tags": version_tags(endpoint, number),
        },
    )


def expect_update(sagemaker: Any, endpoint: str, number: int, statuses: list[tuple[str, int, str | None]]) -> None:
    """UpdateEndpoint blue/green with the rollback alarms, then one DescribeEndpoint per (status, config, reason)."""
    sagemaker.add_response(
        "update_endpoint",
        {"EndpointArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:endpoint/{endpoint}"},
        {
            "EndpointName": endpoint,
            "EndpointConfigName": config_name(endpoint, number),
            "DeploymentConfig": {
                "BlueGreenUpdatePolicy": {
                    "TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 0},
                    "TerminationWaitInSeconds": 300,
                },
                "AutoRollbackConfiguration": {
                    "Alarms": [{"AlarmName": f"{endpoint}-5xx-errors"}, {"AlarmName": f"{endpoint}-model-latency"}]
                },
            },
        },
    )
    expect_polls(sagemaker, endpoint, statuses)


def expect_polls(sagemaker: Any, endpoint: str, statuses: list[tuple[str, int, str | None]]) -> None:
    for status, number, reason in statuses:
        sagemaker.add_response(
            "describe_endpoint",
            endpoint_answer(endpoint, status, config_name(endpoint, number), reason),
            {"EndpointName": endpoint},
        )


def expect_pass_recorded(sagemaker: Any, endpoint: str, number: int) -> None:
    sagemaker.add_response(
        "add_tags",
        {"Tags": [{"Key": "llpipe:smoke-test", "Value": "passed: 60 rows at 2026-01-02T03:04:05Z"}]},
        {
            "ResourceArn": config_arn(config_name(endpoint, number)),
            "Tags": [{"Key": "llpipe:smoke-test", "Value": "passed: 60 rows at 2026-01-02T03:04:05Z"}],
        },
    )


def stubbed() -> StubbedSession:
    return StubbedSession("sagemaker", "sagemaker-runtime", "cloudwatch", "s3")


def target(session: StubbedSession, polls: list[float], **settings: Any) -> SageMakerEndpoints:
    return SageMakerEndpoints(CONFIG, session=session, poll_seconds=20, sleep=polls.append, now=lambda: NOW, **settings)


def run(session: StubbedSession, stage: str, requested: str | None = None, rows: int = 60) -> Any:
    polls: list[float] = []
    messages: list[str] = []
    outcome = deploy(target(session, polls), stage, requested, rows=rows, progress=messages.append)
    session.verify()
    return outcome, polls, messages


# ------------------------------------------------------------------------------------------------------ tests


def test_first_deployment_creates_model_alarms_config_endpoint_then_smoke_tests_and_records_the_pass(
    split: Split,
) -> None:
    session = stubbed()
    sagemaker = session.stubs["sagemaker"]
    expect_package(sagemaker, 3)
    expect_live(sagemaker, STAGING, None)
    expect_test_split(session, split, 3, "good")
    expect_resources(session, STAGING, 3)
    sagemaker.add_response(
        "create_endpoint",
        {"EndpointArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:endpoint/{STAGING}"},
        {
            "EndpointName": STAGING,
            "EndpointConfigName": config_name(STAGING, 3),
            "Tags": [{"Key": "llpipe:stage", "Value": "staging"}, {"Key": "team", "Value": "ml"}],
        },
    )
    expect_polls(sagemaker, STAGING, [("Creating", 3, None), ("Creating", 3, None), ("InService", 3, None)])
    expect_invoke(session, STAGING, split, "good")
    expect_pass_recorded(sagemaker, STAGING, 3)

    outcome, polls, messages = run(session, "staging")
    assert (outcome.status, outcome.exit_code, outcome.rollout.action) == ("deployed", 0, "created")
    assert outcome.smoke.consistency.passed and outcome.smoke.quality is None  # nothing was live to compare with
    assert outcome.smoke.rows == 60 and polls == [20, 20]
    assert [m.split(" after ")[0] for m in messages if m.startswith(f"{STAGING}:")] == [
        f"{STAGING}: Creating",
        f"{STAGING}: InService",
    ]
    assert re.fullmatch(r"churn-staging-v3-[0-9a-f]{8}", config_name(STAGING, 3))


def test_an_update_compares_quality_with_the_live_version_then_shifts_blue_green(split: Split) -> None:
    session = stubbed()
    sagemaker = session.stubs["sagemaker"]
    expect_package(sagemaker, 3)
    expect_live(sagemaker, STAGING, 2)
    expect_columns(session, live=2, candidate=3)  # the same request columns
    expect_test_split(session, split, 3, "good")
    expect_invoke(session, STAGING, split, "good")  # the live version 2 answers the same rows (as well)
    expect_resources(session, STAGING, 3, alarms_exist=True)  # alarms present: left as they are
    expect_update(sagemaker, STAGING, 3, [("Updating", 3, None), ("InService", 3, None)])
    expect_invoke(session, STAGING, split, "good")
    expect_pass_recorded(sagemaker, STAGING, 3)

    outcome, polls, _ = run(session, "staging")
    assert (outcome.status, outcome.rollout.action, outcome.previous.version) == ("deployed", "updated", 2)
    quality = outcome.smoke.quality
    assert quality.metric == "auc" and quality.passed and quality.candidate == quality.live > 0.95


def test_a_version_with_other_request_columns_is_refused_before_anything_changes_unless_allowed(
    split: Split,
) -> None:
    """Version 3 needs CustomerID and no longer takes calls: refused after reading the two schemas, with no
    UpdateEndpoint (or any other change) sent; with allow_new_columns it rolls out and the outcome notes the change."""
    changed = ("CustomerID", "tenure", "minutes", "plan")
    session = stubbed()
    sagemaker = session.stubs["sagemaker"]
    expect_package(sagemaker, 3)
    expect_live(sagemaker, STAGING, 2)
    expect_columns(session, live=2, candidate=3, candidate_columns=changed)
    with pytest.raises(DeployError) as refused:
        run(session, "staging")  # verifies every stubbed request was made, and nothing else can be
    message = refused.value.worded(cli.flag)
    assert "version 3 takes other request columns than version 2, which churn-staging serves" in message
    assert "added ['CustomerID']; removed ['calls']" in message and "--allow-new-columns" in message

    session = stubbed()
    sagemaker = session.stubs["sagemaker"]
    expect_package(sagemaker, 3)
    expect_live(sagemaker, STAGING, 2)
    expect_columns(session, live=2, candidate=3, candidate_columns=changed)
    expect_test_split(session, split, 3, "good")
    expect_invoke(session, STAGING, split, "good")
    expect_resources(session, STAGING, 3, alarms_exist=True)
    expect_update(sagemaker, STAGING, 3, [("Updating", 3, None), ("InService", 3, None)])
    expect_invoke(session, STAGING, split, "good")
    expect_pass_recorded(sagemaker, STAGING, 3)
    outcome = deploy(target(session, []), "staging", rows=60, allow_new_columns=True)
    session.verify()
    assert (outcome.status, outcome.rollout.action) == ("deployed", "updated")
    assert any("added ['CustomerID']; removed ['calls'] (new columns allowed)" in n for n in outcome.smoke.notes)


def test_request_columns_in_another_order_are_a_change() -> None:
    from pipeline.core.deployment import column_change

    assert column_change(COLUMNS, COLUMNS) is None
    assert "another order" in (column_change(COLUMNS, COLUMNS[::-1]) or "")


def test_a_rollback_by_the_alarms_is_reported_and_exits_1(split: Split) -> None:
    session = stubbed()
    sagemaker = session.stubs["sagemaker"]
    expect_package(sagemaker, 3)
    expect_live(sagemaker, STAGING, 2)
    expect_columns(session, live=2, candidate=3)  # the same request columns
    expect_test_split(session, split, 3, "good")
    expect_invoke(session, STAGING, split, "good")
    expect_resources(session, STAGING, 3, alarms_exist=True)
    reason = "Update rolled back: alarm churn-staging-5xx-errors in ALARM state"
    expect_update(
        sagemaker,
        STAGING,
        3,
        [("Updating", 3, None), ("RollingBack", 3, None), ("InService", 2, reason)],
    )

    outcome, polls, messages = run(session, "staging")
    assert (outcome.status, outcome.exit_code) == ("rolled-back", 1)
    assert outcome.rollout.handle == config_name(STAGING, 2) and reason in outcome.message
    assert outcome.smoke is None  # the new version never served: nothing invoked after
    assert any("RollingBack" in message for message in messages)


def test_a_worse_version_is_refused_before_anything_changes(split: Split) -> None:
    session = stubbed()
    sagemaker = session.stubs["sagemaker"]
    expect_package(sagemaker, 3)
    expect_live(sagemaker, STAGING, 2)
    expect_columns(session, live=2, candidate=3)  # the same request columns
    expect_test_split(session, split, 3, "worse")  # version 3's own batch-transform answers are the worse model's
    expect_invoke(session, STAGING, split, "good")  # the live version answers better

    outcome, polls, _ = run(session, "staging")  # no CreateModel, no UpdateEndpoint: the stubs would fail
    assert (outcome.status, outcome.exit_code, outcome.rollout) == ("refused", 1, None)
    quality = outcome.smoke.quality
    assert quality.candidate < quality.live - 0.01 and "still serves version 2" in outcome.message


def test_a_failed_smoke_test_restores_the_previous_endpoint_config(split: Split) -> None:
    session = stubbed()
    sagemaker = session.stubs["sagemaker"]
    expect_package(sagemaker, 3)
    expect_live(sagemaker, STAGING, 2)
    expect_columns(session, live=2, candidate=3)  # the same request columns
    expect_test_split(session, split, 3, "good")
    expect_invoke(session, STAGING, split, "good")
    expect_resources(session, STAGING, 3, alarms_exist=True)
    expect_update(sagemaker, STAGING, 3, [("InService", 3, None)])
    expect_invoke(session, STAGING, split, "worse")  # the new endpoint does not answer what batch transform did
    sagemaker.add_response(
        "update_endpoint",
        {"EndpointArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:endpoint/{STAGING}"},
        {
            "EndpointName": STAGING,
            "EndpointConfigName": config_name(STAGING, 2),
            "DeploymentConfig": {
                "BlueGreenUpdatePolicy": {
                    "TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 0},
                    "TerminationWaitInSeconds": 0,
                }
            },
        },
    )
    expect_polls(sagemaker, STAGING, [("Updating", 2, None), ("InService", 2, None)])

    outcome, _, _ = run(session, "staging")
    assert (outcome.status, outcome.exit_code) == ("smoke-failed", 1)
    consistency = outcome.smoke.consistency
    assert not consistency.passed and consistency.mismatches[0].startswith("row ")
    assert outcome.restored == f"{STAGING} serves the previous version 2 again ({config_name(STAGING, 2)})"


def test_redeploying_the_live_version_is_a_no_op(split: Split) -> None:
    session = stubbed()
    expect_package(session.stubs["sagemaker"], 3)
    expect_live(session.stubs["sagemaker"], STAGING, 3)
    outcome, polls, _ = run(session, "staging")
    assert (outcome.status, outcome.exit_code, polls) == ("unchanged", 0, [])
    assert "already serves version 3 (since 2026-01-02 03:04:05 UTC)" in outcome.message


def test_prod_takes_the_version_that_passed_staging_and_skips_the_quality_check(split: Split) -> None:
    session = stubbed()
    sagemaker = session.stubs["sagemaker"]
    expect_live(sagemaker, STAGING, 3)
    expect_package(sagemaker, 3, listed=False)  # named by the ARN staging's config is tagged with
    expect_live(sagemaker, PROD, None)
    expect_test_split(session, split, 3, "good")
    expect_resources(session, PROD, 3)
    sagemaker.add_response(
        "create_endpoint",
        {"EndpointArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:endpoint/{PROD}"},
        {
            "EndpointName": PROD,
            "EndpointConfigName": config_name(PROD, 3),
            "Tags": [{"Key": "llpipe:stage", "Value": "prod"}, {"Key": "team", "Value": "ml"}],
        },
    )
    expect_polls(sagemaker, PROD, [("InService", 3, None)])
    expect_invoke(session, PROD, split, "good")
    expect_pass_recorded(sagemaker, PROD, 3)
    outcome, _, _ = run(session, "prod")
    assert (outcome.status, outcome.version.version) == ("deployed", 3)


def test_prod_refuses_a_version_that_did_not_pass_staging(split: Split) -> None:
    session = stubbed()
    sagemaker = session.stubs["sagemaker"]
    expect_live(sagemaker, STAGING, 3)
    expect_package(sagemaker, 3, listed=False)
    sagemaker.add_response(
        "list_model_packages",
        {
            "ModelPackageSummaryList": [
                {
                    "ModelPackageArn": arn(4),
                    "ModelPackageVersion": 4,
                    "CreationTime": NOW,
                    "ModelPackageStatus": "Completed",
                }
            ]
        },
        {"ModelPackageGroupName": "churn-models", "MaxResults": 100},
    )
    expect_package(sagemaker, 4, listed=False)
    with pytest.raises(DeployError, match="version 4 did not pass staging: staging serves and passed version 3"):
        deploy(target(session, []), "prod", "4")
    session.verify()

    session = stubbed()
    expect_live(session.stubs["sagemaker"], STAGING, 3, passed=False)
    with pytest.raises(DeployError, match="has not passed its smoke test there"):
        deploy(target(session, []), "prod")
    session.verify()


def test_an_unapproved_version_and_a_busy_endpoint_are_refused(split: Split) -> None:
    session = stubbed()
    expect_package(session.stubs["sagemaker"], 5, status="PendingManualApproval", listed=False)
    with pytest.raises(DeployError, match="is PendingManualApproval, not Approved"):
        deploy(target(session, []), "staging", arn(5))
    session.verify()

    session = stubbed()
    expect_package(session.stubs["sagemaker"], 3)
    expect_live(session.stubs["sagemaker"], STAGING, 2, status="Updating")
    with pytest.raises(DeployError, match="is Updating: another deployment or change is under way"):
        deploy(target(session, []), "staging")
    session.verify()


def test_the_command_prints_the_outcome_as_json_and_exits_with_its_code(
    split: Split, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    session = stubbed()
    expect_package(session.stubs["sagemaker"], 3)
    expect_live(session.stubs["sagemaker"], STAGING, 3)
    monkeypatch.setattr(aws, "session", lambda config: session)
    flags = ["--region", "us-east-1", "--role-arn", CONFIG.role_arn, "--bucket", "my-bucket"]
    flags += ["--pipeline-name", "churn", "--model-package-group", "churn-models", "--kms-key-id", KEY]
    assert cli.main(["deploy", "--stage", "staging", "--sagemaker", "--json", *flags, "--tag", "team=ml"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["status"], shown["version"]["version"], shown["exit_code"]) == ("unchanged", 3, 0)
    assert shown["previous"]["since"] == "2026-01-02T03:04:05+00:00"
    session.verify()


def test_names_are_content_addressed_and_fit_sagemakers_limit() -> None:
    base = requests.endpoint_config_request(CONFIG, STAGING, "staging", version(3), "m")
    bigger = PipelineConfig(**{**CONFIG.__dict__, "staging_instance_type": "ml.c5.xlarge"})
    other = requests.endpoint_config_request(bigger, STAGING, "staging", version(3), "m")
    assert base["EndpointConfigName"] != other["EndpointConfigName"]  # changed settings: a new config
    assert base == requests.endpoint_config_request(CONFIG, STAGING, "staging", version(3), "m")
    long = PipelineConfig(pipeline_name="p" * 70)
    endpoint = requests.endpoint_name(long, "staging")
    assert len(endpoint) <= 63 and endpoint.endswith("-staging")
    name = requests.model_request(long, endpoint, "staging", version(123456))["ModelName"]
    assert len(name) <= 63 and re.fullmatch(r"p+-v123456-[0-9a-f]{8}", name)


def test_an_older_version_is_skipped_with_if_newer_as_an_approval_events_build_asks(split: Split) -> None:
    """A metadata change of an older approved version emits an Approved event too: its build changes nothing."""
    session = stubbed()
    expect_package(session.stubs["sagemaker"], 2, listed=False)
    expect_live(session.stubs["sagemaker"], STAGING, 3)
    outcome = deploy(target(session, []), "staging", arn(2), if_newer=True)
    session.verify()
    assert (outcome.status, outcome.exit_code) == ("skipped", 0)
    assert (
        outcome.message
        == "version 2 is older than version 3, which churn-staging serves: not deployed (newer versions only)"
    )


def test_a_failed_endpoint_is_deleted_and_created_again_and_a_failed_creation_names_its_reason(split: Split) -> None:
    session = stubbed()
    sagemaker = session.stubs["sagemaker"]
    expect_package(sagemaker, 3)
    expect_live(sagemaker, STAGING, 2, passed=False, status="Failed")  # an earlier deployment that failed
    expect_test_split(session, split, 3, "good")
    expect_resources(session, STAGING, 3, alarms_exist=True)
    sagemaker.add_response("delete_endpoint", {}, {"EndpointName": STAGING})  # a Failed endpoint can only be deleted
    not_found(sagemaker, "describe_endpoint", f'Could not find endpoint "{STAGING}".', {"EndpointName": STAGING})
    sagemaker.add_response(
        "create_endpoint",
        {"EndpointArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:endpoint/{STAGING}"},
        {
            "EndpointName": STAGING,
            "EndpointConfigName": config_name(STAGING, 3),
            "Tags": [{"Key": "llpipe:stage", "Value": "staging"}, {"Key": "team", "Value": "ml"}],
        },
    )
    reason = "The primary container for production variant AllTraffic did not pass the ping health check."
    expect_polls(sagemaker, STAGING, [("Creating", 3, None), ("Failed", 3, reason)])

    outcome, polls, messages = run(session, "staging")
    assert (outcome.status, outcome.exit_code, outcome.rollout.action) == ("failed", 1, "created")
    assert outcome.message == f"deploying version 3 to {STAGING} failed: Failed: {reason}"
    assert any("a Failed endpoint can only be deleted: deleting it first" in message for message in messages)


def test_the_model_is_the_packages_inference_pipeline_or_its_one_container_by_name() -> None:
    """Three containers: each as registered, Serial; a one-container package (registered before serving existed):
    by ModelPackageName, as the SDK's ModelPackage sends it. Both are CreateModel requests botocore accepts."""
    from botocore.validate import validate_parameters

    shape = new_botocore_session().get_service_model("sagemaker").operation_model("CreateModel").input_shape
    pipeline = requests.model_request(CONFIG, "churn-staging", "staging", version(3))
    assert pipeline["Containers"] == list(containers(3)) and pipeline["InferenceExecutionConfig"] == {"Mode": "Serial"}
    single = Version(arn(2), 2, "churn-models", "Approved", None, (containers(2)[1],))
    bare = requests.model_request(CONFIG, "churn-staging", "staging", single)
    assert bare["Containers"] == [{"ModelPackageName": arn(2)}] and "InferenceExecutionConfig" not in bare
    for request in (pipeline, bare):
        validate_parameters(request, shape)
