"""The AWS requests of upsert, start (--wait), schedule and executions, asserted exactly with botocore's Stubber."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from botocore.stub import ANY, Stubber
from rich.console import Console
from support.aws_stubs import REAL_SESSION, StubbedSession

from pipeline.cli import main
from pipeline.cli.start import watch
from pipeline.core import errors
from pipeline.core.data_version import DataVersionError
from pipeline.core.errors import ParameterError
from pipeline.definition.build import BuiltDefinition, build_definition
from pipeline.definition.config import PipelineConfig
from pipeline.sagemaker import aws, deploy, schedule, start, wait

ACCOUNT = "123456789012"
CONFIG = PipelineConfig(
    region="us-west-2",
    role_arn=f"arn:aws:iam::{ACCOUNT}:role/PipelineRole",
    bucket="artifacts-bucket",
    pipeline_name="churn-pipeline",
    tags=(("cost-center", "ml"),),
)
PIPELINE_ARN = f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:pipeline/churn-pipeline"
EXECUTION_ARN = f"{PIPELINE_ARN}/execution/abc123def456"
T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def built() -> BuiltDefinition:
    return build_definition(CONFIG)


@pytest.fixture(scope="module")
def sdk_pipeline() -> Any:
    """SDK v3's own Pipeline object for the same configuration, to compare requests with."""
    from pipeline.definition.build import get_pipeline

    return get_pipeline(**CONFIG.__dict__)


def expect_uploads(session: StubbedSession, built: BuiltDefinition, **extra: Any) -> None:
    for uri, content in built.uploads.items():
        bucket, key = uri.removeprefix("s3://").split("/", 1)
        session.stubs["s3"].add_response("put_object", {}, {"Bucket": bucket, "Key": key, "Body": content, **extra})


# ---------------------------------------------------------------- upsert


def test_upsert_creates_a_new_pipeline_after_uploading_the_code(built: BuiltDefinition) -> None:
    session = StubbedSession("s3", "sagemaker")
    expect_uploads(session, built)
    prefixes = ("s3://artifacts-bucket/churn-pipeline/code/", "s3://artifacts-bucket/churn-pipeline/schemas/")
    assert all(uri.startswith(prefixes) for uri in built.uploads)  # the code and the built-in empty schema
    session.stubs["sagemaker"].add_response(
        "create_pipeline",
        {"PipelineArn": PIPELINE_ARN},
        {
            "PipelineName": "churn-pipeline",
            "RoleArn": CONFIG.role_arn,
            "PipelineDefinition": built.definition_json,
            "PipelineDescription": "weekly churn model",
            "ClientRequestToken": ANY,
            "Tags": [{"Key": "cost-center", "Value": "ml"}],
        },
    )
    result = deploy.upsert(CONFIG, built, session=session, description="weekly churn model")
    session.verify()
    assert result == deploy.UpsertResult(PIPELINE_ARN, created=True, uploaded=tuple(built.uploads))


def test_upsert_updates_an_existing_pipeline_and_merges_its_tags(built: BuiltDefinition) -> None:
    session = StubbedSession("s3", "sagemaker")
    expect_uploads(session, built)
    sagemaker = session.stubs["sagemaker"]
    sagemaker.add_client_error(
        "create_pipeline",
        service_error_code="ValidationException",
        service_message="Pipeline names must be unique within an AWS account and region. "
        "Pipeline with name (churn-pipeline) already exists.",
    )
    sagemaker.add_response(
        "update_pipeline",
        {"PipelineArn": PIPELINE_ARN},
        {"PipelineName": "churn-pipeline", "RoleArn": CONFIG.role_arn, "PipelineDefinition": built.definition_json},
    )
    sagemaker.add_response(
        "list_tags",
        {"Tags": [{"Key": "cost-center", "Value": "old"}, {"Key": "owner", "Value": "data-team"}]},
        {"ResourceArn": PIPELINE_ARN},
    )
    sagemaker.add_response(
        "add_tags",
        {"Tags": []},
        {
            "ResourceArn": PIPELINE_ARN,
            "Tags": [{"Key": "cost-center", "Value": "ml"}, {"Key": "owner", "Value": "data-team"}],
        },
    )
    result = deploy.upsert(CONFIG, built, session=session)
    session.verify()
    assert result.created is False and result.pipeline_arn == PIPELINE_ARN


def test_upsert_encrypts_uploads_and_sends_large_definitions_through_s3(built: BuiltDefinition) -> None:
    config = PipelineConfig(**{**CONFIG.__dict__, "kms_key_id": "alias/pipeline", "tags": ()})
    large = BuiltDefinition(built.definition_json + " " * (100 * 1024), built.uploads)
    session = StubbedSession("s3", "sagemaker")
    expect_uploads(session, large, ServerSideEncryption="aws:kms", SSEKMSKeyId="alias/pipeline")
    key_pattern = {}

    def remember_key(params: dict[str, Any], **_: Any) -> None:
        key_pattern["key"] = params["Key"]

    session.stubs["s3"].add_response(
        "put_object",
        {},
        {
            "Bucket": "artifacts-bucket",
            "Key": ANY,
            "Body": large.definition_json.encode(),
            "ServerSideEncryption": "aws:kms",
            "SSEKMSKeyId": "alias/pipeline",
        },
    )
    session.clients["s3"].meta.events.register("provide-client-params.s3.PutObject", remember_key)
    session.stubs["sagemaker"].add_response(
        "create_pipeline",
        {"PipelineArn": PIPELINE_ARN},
        {
            "PipelineName": "churn-pipeline",
            "RoleArn": CONFIG.role_arn,
            "PipelineDefinitionS3Location": {"Bucket": "artifacts-bucket", "ObjectKey": ANY},
            "ClientRequestToken": ANY,
        },
    )
    deploy.upsert(config, large, session=session)
    session.verify()
    assert key_pattern["key"].startswith("churn-pipeline/definitions/") and key_pattern["key"].endswith(".json")


def test_upsert_reports_other_errors_in_one_line(built: BuiltDefinition) -> None:
    session = StubbedSession("s3", "sagemaker")
    expect_uploads(session, built)
    session.stubs["sagemaker"].add_client_error(
        "create_pipeline", service_error_code="AccessDeniedException", service_message="not allowed: CreatePipeline"
    )
    with pytest.raises(errors.AwsError, match="CreatePipeline churn-pipeline: AccessDeniedException"):
        deploy.upsert(CONFIG, built, session=session)


# ---------------------------------------------------------------- start


def describe_pipeline_response(built: BuiltDefinition) -> dict[str, Any]:
    return {"PipelineArn": PIPELINE_ARN, "PipelineName": "churn-pipeline", "PipelineDefinition": built.definition_json}


INPUT_OBJECTS = [
    ("part-0.csv", 1200, '"9b2cf535f27731c974343645a3985328"'),
    ("part-1.csv", 1180, '"c4ca4238a0b923820dcc509a6f75849b"'),
]


def expect_listing(session: StubbedSession, uri: str, objects: list[tuple[str, int, str]]) -> str:
    """ListObjectsV2 of ``uri`` answered over two pages; returns the DataVersion those objects must give."""
    bucket, prefix = uri.removeprefix("s3://").split("/", 1)
    pages = [objects[:1], objects[1:]]
    for number, page in enumerate(pages):
        response: dict[str, Any] = {
            "Contents": [{"Key": prefix + key, "Size": size, "ETag": etag} for key, size, etag in page],
            "IsTruncated": number == 0,
        }
        request = {"Bucket": bucket, "Prefix": prefix}
        if number == 0:
            response["NextContinuationToken"] = "page-2"
        else:
            request["ContinuationToken"] = "page-2"
        session.stubs["s3"].add_response("list_objects_v2", response, request)
    # the documented fingerprint, computed here independently: SHA-256 of the sorted "key NUL size NUL etag" lines
    lines = "".join(f"{key}\0{size}\0{etag}\n" for key, size, etag in sorted(objects))
    return hashlib.sha256(lines.encode()).hexdigest()[:16]


def expect_describe(session: StubbedSession, built: BuiltDefinition) -> None:
    session.stubs["sagemaker"].add_response(
        "describe_pipeline", describe_pipeline_response(built), {"PipelineName": "churn-pipeline"}
    )


def expect_start(session: StubbedSession, parameters: list[dict[str, str]]) -> None:
    """StartPipelineExecution of churn-pipeline with exactly ``parameters``, answered with EXECUTION_ARN."""
    session.stubs["sagemaker"].add_response(
        "start_pipeline_execution",
        {"PipelineExecutionArn": EXECUTION_ARN},
        {"PipelineName": "churn-pipeline", "PipelineParameters": parameters},
    )


def test_start_sends_overrides_as_strings_and_the_fingerprint_of_the_input_as_dataversion(
    built: BuiltDefinition,
) -> None:
    session = StubbedSession("sagemaker", "s3")
    expect_describe(session, built)
    version = expect_listing(session, "s3://data-bucket/churn/2026/", INPUT_OBJECTS)
    session.stubs["sagemaker"].add_response(
        "start_pipeline_execution",
        {"PipelineExecutionArn": EXECUTION_ARN},
        {
            "PipelineName": "churn-pipeline",
            "PipelineParameters": [
                {"Name": "TrainingInstanceCount", "Value": "4"},
                {"Name": "MetricThreshold", "Value": "0.8"},
                {"Name": "PredictorType", "Value": "regressor"},
                {"Name": "InputDataUrl", "Value": "s3://data-bucket/churn/2026/"},
                {"Name": "DataVersion", "Value": version},
            ],
        },
    )
    overrides = {
        "TrainingInstanceCount": "4",
        "MetricThreshold": "0.8",
        "PredictorType": "regressor",
        "InputDataUrl": "s3://data-bucket/churn/2026/",
    }
    assert start.start(CONFIG, overrides, session=session) == EXECUTION_ARN
    session.verify()


def test_start_without_overrides_versions_the_default_input_and_new_data_gets_a_new_version(
    built: BuiltDefinition,
) -> None:
    session = StubbedSession("sagemaker", "s3")
    versions = []
    for objects in (INPUT_OBJECTS, [INPUT_OBJECTS[0], ("part-1.csv", 1180, '"0cc175b9c0f1b6a831c399e269772661"')]):
        expect_describe(session, built)
        version = expect_listing(session, "s3://artifacts-bucket/churn-pipeline/input/", objects)
        session.stubs["sagemaker"].add_response(
            "start_pipeline_execution",
            {"PipelineExecutionArn": EXECUTION_ARN},
            {"PipelineName": "churn-pipeline", "PipelineParameters": [{"Name": "DataVersion", "Value": version}]},
        )
        assert start.start(CONFIG, {}, session=session) == EXECUTION_ARN
        versions.append(version)
    session.verify()
    assert versions[0] != versions[1]  # one object rewritten with the same size: its ETag changed


def test_start_with_a_given_dataversion_lists_nothing(built: BuiltDefinition) -> None:
    session = StubbedSession("sagemaker", "s3")
    expect_describe(session, built)
    session.stubs["sagemaker"].add_response(
        "start_pipeline_execution",
        {"PipelineExecutionArn": EXECUTION_ARN},
        {"PipelineName": "churn-pipeline", "PipelineParameters": [{"Name": "DataVersion", "Value": "2026-12-01"}]},
    )
    assert start.start(CONFIG, {"DataVersion": "2026-12-01"}, session=session) == EXECUTION_ARN
    session.verify()  # and the s3 stub, with no response queued, would have failed any ListObjectsV2


def test_start_of_an_empty_input_prefix_is_refused_before_starting(built: BuiltDefinition) -> None:
    session = StubbedSession("sagemaker", "s3")
    expect_describe(session, built)
    session.stubs["s3"].add_response(
        "list_objects_v2", {"IsTruncated": False}, {"Bucket": "data-bucket", "Prefix": "nothing/"}
    )
    with pytest.raises(DataVersionError, match="no objects under s3://data-bucket/nothing/"):
        start.start(CONFIG, {"InputDataUrl": "s3://data-bucket/nothing/"}, session=session)
    session.verify()


def without_data_version(built: BuiltDefinition) -> BuiltDefinition:
    """The definition as a deployment from before DataVersion existed has it."""
    definition = json.loads(built.definition_json)
    definition["Parameters"] = [p for p in definition["Parameters"] if p["Name"] != "DataVersion"]
    return BuiltDefinition(json.dumps(definition), built.uploads)


def test_start_of_a_pipeline_deployed_without_dataversion_warns(
    built: BuiltDefinition, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    session = StubbedSession("sagemaker", "s3")
    expect_describe(session, without_data_version(built))
    session.stubs["sagemaker"].add_response(
        "start_pipeline_execution", {"PipelineExecutionArn": EXECUTION_ARN}, {"PipelineName": "churn-pipeline"}
    )
    monkeypatch.setattr(aws, "session", lambda config: session)
    assert main(["start", "--region", "us-west-2", "--pipeline-name", "churn-pipeline", "--no-infer"]) == 0
    session.verify()
    captured = capsys.readouterr()
    assert "warning: the deployed churn-pipeline has no DataVersion parameter" in captured.err
    assert "run llpipe upsert" in captured.err


def test_start_dry_run_prints_the_request_after_reads_only(
    built: BuiltDefinition, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    session = StubbedSession("sagemaker", "s3")
    expect_describe(session, built)
    version = expect_listing(session, "s3://artifacts-bucket/churn-pipeline/input/", INPUT_OBJECTS)
    monkeypatch.setattr(aws, "session", lambda config: session)
    argv = ["start", "--dry-run", "--param", "Epochs=3", "--region", "us-west-2", "--pipeline-name", "churn-pipeline"]
    assert main([*argv, "--bucket", "artifacts-bucket", "--no-infer"]) == 0
    session.verify()  # no StartPipelineExecution queued: sending one would have raised
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {
        "PipelineName": "churn-pipeline",
        "PipelineParameters": [{"Name": "Epochs", "Value": "3"}, {"Name": "DataVersion", "Value": version}],
    }
    assert "dry run: read DescribePipeline, the ListObjectsV2 listing of InputDataUrl" in captured.err
    assert "nothing was uploaded or started" in captured.err


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"TrainingInstances": "4"},
            r"unknown parameter\(s\) TrainingInstances \(did you mean TrainingInstanceType or"
            r" TrainingInstanceCount\?\); the pipeline declares: ",
        ),
        ({"TrainingInstanceCount": "four"}, "parameter TrainingInstanceCount is Integer: 'four'"),
        ({"MetricThreshold": "high"}, "parameter MetricThreshold is Float: 'high'"),
        ({"PredictorType": "ranker"}, "parameter PredictorType must be one of binary_classifier, .*, got 'ranker'"),
    ],
)
def test_start_rejects_bad_overrides_before_starting(built: BuiltDefinition, overrides: dict, message: str) -> None:
    session = StubbedSession("sagemaker", "s3")
    session.stubs["sagemaker"].add_response(
        "describe_pipeline", describe_pipeline_response(built), {"PipelineName": "churn-pipeline"}
    )
    with pytest.raises(ParameterError, match=message):
        start.start(CONFIG, overrides, session=session)
    session.verify()  # and no ListObjectsV2 nor StartPipelineExecution was sent: the stubs would have raised


def step(name: str, status: str, **extra: Any) -> dict[str, Any]:
    return {"StepName": name, "StepStatus": status, "StartTime": T0, **extra}


FINAL_STATES = {
    "Succeeded": (
        "Succeeded",
        None,
        [
            step("Preprocess", "Succeeded", EndTime=T0 + timedelta(minutes=4)),
            step("Train", "Succeeded", CacheHitResult={"SourcePipelineExecutionArn": f"{PIPELINE_ARN}/execution/old1"}),
            step("QualityGate", "Succeeded", Metadata={"Condition": {"Outcome": "True"}}),
            step("Register", "Succeeded"),
        ],
        0,
        "execution succeeded",
    ),
    "Failed": (
        "Failed",
        "Step failure: One or multiple steps failed.",
        [
            step("Preprocess", "Succeeded"),
            step("Train", "Failed", FailureReason="ClientError: feature_dim 5 does not match the data (3)"),
        ],
        1,
        "step Train: ClientError: feature_dim 5 does not match the data (3)",
    ),
    "QualityGate": (
        "Failed",
        "Step failure: One or multiple steps failed.",
        [
            step("Evaluate", "Succeeded"),
            step("QualityGate", "Succeeded", Metadata={"Condition": {"Outcome": "False"}}),
            step(
                "QualityGateFailed",
                "Failed",
                Metadata={"Fail": {"ErrorMessage": "Quality gate failed: auc = 0.55 is below MetricThreshold 0.6"}},
            ),
        ],
        3,
        "Quality gate failed: auc = 0.55 is below MetricThreshold 0.6",
    ),
    "Stopped": ("Stopped", None, [step("Preprocess", "Stopped")], 4, "execution was stopped"),
}


def expect_poll(stub: Stubber, status: str, reason: str | None, steps: list[dict[str, Any]]) -> None:
    described = {"PipelineArn": PIPELINE_ARN, "PipelineExecutionArn": EXECUTION_ARN, "PipelineExecutionStatus": status}
    if reason:
        described["FailureReason"] = reason
    stub.add_response("describe_pipeline_execution", described, {"PipelineExecutionArn": EXECUTION_ARN})
    stub.add_response(
        "list_pipeline_execution_steps",
        {"PipelineExecutionSteps": steps},
        {"PipelineExecutionArn": EXECUTION_ARN, "SortOrder": "Ascending"},
    )


@pytest.mark.parametrize("final", list(FINAL_STATES))
def test_start_wait_exit_code_follows_the_final_status(
    final: str, built: BuiltDefinition, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, reason, steps, expected_code, expected_message = FINAL_STATES[final]
    session = StubbedSession("sagemaker", "s3")
    stub = session.stubs["sagemaker"]
    expect_describe(session, built)
    stub.add_response(
        "start_pipeline_execution",
        {"PipelineExecutionArn": EXECUTION_ARN},
        {"PipelineName": "churn-pipeline", "PipelineParameters": [{"Name": "DataVersion", "Value": "v7"}]},
    )
    expect_poll(stub, "Executing", None, [step("Preprocess", "Executing")])  # one poll before the end
    expect_poll(stub, status, reason, steps)
    monkeypatch.setattr(aws, "session", lambda config: session)
    code = main(
        ["start", "--wait", "--poll-seconds", "0", "--region", "us-west-2", "--pipeline-name", "churn-pipeline"]
        + ["--param", "DataVersion=v7", "--no-infer"]
    )
    session.verify()
    captured = capsys.readouterr()
    assert code == expected_code
    assert expected_message in (captured.err if code else captured.out)
    assert f"started {EXECUTION_ARN}" in captured.out


def test_live_table_lists_steps_with_cache_hits_and_outcomes() -> None:
    session = StubbedSession("sagemaker")
    status, reason, steps, _, _ = FINAL_STATES["Succeeded"]
    expect_poll(session.stubs["sagemaker"], status, reason, steps)
    output = io.StringIO()
    state = watch(CONFIG, EXECUTION_ARN, 0, console=Console(file=output, width=200), session=session)
    text = output.getvalue()
    assert state.status == "Succeeded"
    for expected in ("Preprocess", "240s", "cache hit from old1", "outcome True", "Register"):
        assert expected in text


def test_steps_are_read_across_pages() -> None:
    session = StubbedSession("sagemaker")
    stub = session.stubs["sagemaker"]
    stub.add_response(
        "describe_pipeline_execution",
        {"PipelineExecutionArn": EXECUTION_ARN, "PipelineExecutionStatus": "Executing"},
        {"PipelineExecutionArn": EXECUTION_ARN},
    )
    stub.add_response(
        "list_pipeline_execution_steps",
        {"PipelineExecutionSteps": [step("Preprocess", "Succeeded")], "NextToken": "page-2"},
        {"PipelineExecutionArn": EXECUTION_ARN, "SortOrder": "Ascending"},
    )
    stub.add_response(
        "list_pipeline_execution_steps",
        {"PipelineExecutionSteps": [step("Train", "Executing")]},
        {"PipelineExecutionArn": EXECUTION_ARN, "SortOrder": "Ascending", "NextToken": "page-2"},
    )
    state = wait.poll_execution(session.client("sagemaker"), EXECUTION_ARN)
    session.verify()
    assert [s["StepName"] for s in state.steps] == ["Preprocess", "Train"]


# ---------------------------------------------------------------- executions, schedule


def test_list_executions_asks_for_the_newest_first() -> None:
    session = StubbedSession("sagemaker")
    summaries = [
        {"PipelineExecutionArn": EXECUTION_ARN, "PipelineExecutionStatus": "Succeeded", "StartTime": T0},
        {"PipelineExecutionArn": f"{PIPELINE_ARN}/execution/older", "PipelineExecutionStatus": "Failed"},
    ]
    session.stubs["sagemaker"].add_response(
        "list_pipeline_executions",
        {"PipelineExecutionSummaries": summaries},
        {"PipelineName": "churn-pipeline", "SortBy": "CreationTime", "SortOrder": "Descending", "MaxResults": 5},
    )
    assert wait.list_executions(CONFIG, 5, session=session) == summaries
    session.verify()


SCHEDULE_ARN = f"arn:aws:scheduler:us-west-2:{ACCOUNT}:schedule/default/churn-pipeline"
# the idempotency token's fixed part: sha256("churn-pipeline")[:16], so two pipelines scheduled at the same time
# never share a token
PIPELINE_ID = hashlib.sha256(b"churn-pipeline").hexdigest()[:16]


def expected_schedule(
    expression: str, role: str = CONFIG.role_arn, state: str = "ENABLED", fixed: str = ""
) -> dict[str, Any]:
    """The exact CreateSchedule/UpdateSchedule request; ``fixed`` is the JSON of the --param overrides, if any."""
    start_input = (
        '{"PipelineName": "churn-pipeline", "PipelineParameters": ['
        + fixed
        + '{"Name": "DataVersion", "Value": "<aws.scheduler.scheduled-time>"}], '
        + '"PipelineExecutionDescription": "Scheduled for <aws.scheduler.scheduled-time> by '
        + '<aws.scheduler.schedule-arn>", '
        + f'"ClientRequestToken": "llpipe-{PIPELINE_ID}-<aws.scheduler.scheduled-time>"}}'
    )
    return {
        "Name": "churn-pipeline",
        "ScheduleExpression": expression,
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "Target": {
            "Arn": "arn:aws:scheduler:::aws-sdk:sagemaker:startPipelineExecution",
            "RoleArn": role,
            "Input": start_input,
        },
        "State": state,
        "StartDate": T0,
    }


def test_schedule_creates_a_universal_target_whose_dataversion_is_the_scheduled_time(built: BuiltDefinition) -> None:
    session = StubbedSession("sagemaker", "scheduler")
    expect_describe(session, built)
    scheduler = session.stubs["scheduler"]
    fixed = '{"Name": "InputDataUrl", "Value": "s3://data-bucket/daily/"}, {"Name": "Epochs", "Value": "5"}, '
    expected = expected_schedule("cron(0 3 * * ? *)", fixed=fixed)
    scheduler.add_client_error(
        "update_schedule", service_error_code="ResourceNotFoundException", expected_params=expected
    )
    scheduler.add_response("create_schedule", {"ScheduleArn": SCHEDULE_ARN}, expected)
    expression = schedule.schedule_expression(cron="0 3 * * ? *")
    overrides = {"InputDataUrl": "s3://data-bucket/daily/", "Epochs": "5"}
    assert schedule.put_schedule(CONFIG, expression, overrides, session=session, now=T0) == SCHEDULE_ARN
    session.verify()


def test_the_schedule_input_is_a_valid_startpipelineexecution_request_once_scheduler_fills_it_in() -> None:
    """What EventBridge Scheduler sends after replacing the context attributes must pass botocore's own validation
    of StartPipelineExecution (PascalCase names, the required idempotency token of 32 to 128 characters)."""
    from botocore.validate import validate_parameters

    request = schedule.schedule_request(CONFIG, "rate(1 day)", {"Epochs": "5"}, now=T0)
    template = request["Target"]["Input"]
    filled = template.replace("<aws.scheduler.scheduled-time>", "2026-12-01T03:00:00Z").replace(
        "<aws.scheduler.schedule-arn>", SCHEDULE_ARN
    )
    operation = REAL_SESSION.client("sagemaker").meta.service_model.operation_model("StartPipelineExecution")
    for payload in (json.loads(template), json.loads(filled)):
        validate_parameters(payload, operation.input_shape)  # raises ParamValidationError on any mismatch
    payload = json.loads(filled)
    assert payload["PipelineParameters"] == [
        {"Name": "Epochs", "Value": "5"},
        {"Name": "DataVersion", "Value": "2026-12-01T03:00:00Z"},
    ]
    assert payload["ClientRequestToken"] == f"llpipe-{PIPELINE_ID}-2026-12-01T03:00:00Z"
    scheduler_model = REAL_SESSION.client("scheduler").meta.service_model
    validate_parameters(request, scheduler_model.operation_model("CreateSchedule").input_shape)


def test_schedule_updates_an_existing_schedule_with_another_role(built: BuiltDefinition) -> None:
    session = StubbedSession("sagemaker", "scheduler")
    expect_describe(session, built)
    role = f"arn:aws:iam::{ACCOUNT}:role/SchedulerRole"
    session.stubs["scheduler"].add_response(
        "update_schedule",
        {"ScheduleArn": "arn:schedule"},
        expected_schedule("rate(1 day)", role=role, state="DISABLED"),
    )
    expression = schedule.schedule_expression(rate="rate(1 day)")
    schedule.put_schedule(CONFIG, expression, role_arn=role, session=session, now=T0, enabled=False)
    session.verify()


@pytest.mark.parametrize(
    ("overrides", "deployed", "message"),
    [
        ({"Epochs": "many"}, "current", "parameter Epochs is Integer: 'many' is not a valid integer"),
        ({"Epoch": "5"}, "current", r"unknown parameter\(s\) Epoch \(did you mean Epochs\?\); the pipeline declares: "),
        ({"DataVersion": "v1"}, "current", "DataVersion of a scheduled execution is its scheduled time"),
        ({}, "old", "declares no DataVersion parameter"),
    ],
)
def test_schedule_refuses_before_any_scheduler_call(
    built: BuiltDefinition, overrides: dict[str, str], deployed: str, message: str
) -> None:
    session = StubbedSession("sagemaker", "scheduler")
    expect_describe(session, built if deployed == "current" else without_data_version(built))
    with pytest.raises(ParameterError, match=message):
        schedule.put_schedule(CONFIG, "rate(1 day)", overrides, session=session, now=T0)
    session.verify()  # nothing queued on the scheduler stub: any call to it would have raised


def test_schedule_dry_run_prints_the_exact_request_without_calling_aws(
    built: BuiltDefinition, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_aws(config: Any) -> Any:
        raise AssertionError("--dry-run called AWS")

    def build_definition(config: PipelineConfig) -> BuiltDefinition:  # the same build, made once for the module
        assert (config.pipeline_name, config.bucket, config.region) == ("churn-pipeline", CONFIG.bucket, CONFIG.region)
        return built

    monkeypatch.setattr(aws, "session", no_aws)
    monkeypatch.setattr("pipeline.definition.build.build_definition", build_definition)
    argv = ["schedule", "--dry-run", "--rate", "12 hours", "--param", "Epochs=5", "--disabled"]
    argv += ["--region", "us-west-2", "--role-arn", CONFIG.role_arn, "--bucket", "artifacts-bucket"]
    argv += ["--pipeline-name", "churn-pipeline", "--tag", "cost-center=ml", "--no-infer"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    printed = json.loads(captured.out)
    start_date = datetime.fromisoformat(printed.pop("StartDate"))
    expected = expected_schedule("rate(12 hours)", state="DISABLED", fixed='{"Name": "Epochs", "Value": "5"}, ')
    expected.pop("StartDate")
    assert printed == expected
    assert start_date.tzinfo is not None
    assert "dry run: nothing uploaded or scheduled" in captured.err

    assert main([*argv, "--param", "Epoch=5"]) == 2
    error = capsys.readouterr().err
    assert "llpipe schedule: unknown parameter(s) Epoch (did you mean Epochs?); the pipeline declares: " in error


def test_schedule_delete_and_delete_of_nothing() -> None:
    session = StubbedSession("scheduler")
    stub = session.stubs["scheduler"]
    stub.add_response("delete_schedule", {}, {"Name": "churn-pipeline"})
    stub.add_client_error("delete_schedule", service_error_code="ResourceNotFoundException")
    assert schedule.delete_schedule(CONFIG, session=session) is True
    assert schedule.delete_schedule(CONFIG, session=session) is False
    session.verify()


@pytest.mark.parametrize(
    ("cron", "rate", "expected"),
    [
        ("0 3 * * ? *", None, "cron(0 3 * * ? *)"),
        ("cron(0 3 * * ? *)", None, "cron(0 3 * * ? *)"),
        (None, "12 hours", "rate(12 hours)"),
        (None, "1 day", "rate(1 day)"),
    ],
)
def test_schedule_expressions(cron: str | None, rate: str | None, expected: str) -> None:
    assert schedule.schedule_expression(cron=cron, rate=rate) == expected


@pytest.mark.parametrize(
    ("cron", "rate"), [("0 3 * * *", None), (None, "1 days"), (None, "2 day"), (None, "0 hours"), (None, "soon")]
)
def test_bad_schedule_expressions_are_rejected(cron: str | None, rate: str | None) -> None:
    with pytest.raises(ValueError):
        schedule.schedule_expression(cron=cron, rate=rate)


def test_no_credentials_is_one_clear_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)
    assert main(["schedule", "--delete"]) == 1
    assert "no AWS credentials found" in capsys.readouterr().err


def test_definition_command_writes_the_built_json(tmp_path: Any, built: BuiltDefinition) -> None:
    output = tmp_path / "out" / "definition.json"
    args = ["definition", "--output", str(output), "--region", "us-west-2", "--role-arn", CONFIG.role_arn]
    args += ["--bucket", "artifacts-bucket", "--pipeline-name", "churn-pipeline", "--tag", "cost-center=ml"]
    assert main(args) == 0
    assert output.read_text() == built.definition_json
    assert json.loads(output.read_text())["Version"] == "2020-12-01"


def test_upsert_of_an_existing_pipeline_sends_what_the_sdk_upsert_sends(
    built: BuiltDefinition, sdk_pipeline: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parity with SDK v3's Pipeline.upsert on the update path (same calls, same arguments, same definition)."""
    monkeypatch.setenv("SAGEMAKER_VALIDATE_ROLE", "false")
    sdk_client = sdk_pipeline.sagemaker_session.sagemaker_client
    ours = StubbedSession("s3", "sagemaker")
    expect_uploads(ours, built)
    sent: dict[str, list[dict[str, Any]]] = {"sdk": [], "ours": []}

    def record(who: str) -> Any:
        def handler(params: dict[str, Any], model: Any, **_: Any) -> None:
            request = {"operation": model.name, **copy.deepcopy(params)}  # the SDK mutates its tag list later
            request.pop("ClientRequestToken", None)  # ours is explicit, botocore fills in the SDK's later
            if "PipelineDefinition" in request:
                request["PipelineDefinition"] = json.loads(request["PipelineDefinition"])
            sent[who].append(request)

        return handler

    sdk_stub = Stubber(sdk_client)
    for who, api_client, stub in (
        ("sdk", sdk_client, sdk_stub),
        ("ours", ours.clients["sagemaker"], ours.stubs["sagemaker"]),
    ):
        api_client.meta.events.register("provide-client-params.sagemaker.*", record(who))
        stub.add_client_error(
            "create_pipeline", service_error_code="ValidationException", service_message="Pipeline already exists."
        )
        stub.add_response("update_pipeline", {"PipelineArn": PIPELINE_ARN})
        stub.add_response("list_tags", {"Tags": [{"Key": "owner", "Value": "data-team"}]})
        stub.add_response("add_tags", {"Tags": []})
        stub.activate()

    try:
        sdk_pipeline.upsert(role_arn=CONFIG.role_arn, tags=CONFIG.all_tags)
    finally:
        sdk_stub.deactivate()
    deploy.upsert(CONFIG, built, session=ours)
    operations = [request["operation"] for request in sent["ours"]]
    assert operations == ["CreatePipeline", "UpdatePipeline", "ListTags", "AddTags"]
    assert sent["ours"] == sent["sdk"]


# ---------------------------------------------------------------- schema inference from S3 (start, schedule)


def _sampled_table() -> bytes:
    rows = ["default,student,balance,income"] + [
        f"{'Yes' if i % 7 == 0 else 'No'},{'Yes' if i % 3 == 0 else 'No'},{100 + i},{2000 + 3 * i}" for i in range(60)
    ]
    return ("\n".join(rows) + "\n").encode()


def _expect_sample(session: StubbedSession, text: bytes) -> None:
    from botocore.response import StreamingBody

    s3 = session.stubs["s3"]
    s3.add_response(
        "list_objects_v2",
        {"Contents": [{"Key": "raw/part-0.csv", "Size": len(text)}], "IsTruncated": False},
        {"Bucket": "data-bucket", "Prefix": "raw/"},
    )
    s3.add_response(
        "get_object",
        {"Body": StreamingBody(io.BytesIO(text), len(text))},
        {"Bucket": "data-bucket", "Key": "raw/part-0.csv", "Range": f"bytes=0-{len(text) - 1}"},
    )


def _inferred_schema(text: bytes) -> tuple[str, bytes]:
    from pipeline.definition.schema import sample_local
    from pipeline.definition.schema_inference import infer

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "part-0.csv").write_bytes(text)
        sample = sample_local([Path(folder) / "part-0.csv"], Path(folder))
    sample.source = "s3://data-bucket/raw/"
    inferred = infer(
        sample,
        {"LabelColumn": "default", "PredictorType": "binary_classifier", "HashBuckets": 0, "MissingValues": "impute"},
        {"InputDataUrl", "LabelColumn"},
        CONFIG.pipeline_prefix,
    )
    return inferred.uri, inferred.body


CLI_CONFIG = ["--region", "us-west-2", "--role-arn", CONFIG.role_arn, "--bucket", "artifacts-bucket",
              "--pipeline-name", "churn-pipeline"]  # fmt: skip
GIVEN = ["--param", "InputDataUrl=s3://data-bucket/raw/", "--param", "LabelColumn=default"]


def test_start_infers_uploads_the_schema_then_starts_with_it(
    built: BuiltDefinition, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    session = StubbedSession("sagemaker", "s3")
    monkeypatch.setattr(aws, "session", lambda config: session)
    text = _sampled_table()
    uri, body = _inferred_schema(text)
    session.stubs["sagemaker"].add_response(
        "describe_pipeline", describe_pipeline_response(built), {"PipelineName": "churn-pipeline"}
    )
    _expect_sample(session, text)  # the definition read once serves the inference and the request
    version = expect_listing(session, "s3://data-bucket/raw/", INPUT_OBJECTS)  # DataVersion: the whole listing
    key = uri.removeprefix("s3://artifacts-bucket/")
    session.stubs["s3"].add_response("put_object", {}, {"Bucket": "artifacts-bucket", "Key": key, "Body": body})
    parameters = [
        {"Name": "InputDataUrl", "Value": "s3://data-bucket/raw/"},
        {"Name": "LabelColumn", "Value": "default"},
        {"Name": "CategoricalColumns", "Value": "student"},
        {"Name": "LabelValues", "Value": "No,Yes"},
        {"Name": "SchemaUrl", "Value": uri},
        {"Name": "DataVersion", "Value": version},
    ]
    expect_start(session, parameters)
    assert main(["start", *CLI_CONFIG, *GIVEN]) == 0
    session.verify()
    out = capsys.readouterr().out
    assert f"schema: {uri}" in out and f"started {EXECUTION_ARN}" in out


def test_start_warns_before_starting_when_the_mini_batch_exceeds_what_one_host_sees(
    built: BuiltDefinition, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The preflight of ``llpipe run`` on ``llpipe start``, from what the inference read and nothing more: 60 rows
    in the one object listed, 70% train, on 2 instances is about 21 train records a host, under MiniBatchSize 1000;
    MiniBatchSize 20 is not named. The exact requests: DescribePipeline, the sample's ListObjectsV2 and ranged
    GetObject, the DataVersion listing (a dry run starts nothing)."""
    text = _sampled_table()
    outputs = []
    for batch in ("1000", "20"):
        session = StubbedSession("sagemaker", "s3")
        monkeypatch.setattr(aws, "session", lambda config, session=session: session)
        session.stubs["sagemaker"].add_response(
            "describe_pipeline", describe_pipeline_response(built), {"PipelineName": "churn-pipeline"}
        )
        _expect_sample(session, text)
        expect_listing(session, "s3://data-bucket/raw/", INPUT_OBJECTS)
        argv = ["start", "--dry-run", *CLI_CONFIG, *GIVEN, "--param", "TrainingInstanceCount=2"]
        assert main([*argv, "--param", f"MiniBatchSize={batch}"]) == 0
        session.verify()
        outputs.append(capsys.readouterr().err)
    assert (
        "llpipe start: warning: MiniBatchSize=1000 is larger than the about 21 train records one of the 2 host(s) "
        "will see (the mini-batch is per host)" in outputs[0]
    )
    assert "warning: MiniBatchSize" not in outputs[1] and "TrainingInstanceCount" not in outputs[1]


def test_schedule_gives_every_execution_the_inferred_parameters(
    built: BuiltDefinition, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = StubbedSession("sagemaker", "s3", "scheduler")
    monkeypatch.setattr(aws, "session", lambda config: session)
    text = _sampled_table()
    uri, body = _inferred_schema(text)
    sagemaker = session.stubs["sagemaker"]
    sagemaker.add_response("describe_pipeline", describe_pipeline_response(built), {"PipelineName": "churn-pipeline"})
    _expect_sample(session, text)
    expect_listing(session, "s3://data-bucket/raw/", INPUT_OBJECTS)  # sizes the jobs: small data, the defaults
    key = uri.removeprefix("s3://artifacts-bucket/")
    session.stubs["s3"].add_response("put_object", {}, {"Bucket": "artifacts-bucket", "Key": key, "Body": body})
    fixed = "".join(
        json.dumps({"Name": name, "Value": value}) + ", "
        for name, value in (
            ("InputDataUrl", "s3://data-bucket/raw/"),
            ("LabelColumn", "default"),
            ("CategoricalColumns", "student"),
            ("LabelValues", "No,Yes"),
            ("SchemaUrl", uri),
        )
    )
    expected = {**expected_schedule("cron(0 3 * * ? *)", fixed=fixed), "StartDate": ANY}
    session.stubs["scheduler"].add_response("update_schedule", {"ScheduleArn": "arn:schedule"}, expected)
    assert main(["schedule", "--cron", "0 3 * * ? *", *CLI_CONFIG, *GIVEN]) == 0
    session.verify()


SCHEMA_URL = "s3://artifacts-bucket/churn-pipeline/schemas/abc.json"


def _expect_schema(session: StubbedSession, body: bytes | None, key: str = "churn-pipeline/schemas/abc.json") -> None:
    """ListObjectsV2 of the given SchemaUrl as a prefix (holding ``key``, and a non-JSON neighbour Preprocess ignores),
    then GetObject of the one ``.json`` (none when ``body`` is None: nothing there)."""
    request = {"Bucket": "artifacts-bucket", "Prefix": "churn-pipeline/schemas/abc.json"}
    contents = [] if body is None else [{"Key": key, "Size": len(body)}, {"Key": key + ".bak", "Size": 3}]
    session.stubs["s3"].add_response("list_objects_v2", {"Contents": contents, "IsTruncated": False}, request)
    if body is not None:
        response = {"Body": io.BytesIO(body), "ContentLength": len(body)}
        session.stubs["s3"].add_response("get_object", response, {"Bucket": "artifacts-bucket", "Key": key})


def test_start_reads_a_given_schemaurl_as_preprocess_will_then_starts_with_it(
    built: BuiltDefinition, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A SchemaUrl the user gives is read before starting (ListObjectsV2 of it, GetObject of its one .json), as
    ``llpipe run`` reads it in the local S3 folder; nothing is inferred or uploaded; the request carries it."""
    session = StubbedSession("sagemaker", "s3")
    monkeypatch.setattr(aws, "session", lambda config: session)
    _, body = _inferred_schema(_sampled_table())  # a schema a run of this table decided, for LabelColumn=default
    expect_describe(session, built)
    _expect_schema(session, body)
    version = expect_listing(session, "s3://data-bucket/raw/", INPUT_OBJECTS)
    parameters = [
        {"Name": "InputDataUrl", "Value": "s3://data-bucket/raw/"},
        {"Name": "LabelColumn", "Value": "default"},
        {"Name": "SchemaUrl", "Value": SCHEMA_URL},
        {"Name": "DataVersion", "Value": version},
    ]
    expect_start(session, parameters)
    assert main(["start", *CLI_CONFIG, *GIVEN, "--param", f"SchemaUrl={SCHEMA_URL}"]) == 0
    session.verify()
    assert f"started {EXECUTION_ARN}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("body", "label", "said"),
    [
        (None, "default", "no object there in S3 (ListObjectsV2 of s3://artifacts-bucket/churn-pipeline/schemas/"),
        (b'{"format": "llpipe-schema/1", ', "default", "not a readable JSON file"),
        ("schema", "income", "decided for label column 'default', the run's LabelColumn is 'income'"),
    ],
)
def test_start_and_schedule_refuse_a_schemaurl_preprocess_could_not_use_before_anything_starts(
    built: BuiltDefinition,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    body: bytes | str | None,
    label: str,
    said: str,
) -> None:
    """Nothing there, not JSON, or decided for another label column: exit 2 naming SchemaUrl, its value, the problem
    and the ways out, after reads only (the stubs would fail a StartPipelineExecution or a scheduler call)."""
    if body == "schema":
        body = _inferred_schema(_sampled_table())[1]  # decided for LabelColumn=default
    given = ["--param", "InputDataUrl=s3://data-bucket/raw/", "--param", f"LabelColumn={label}"]
    for command in (["start"], ["schedule", "--cron", "0 3 * * ? *"]):
        session = StubbedSession("sagemaker", "s3", "scheduler")
        monkeypatch.setattr(aws, "session", lambda config, session=session: session)
        expect_describe(session, built)
        _expect_schema(session, body if isinstance(body, bytes) else None)
        assert main([*command, *CLI_CONFIG, *given, "--param", f"SchemaUrl={SCHEMA_URL}"]) == 2
        session.verify()
        err = capsys.readouterr().err
        assert f"SchemaUrl={SCHEMA_URL}" in err and said in err and "leave SchemaUrl unset" in err, err
        assert "Traceback" not in err
