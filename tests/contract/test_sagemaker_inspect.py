"""execution show --sagemaker, retry, stop, selective and parallel starts, failure alerts and the cost of a run.

Every AWS request is asserted exactly with botocore's Stubber (which also checks each response against the service
model, so the canned responses are shaped as the service documents them): a failed training step, a failed
processing step, cached steps, a stopped execution and a succeeded one with its Evaluate report in S3.
"""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from botocore.response import StreamingBody
from rich.console import Console
from support.aws_stubs import StubbedSession, cpu_utilization_queries

from pipeline.cli import main
from pipeline.cli.render.cost import cost_table
from pipeline.core import errors
from pipeline.core.cost import JobCost, local_costs, total_instance_seconds
from pipeline.definition.config import PipelineConfig
from pipeline.sagemaker import alerts, aws, start
from pipeline.sagemaker import inspect as sagemaker_inspect

REGION = "us-west-2"
ACCOUNT = "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/PipelineRole"
CONFIG = PipelineConfig(region=REGION, role_arn=ROLE, bucket="artifacts-bucket", pipeline_name="Churn-Pipeline")
PIPELINE_ARN = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:pipeline/churn-pipeline"
EXECUTION_ID = "k1x9q2w3e4r5"
EXECUTION_ARN = f"{PIPELINE_ARN}/execution/{EXECUTION_ID}"
OLD_EXECUTION_ARN = f"{PIPELINE_ARN}/execution/a0b1c2d3e4f5"
T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
CONFIG_FLAGS = ["--region", REGION, "--role-arn", ROLE, "--pipeline-name", "Churn-Pipeline"]
SKLEARN_IMAGE = f"246618743249.dkr.ecr.{REGION}.amazonaws.com/sagemaker-scikit-learn:1.2-1-cpu-py3"
LL_IMAGE = f"174872318107.dkr.ecr.{REGION}.amazonaws.com/linear-learner:1"


@pytest.fixture
def session(monkeypatch: pytest.MonkeyPatch) -> StubbedSession:
    """Stubs for every client the commands make; the commands get them through pipeline.sagemaker.aws.session."""
    stubbed = StubbedSession("sagemaker", "logs", "s3", "events", "sts")
    monkeypatch.setenv("COLUMNS", "250")  # rich tables unfolded, so ARNs can be asserted whole
    monkeypatch.setattr(aws, "session", lambda config: stubbed)
    return stubbed


# ---------------------------------------------------------------- service-shaped test data


def job_name(step: str, execution: str = EXECUTION_ID) -> str:
    """Pipelines name jobs pipelines-<execution id>-<step>-<suffix> (mixed case)."""
    return f"pipelines-{execution}-{step}-7F3a9C2b1E"


def job_arn(kind: str, name: str) -> str:
    """ARNs carry names lower-cased; Describe*Job takes that name, log streams carry the real one."""
    return f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:{kind}/{name.lower()}"


def processing_job(name: str, status: str, count: int, instance_type: str, start: datetime, seconds: int, **extra: Any):
    response = {
        "ProcessingJobName": name,
        "ProcessingJobArn": job_arn("processing-job", name),
        "ProcessingJobStatus": status,
        "ProcessingResources": {
            "ClusterConfig": {"InstanceCount": count, "InstanceType": instance_type, "VolumeSizeInGB": 30}
        },
        "AppSpecification": {"ImageUri": SKLEARN_IMAGE, "ContainerEntrypoint": ["python3", "/opt/ml/code/x.py"]},
        "RoleArn": ROLE,
        "CreationTime": start - timedelta(seconds=90),
        "ProcessingStartTime": start,
        "ProcessingEndTime": start + timedelta(seconds=seconds),
        "LastModifiedTime": start + timedelta(seconds=seconds),
    }
    response.update(extra)
    return response


def training_job(name: str, status: str, count: int, billable: int, start: datetime, **extra: Any) -> dict:
    response = {
        "TrainingJobName": name,
        "TrainingJobArn": job_arn("training-job", name),
        "ModelArtifacts": {"S3ModelArtifacts": f"s3://artifacts-bucket/churn-pipeline/{name}/output/model.tar.gz"},
        "TrainingJobStatus": status,
        "SecondaryStatus": status,
        "AlgorithmSpecification": {"TrainingImage": LL_IMAGE, "TrainingInputMode": "Pipe"},
        "ResourceConfig": {"InstanceType": "ml.m5.xlarge", "InstanceCount": count, "VolumeSizeInGB": 30},
        "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
        "CreationTime": start - timedelta(seconds=60),
        "TrainingStartTime": start,
        "TrainingEndTime": start + timedelta(seconds=billable + 20),
        "TrainingTimeInSeconds": billable + 20,
        "BillableTimeInSeconds": billable,
    }
    response.update(extra)
    return response


def transform_job(name: str, start: datetime, seconds: int) -> dict:
    return {
        "TransformJobName": name,
        "TransformJobArn": job_arn("transform-job", name),
        "TransformJobStatus": "Completed",
        "ModelName": f"pipelines-{EXECUTION_ID}-createmodel-model",
        "TransformInput": {
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://artifacts-bucket/test/"}},
            "ContentType": "application/x-recordio-protobuf",
        },
        "TransformOutput": {"S3OutputPath": "s3://artifacts-bucket/predictions/"},
        "TransformResources": {"InstanceType": "ml.m5.large", "InstanceCount": 1},
        "CreationTime": start - timedelta(seconds=30),
        "TransformStartTime": start,
        "TransformEndTime": start + timedelta(seconds=seconds),
    }


def step(name: str, status: str, start: datetime, seconds: int | None, **extra: Any) -> dict:
    entry = {"StepName": name, "StepDisplayName": name, "StepStatus": status, "StartTime": start, "AttemptCount": 1}
    if seconds is not None:
        entry["EndTime"] = start + timedelta(seconds=seconds)
    entry.update(extra)
    return entry


PARAMETERS = [
    {"Name": "ProcessingInstanceCount", "Value": "2"},
    {"Name": "TrainingInstanceCount", "Value": "2"},
    {"Name": "FeatureDim", "Value": "5"},
]
PREPROCESS = job_name("Preprocess")
TRAIN = job_name("Train")
EVALUATE = job_name("Evaluate")
TRANSFORM = job_name("Transform")
OLD_PREPROCESS = job_name("Preprocess", "a0b1c2d3e4f5")
TRAIN_FAILURE = "AlgorithmError: feature_dim 5 does not match the data (3 columns), exit code: 2"
EVALUATE_FAILURE = "AlgorithmError: See job logs for more information"
PREPROCESS_FAILURE = "AlgorithmError: See job logs for more information"  # what SageMaker says of a script's exit 1
BAD_VALUE = (
    "column 'b' has non-numeric value 'oops'; declare text columns as categorical (feature-hashed) with "
    "--categorical-columns (pipeline parameter CategoricalColumns), adding b to the columns already declared"
)
# what preprocess.py wrote to /opt/ml/output/message on each instance, concatenated by SageMaker
PREPROCESS_EXIT = (
    f"algo-1: preprocess: error: s3://artifacts-bucket/data/a.csv row 7: {BAD_VALUE}\n"
    f"algo-2: preprocess: error: s3://artifacts-bucket/data/bad.csv row 301: {BAD_VALUE}\n"
)
PREPROCESS_EXIT_LINE = (  # as `execution show` and `start --wait` print it, as the local backend's failure reason does
    f"algo-1: preprocess: error: s3://artifacts-bucket/data/a.csv row 7: {BAD_VALUE} | "
    f"algo-2: preprocess: error: s3://artifacts-bucket/data/bad.csv row 301: {BAD_VALUE}"
)


def scenario(name: str) -> dict[str, Any]:
    """One execution: its description, steps, and per job step the Describe*Job response and its log streams."""
    t1 = T0 + timedelta(minutes=5)
    t2 = t1 + timedelta(minutes=3)
    t3 = t2 + timedelta(minutes=1)
    t4 = t3 + timedelta(minutes=4)
    preprocess_metadata = {"ProcessingJob": {"Arn": job_arn("processing-job", PREPROCESS)}}
    preprocess = processing_job(PREPROCESS, "Completed", 2, "ml.m5.xlarge", T0 + timedelta(seconds=60), 240)
    if name == "failed-training":
        return {
            "status": "Failed",
            "reason": "Step failure: One or multiple steps failed.",
            "steps": [
                step("Preprocess", "Succeeded", T0, 300, Metadata=preprocess_metadata),
                step(
                    "Train",
                    "Failed",
                    t1,
                    150,
                    FailureReason=f"ClientError: {TRAIN_FAILURE}",
                    Metadata={"TrainingJob": {"Arn": job_arn("training-job", TRAIN)}},
                ),
            ],
            "jobs": [
                ("describe_processing_job", {"ProcessingJobName": PREPROCESS.lower()}, preprocess, "ProcessingJobs", 2),
                (
                    "describe_training_job",
                    {"TrainingJobName": TRAIN.lower()},
                    training_job(TRAIN, "Failed", 2, 95, t1 + timedelta(seconds=30), FailureReason=TRAIN_FAILURE),
                    "TrainingJobs",
                    2,
                ),
            ],
        }
    if name == "failed-processing":  # Preprocess and Train cached from an older execution, Evaluate fails
        old_preprocess = processing_job(OLD_PREPROCESS, "Completed", 2, "ml.m5.xlarge", T0 - timedelta(days=1), 240)
        return {
            "status": "Failed",
            "reason": "Step failure: One or multiple steps failed.",
            "steps": [
                step(
                    "Preprocess",
                    "Succeeded",
                    T0,
                    2,
                    CacheHitResult={"SourcePipelineExecutionArn": OLD_EXECUTION_ARN},
                    Metadata={"ProcessingJob": {"Arn": job_arn("processing-job", OLD_PREPROCESS)}},
                ),
                step("CreateModel", "Succeeded", T0, 5, Metadata={"Model": {"Arn": job_arn("model", "m-1")}}),
                step(
                    "Transform",
                    "Succeeded",
                    t2,
                    60,
                    Metadata={"TransformJob": {"Arn": job_arn("transform-job", TRANSFORM)}},
                ),
                step(
                    "Evaluate",
                    "Failed",
                    t3,
                    240,
                    AttemptCount=2,
                    FailureReason=f"ClientError: {EVALUATE_FAILURE}",
                    Metadata={"ProcessingJob": {"Arn": job_arn("processing-job", EVALUATE)}},
                ),
            ],
            "jobs": [
                (
                    "describe_processing_job",
                    {"ProcessingJobName": OLD_PREPROCESS.lower()},
                    old_preprocess,
                    "ProcessingJobs",
                    2,
                ),
                (
                    "describe_transform_job",
                    {"TransformJobName": TRANSFORM.lower()},
                    transform_job(TRANSFORM, t2, 50),
                    "TransformJobs",
                    1,
                ),
                (
                    "describe_processing_job",
                    {"ProcessingJobName": EVALUATE.lower()},
                    processing_job(
                        EVALUATE,
                        "Failed",
                        1,
                        "ml.m5.large",
                        t3 + timedelta(seconds=60),
                        121,
                        FailureReason=EVALUATE_FAILURE,
                        ExitMessage="ValueError: the predictions have 3 rows, the labels 4",
                    ),
                    "ProcessingJobs",
                    1,
                ),
            ],
        }
    if name == "failed-preprocess":  # both instances' scripts failed on bad values; the job's ExitMessage says so
        return {
            "status": "Failed",
            "reason": "Step failure: One or multiple steps failed.",
            "steps": [
                step(
                    "Preprocess",
                    "Failed",
                    T0,
                    200,
                    FailureReason=f"ClientError: {PREPROCESS_FAILURE}",
                    Metadata=preprocess_metadata,
                )
            ],
            "jobs": [
                (
                    "describe_processing_job",
                    {"ProcessingJobName": PREPROCESS.lower()},
                    processing_job(
                        PREPROCESS,
                        "Failed",
                        2,
                        "ml.m5.xlarge",
                        T0 + timedelta(seconds=60),
                        120,
                        FailureReason=PREPROCESS_FAILURE,
                        ExitMessage=PREPROCESS_EXIT,
                    ),
                    "ProcessingJobs",
                    2,
                )
            ],
        }
    if name == "stopped":
        return {
            "status": "Stopped",
            "reason": None,
            "steps": [
                step("Preprocess", "Succeeded", T0, 300, Metadata=preprocess_metadata),
                step("Train", "Stopped", t1, 45, Metadata={"TrainingJob": {"Arn": job_arn("training-job", TRAIN)}}),
            ],
            "jobs": [
                ("describe_processing_job", {"ProcessingJobName": PREPROCESS.lower()}, preprocess, "ProcessingJobs", 2),
                (
                    "describe_training_job",
                    {"TrainingJobName": TRAIN.lower()},
                    training_job(TRAIN, "Stopped", 2, 30, t1 + timedelta(seconds=5)),
                    "TrainingJobs",
                    2,
                ),
            ],
        }
    assert name == "succeeded"
    evaluation_output = {
        "OutputName": "evaluation",
        "S3Output": {
            "S3Uri": f"s3://artifacts-bucket/churn-pipeline/{EXECUTION_ID}/evaluate/evaluation",
            "LocalPath": "/opt/ml/processing/output/evaluation",
            "S3UploadMode": "EndOfJob",
        },
    }
    evaluate = processing_job(
        EVALUATE, "Completed", 1, "ml.m5.large", t3, 100, ProcessingOutputConfig={"Outputs": [evaluation_output]}
    )
    return {
        "status": "Succeeded",
        "reason": None,
        "steps": [
            step(
                "Preprocess",
                "Succeeded",
                T0,
                2,
                CacheHitResult={"SourcePipelineExecutionArn": OLD_EXECUTION_ARN},
                Metadata={"ProcessingJob": {"Arn": job_arn("processing-job", OLD_PREPROCESS)}},
            ),
            step("Train", "Succeeded", t1, 200, Metadata={"TrainingJob": {"Arn": job_arn("training-job", TRAIN)}}),
            step(
                "Evaluate",
                "Succeeded",
                t3,
                130,
                Metadata={"ProcessingJob": {"Arn": job_arn("processing-job", EVALUATE)}},
            ),
            step("QualityGate", "Succeeded", t4, 1, Metadata={"Condition": {"Outcome": "True"}}),
            step(
                "Register",
                "Succeeded",
                t4,
                3,
                Metadata={"RegisterModel": {"Arn": job_arn("model-package", "churn-pipeline/7")}},
            ),
        ],
        "jobs": [
            (
                "describe_processing_job",
                {"ProcessingJobName": OLD_PREPROCESS.lower()},
                processing_job(OLD_PREPROCESS, "Completed", 2, "ml.m5.xlarge", T0 - timedelta(days=1), 240),
                "ProcessingJobs",
                2,
            ),
            (
                "describe_training_job",
                {"TrainingJobName": TRAIN.lower()},
                training_job(TRAIN, "Completed", 2, 170, t1),
                "TrainingJobs",
                2,
            ),
            ("describe_processing_job", {"ProcessingJobName": EVALUATE.lower()}, evaluate, "ProcessingJobs", 1),
        ],
        "report_key": f"churn-pipeline/{EXECUTION_ID}/evaluate/evaluation/evaluation.json",
    }


REPORT = {
    "binary_classification_metrics": {
        "auc": {"value": 0.9731, "standard_deviation": "NaN"},
        "auc_best_constant_classifier": {"value": 0.5, "standard_deviation": "NaN"},
        "accuracy": {"value": 0.9123, "standard_deviation": "NaN"},
        "confusion_matrix": {"0": {"0": 50, "1": 3}, "1": {"0": 2, "1": 45}},
    },
    "gate": {"metric": "auc", "value": 0.9731},
}


def streams(job: str, hosts: int) -> list[str]:
    return [f"{job}/algo-{host}-1767323045" for host in range(1, hosts + 1)]


def expect_show(session: StubbedSession, name: str, arn: str = EXECUTION_ARN) -> dict[str, Any]:
    """The requests of inspecting the scenario's execution, in order per client, with their responses."""
    data = scenario(name)
    sagemaker, logs = session.stubs["sagemaker"], session.stubs["logs"]
    described = {
        "PipelineArn": PIPELINE_ARN,
        "PipelineExecutionArn": arn,
        "PipelineExecutionDisplayName": "nightly",
        "PipelineExecutionStatus": data["status"],
        "CreationTime": T0,
        "LastModifiedTime": T0 + timedelta(minutes=20),
    }
    if data["reason"]:
        described["FailureReason"] = data["reason"]
    sagemaker.add_response("describe_pipeline_execution", described, {"PipelineExecutionArn": arn})
    sagemaker.add_response(
        "list_pipeline_parameters_for_execution",
        {"PipelineParameters": PARAMETERS[:2], "NextToken": "page-2"},
        {"PipelineExecutionArn": arn},
    )
    sagemaker.add_response(
        "list_pipeline_parameters_for_execution",
        {"PipelineParameters": PARAMETERS[2:]},
        {"PipelineExecutionArn": arn, "NextToken": "page-2"},
    )
    sagemaker.add_response(
        "list_pipeline_execution_steps",
        {"PipelineExecutionSteps": data["steps"]},
        {"PipelineExecutionArn": arn, "SortOrder": "Ascending"},
    )
    for operation, request, response, group, hosts in data["jobs"]:
        sagemaker.add_response(operation, response, request)
        job = next(value for key, value in response.items() if key.endswith("JobName"))  # the real-case name
        logs.add_response(
            "describe_log_streams",
            {"logStreams": [{"logStreamName": s, "creationTime": 1767323045000} for s in streams(job, hosts)]},
            {"logGroupName": f"/aws/sagemaker/{group}", "logStreamNamePrefix": f"{job}/"},
        )
    if "report_key" in data:
        body = json.dumps(REPORT).encode()
        session.stubs["s3"].add_response(
            "get_object",
            {"Body": StreamingBody(io.BytesIO(body), len(body)), "ContentLength": len(body)},
            {"Bucket": "artifacts-bucket", "Key": data["report_key"]},
        )
    return data


def show(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["execution", "show", *args, "--sagemaker", *CONFIG_FLAGS])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ---------------------------------------------------------------- execution show --sagemaker


def test_show_failed_training_step(session: StubbedSession, capsys: pytest.CaptureFixture[str]) -> None:
    expect_show(session, "failed-training")
    code, out, _ = show([EXECUTION_ID], capsys)
    session.verify()
    assert code == 0
    assert f"Execution {EXECUTION_ID} (nightly): Failed" in out
    assert "FeatureDim=5, ProcessingInstanceCount=2, TrainingInstanceCount=2" in out  # both pages
    assert "Failure: Step failure: One or multiple steps failed." in out
    assert f"Train failed: ClientError: {TRAIN_FAILURE}" in out
    assert f"ARN      {job_arn('training-job', TRAIN)}" in out
    assert "logs     /aws/sagemaker/TrainingJobs  https://us-west-2.console.aws.amazon.com/cloudwatch/" in out
    assert f"  streams  {TRAIN}/algo-1-1767323045\n           {TRAIN}/algo-2-1767323045\n" in out
    assert f"#/jobs/{TRAIN}" in out and f"#/processing-jobs/{PREPROCESS}" in out
    assert f"group=/aws/sagemaker/TrainingJobs;prefix={TRAIN}/" in out
    assert table_rows(out, "Steps") == [
        ["Preprocess", "Succeeded", "03:04:05", "5m00s", PREPROCESS],
        ["Train", "Failed", "03:09:05", "2m30s", TRAIN],
    ]
    # processing (end - start) 240 s x 2 instances; training BillableTimeInSeconds 95 x 2 (not its 115 s wall time)
    assert table_rows(out, "Compute (instance-seconds)") == [
        ["Preprocess", "ml.m5.xlarge", "2", "240", "480"],
        ["Train", "ml.m5.xlarge", "2", "95.0", "190"],
        ["total", "ml.m5.xlarge", "", "", "670"],
    ]


def test_show_failed_processing_step_with_cached_steps_and_its_logs(
    session: StubbedSession, capsys: pytest.CaptureFixture[str]
) -> None:
    expect_show(session, "failed-processing")
    session.stubs["logs"].add_response(
        "filter_log_events",
        {
            "events": [
                {"logStreamName": f"{EVALUATE}/algo-1-1767323045", "timestamp": 1767323100000, "message": "loading"},
            ],
            "nextToken": "more",
        },
        {"logGroupName": "/aws/sagemaker/ProcessingJobs", "logStreamNamePrefix": f"{EVALUATE}/"},
    )
    session.stubs["logs"].add_response(
        "filter_log_events",
        {
            "events": [
                {
                    "logStreamName": f"{EVALUATE}/algo-1-1767323045",
                    "timestamp": 1767323101000,
                    "message": "ValueError: the predictions have 3 rows, the labels 4",
                }
            ]
        },
        {"logGroupName": "/aws/sagemaker/ProcessingJobs", "logStreamNamePrefix": f"{EVALUATE}/", "nextToken": "more"},
    )
    code, out, _ = show([EXECUTION_ARN, "--logs"], capsys)
    session.verify()
    assert code == 0
    assert "cache hit from a0b1c2d3e4f5" in out and f"cached   outputs of {OLD_EXECUTION_ARN}" in out
    assert f"Evaluate failed: ClientError: {EVALUATE_FAILURE}" in out
    assert "(attempt 2)" in out
    assert "  exit     ValueError: the predictions have 3 rows, the labels 4\n" in out  # the job's ExitMessage
    assert job_arn("model", "m-1") in out  # the CreateModel step's outcome
    assert "Evaluate log (2 events)" in out
    assert "algo-1-1767323045 ValueError: the predictions have 3 rows, the labels 4" in out
    # the cached Preprocess cost this execution nothing; transform 50 s x 1, evaluate 121 s x 1
    rows = {cells[0]: cells[1:] for cells in table_rows(out, "Compute (instance-seconds)")}
    assert rows["Preprocess"] == ["ml.m5.xlarge", "2", "cache hit", "0.0"]
    assert rows["Transform"] == ["ml.m5.large", "1", "50.0", "50.0"]
    assert rows["Evaluate"] == ["ml.m5.large", "1", "121", "121"]
    assert rows["total"] == ["ml.m5.large", "", "", "171"]  # nothing on ml.m5.xlarge: the cached step cost none


def test_show_failed_preprocess_says_why_its_scripts_failed(
    session: StubbedSession, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the job's FailureReason said "See job logs", and the script wrote no /opt/ml/output/message, so the
    ExitMessage was empty. Now each instance's message, one line as the local backend's failure reason shows it."""
    expect_show(session, "failed-preprocess")  # DescribeProcessingJob {"ProcessingJobName": <lower-cased name>}
    code, out, _ = show([EXECUTION_ID], capsys)
    session.verify()
    assert code == 0
    assert f"Preprocess failed: ClientError: {PREPROCESS_FAILURE}\n" in out
    assert f"  failure  {PREPROCESS_FAILURE}\n" in out
    assert f"  exit     {PREPROCESS_EXIT_LINE}\n  console  " in out


def table_rows(text: str, title: str) -> list[list[str]]:
    """The body rows of the rich table under ``title``, as lists of stripped cells."""
    lines = [line.strip() for line in text.splitlines()]
    lines = lines[lines.index(title) :]
    body = lines[lines.index(next(line for line in lines if line.startswith("┡"))) + 1 :]
    rows = []
    for line in body:
        if not line.startswith("│"):
            break
        rows.append([cell.strip() for cell in line.strip("│").split("│")])
    return rows


def test_show_stopped_execution_as_json(session: StubbedSession, capsys: pytest.CaptureFixture[str]) -> None:
    expect_show(session, "stopped")
    code, out, _ = show([EXECUTION_ID, "--json"], capsys)
    session.verify()
    document = json.loads(out)
    assert code == 0
    assert document["status"] == "Stopped" and document["id"] == EXECUTION_ID
    train = document["steps"][1]
    assert train["status"] == "Stopped"
    assert train["job"]["cost"] == {
        "step": "Train",
        "kind": "TrainingJob",
        "instance_type": "ml.m5.xlarge",
        "instance_count": 2,
        "seconds": 30.0,
        "cached": False,
        "instance_seconds": 60.0,
    }
    assert train["job"]["log_streams"] == streams(TRAIN, 2)
    assert document["instance_seconds"] == 480.0 + 60.0
    assert document["parameters"] == {p["Name"]: p["Value"] for p in PARAMETERS}


def test_show_succeeded_execution_reads_the_evaluate_report(
    session: StubbedSession, capsys: pytest.CaptureFixture[str]
) -> None:
    expect_show(session, "succeeded")
    code, out, _ = show([EXECUTION_ID], capsys)
    session.verify()
    assert code == 0
    assert "auc" in out and "0.9731" in out and "0.5000" in out  # value beside its baseline
    assert "Quality gate: auc = 0.9731" in out
    assert "condition True" in out and job_arn("model-package", "churn-pipeline/7") in out
    assert f"Report: s3://artifacts-bucket/churn-pipeline/{EXECUTION_ID}/evaluate/evaluation/evaluation.json" in out
    # cached Preprocess 0, Train billable 170 x 2, Evaluate 100 x 1 on another type
    assert table_rows(out, "Compute (instance-seconds)") == [
        ["Preprocess", "ml.m5.xlarge", "2", "cache hit", "0.0"],
        ["Train", "ml.m5.xlarge", "2", "170", "340"],
        ["Evaluate", "ml.m5.large", "1", "100", "100"],
        ["total", "ml.m5.xlarge", "", "", "340"],
        ["total", "ml.m5.large", "", "", "100"],
    ]


def test_an_id_with_the_placeholder_role_asks_sts_for_the_account(
    session: StubbedSession, capsys: pytest.CaptureFixture[str]
) -> None:
    session.stubs["sts"].add_response(
        "get_caller_identity",
        {"UserId": "AIDA", "Account": ACCOUNT, "Arn": f"arn:aws:iam::{ACCOUNT}:user/operator"},
        {},
    )
    expect_show(session, "stopped")
    code = main(
        [
            "execution",
            "show",
            EXECUTION_ID,
            "--sagemaker",
            "--json",
            "--region",
            REGION,
            "--pipeline-name",
            "churn-pipeline",
        ]
    )
    session.verify()
    assert code == 0
    assert json.loads(capsys.readouterr().out)["arn"] == EXECUTION_ARN


@pytest.mark.parametrize("bad", ["arn:aws:sagemaker:us-west-2:123456789012:training-job/x", "a/b"])
def test_a_bad_execution_reference_is_a_usage_error(
    bad: str, session: StubbedSession, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = show([bad], capsys)
    session.verify()
    assert code == 2 and "llpipe execution show:" in err


def test_an_unknown_execution_is_one_line_and_exit_1(
    session: StubbedSession, capsys: pytest.CaptureFixture[str]
) -> None:
    session.stubs["sagemaker"].add_client_error(
        "describe_pipeline_execution",
        service_error_code="ResourceNotFound",
        service_message=f"Pipeline execution '{EXECUTION_ARN}' does not exist.",
        expected_params={"PipelineExecutionArn": EXECUTION_ARN},
    )
    code, out, err = show([EXECUTION_ID], capsys)
    session.verify()
    assert code == 1 and out == ""
    assert err.strip() == (
        f"llpipe execution show: DescribePipelineExecution {EXECUTION_ARN}: ResourceNotFound: "
        f"Pipeline execution '{EXECUTION_ARN}' does not exist."
    )


def test_a_job_that_never_logged_has_no_streams(session: StubbedSession) -> None:
    session.stubs["logs"].add_client_error(
        "describe_log_streams",
        service_error_code="ResourceNotFoundException",
        service_message="The specified log group does not exist.",
        expected_params={"logGroupName": "/aws/sagemaker/TransformJobs", "logStreamNamePrefix": "job-1/"},
    )
    assert sagemaker_inspect.log_streams(session.client("logs"), "/aws/sagemaker/TransformJobs", "job-1") == []
    session.verify()


# ---------------------------------------------------------------- retry, stop, start --from-step / --max-parallel


def test_retry_with_max_parallel(session: StubbedSession, capsys: pytest.CaptureFixture[str]) -> None:
    session.stubs["sagemaker"].add_response(
        "retry_pipeline_execution",
        {"PipelineExecutionArn": EXECUTION_ARN},
        {"PipelineExecutionArn": EXECUTION_ARN, "ParallelismConfiguration": {"MaxParallelExecutionSteps": 2}},
    )
    assert main(["retry", EXECUTION_ID, "--max-parallel", "2", *CONFIG_FLAGS]) == 0
    session.verify()
    assert capsys.readouterr().out == f"retrying {EXECUTION_ARN}\n"


def retry_and_wait(session: StubbedSession, name: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`llpipe retry --wait` of the scenario's execution: the retry, one poll, then Describe*Job of each job step."""
    data = scenario(name)
    stub = session.stubs["sagemaker"]
    stub.add_response(
        "retry_pipeline_execution", {"PipelineExecutionArn": EXECUTION_ARN}, {"PipelineExecutionArn": EXECUTION_ARN}
    )
    stub.add_response(
        "describe_pipeline_execution",
        {"PipelineExecutionArn": EXECUTION_ARN, "PipelineExecutionStatus": "Failed", "FailureReason": data["reason"]},
        {"PipelineExecutionArn": EXECUTION_ARN},
    )
    stub.add_response(
        "list_pipeline_execution_steps",
        {"PipelineExecutionSteps": data["steps"]},
        {"PipelineExecutionArn": EXECUTION_ARN, "SortOrder": "Ascending"},
    )
    for operation, request, response, _, _ in data["jobs"]:
        stub.add_response(operation, response, request)  # no log requests: the cost needs only the jobs
    code = main(["retry", EXECUTION_ARN, "--wait", "--poll-seconds", "0", *CONFIG_FLAGS])
    session.verify()
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_retry_wait_reports_cost_and_fails_with_the_execution(
    session: StubbedSession, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = retry_and_wait(session, "failed-training", capsys)
    assert code == 1
    assert err == f"execution failed: step Train: ClientError: {TRAIN_FAILURE}\n"
    assert "Compute (instance-seconds)" in out and "670" in out


def test_wait_says_why_a_processing_script_failed(session: StubbedSession, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: "step Preprocess: ClientError: AlgorithmError: See job logs for more information", and the reason was
    in CloudWatch only. The DescribeProcessingJob made for the cost brings the job's ExitMessage, no extra request."""
    code, out, err = retry_and_wait(session, "failed-preprocess", capsys)
    assert code == 1
    reason = f"step Preprocess: ClientError: {PREPROCESS_FAILURE}; ExitMessage: {PREPROCESS_EXIT_LINE}"
    assert err == f"execution failed: {reason}\n"
    assert "Compute (instance-seconds)" in out and "240" in out  # 120 s x 2 instances


def test_stop(session: StubbedSession, capsys: pytest.CaptureFixture[str]) -> None:
    session.stubs["sagemaker"].add_response(
        "stop_pipeline_execution", {"PipelineExecutionArn": EXECUTION_ARN}, {"PipelineExecutionArn": EXECUTION_ARN}
    )
    assert main(["stop", EXECUTION_ID, *CONFIG_FLAGS]) == 0
    session.verify()
    assert capsys.readouterr().out == f"stopping {EXECUTION_ARN}\n"


def test_stop_of_a_finished_execution_is_one_line(session: StubbedSession, capsys: pytest.CaptureFixture[str]) -> None:
    session.stubs["sagemaker"].add_client_error(
        "stop_pipeline_execution",
        service_error_code="ValidationException",
        service_message="Pipeline execution is not in Executing status",
        expected_params={"PipelineExecutionArn": EXECUTION_ARN},
    )
    assert main(["stop", EXECUTION_ID, *CONFIG_FLAGS]) == 1
    session.verify()
    assert "ValidationException: Pipeline execution is not in Executing status" in capsys.readouterr().err


@pytest.fixture(scope="module")
def definition_json() -> str:
    from pipeline.definition.build import build_definition

    return build_definition(CONFIG).definition_json


def test_start_from_a_step_selects_it_and_everything_downstream(
    session: StubbedSession, definition_json: str, capsys: pytest.CaptureFixture[str]
) -> None:
    stub = session.stubs["sagemaker"]
    stub.add_response(
        "describe_pipeline",
        {"PipelineArn": PIPELINE_ARN, "PipelineDefinition": definition_json},
        {"PipelineName": "Churn-Pipeline"},
    )
    expected_steps = ["Transform", "Evaluate", "QualityGate", "Register", "QualityGateFailed"]
    stub.add_response(
        "start_pipeline_execution",
        {"PipelineExecutionArn": EXECUTION_ARN},
        {
            "PipelineName": "Churn-Pipeline",
            "PipelineParameters": [{"Name": "MetricThreshold", "Value": "0.7"}, {"Name": "DataVersion", "Value": "v1"}],
            "SelectiveExecutionConfig": {
                "SourcePipelineExecutionArn": OLD_EXECUTION_ARN,
                "SelectedSteps": [{"StepName": name} for name in expected_steps],
            },
            "ParallelismConfiguration": {"MaxParallelExecutionSteps": 1},
        },
    )
    code = main(
        [
            "start",
            "--from-step",
            "Transform",
            "--source",
            "a0b1c2d3e4f5",
            "--max-parallel",
            "1",
            "--param",
            "MetricThreshold=0.7",
            "--param",
            "DataVersion=v1",  # given, so start lists no input objects to fingerprint
            *CONFIG_FLAGS,
        ]
    )
    session.verify()
    assert code == 0, capsys.readouterr().err
    assert f"started {EXECUTION_ARN}" in capsys.readouterr().out


def test_steps_downstream_of_each_step(definition_json: str) -> None:
    definition = json.loads(definition_json)
    assert start.steps_from(definition, "Register") == ["Register"]
    assert start.steps_from(definition, "QualityGate") == ["QualityGate", "Register", "QualityGateFailed"]
    everything = start.steps_from(definition, "Preprocess")
    assert everything[0] == "Preprocess" and len(everything) == 9
    with pytest.raises(errors.ParameterError, match="no such step"):
        start.steps_from(definition, "Deploy")


@pytest.mark.parametrize(
    "arguments",
    [["--from-step", "Train"], ["--source", EXECUTION_ID], ["--max-parallel", "0"], ["--max-parallel", "two"]],
)
def test_bad_start_options_are_usage_errors(
    arguments: list[str], session: StubbedSession, capsys: pytest.CaptureFixture[str]
) -> None:
    assert exit_code(["start", *arguments, *CONFIG_FLAGS]) == 2
    session.verify()  # nothing was sent
    assert "--from-step and --source go together" in capsys.readouterr().err or "--max-parallel" in arguments


def exit_code(argv: list[str]) -> int:
    """main's return value, or the exit code of an argparse error."""
    try:
        return main(argv)
    except SystemExit as error:
        return int(error.code or 0)


# ---------------------------------------------------------------- alerts


TOPIC = f"arn:aws:sns:{REGION}:{ACCOUNT}:ml-alerts"


def test_alerts_put_a_rule_on_failed_executions_targeting_the_topic(
    session: StubbedSession, capsys: pytest.CaptureFixture[str]
) -> None:
    session.stubs["sagemaker"].add_response(
        "describe_pipeline", {"PipelineArn": PIPELINE_ARN}, {"PipelineName": "Churn-Pipeline"}
    )
    pattern = {
        "source": ["aws.sagemaker"],
        "detail-type": ["SageMaker Model Building Pipeline Execution Status Change"],
        "detail": {"pipelineArn": [PIPELINE_ARN], "currentPipelineExecutionStatus": ["Failed"]},
    }
    rule_arn = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/Churn-Pipeline-failed"
    events = session.stubs["events"]
    events.add_response(
        "put_rule",
        {"RuleArn": rule_arn},
        {
            "Name": "Churn-Pipeline-failed",
            "EventPattern": json.dumps(pattern),
            "State": "ENABLED",
            "Description": "Failed executions of SageMaker pipeline Churn-Pipeline to SNS (llpipe alerts)",
        },
    )
    events.add_response(
        "put_targets",
        {"FailedEntryCount": 0, "FailedEntries": []},
        {
            "Rule": "Churn-Pipeline-failed",
            "Targets": [
                {
                    "Id": "llpipe-failure-topic",
                    "Arn": TOPIC,
                    "InputTransformer": {
                        "InputPathsMap": {"execution": "$.detail.pipelineExecutionArn", "time": "$.time"},
                        "InputTemplate": '"SageMaker pipeline Churn-Pipeline: execution <execution> failed at <time>. '
                        'Inspect it with: llpipe execution show <execution> --sagemaker --logs"',
                    },
                }
            ],
        },
    )
    assert main(["alerts", "--sns-topic", TOPIC, *CONFIG_FLAGS]) == 0
    session.verify()
    assert f"rule {rule_arn}" in capsys.readouterr().out


def test_alerts_delete_and_delete_of_nothing(session: StubbedSession, capsys: pytest.CaptureFixture[str]) -> None:
    events = session.stubs["events"]
    events.add_response(
        "remove_targets",
        {"FailedEntryCount": 0, "FailedEntries": []},
        {"Rule": "Churn-Pipeline-failed", "Ids": ["llpipe-failure-topic"]},
    )
    events.add_response("delete_rule", {}, {"Name": "Churn-Pipeline-failed"})
    events.add_client_error(
        "remove_targets",
        service_error_code="ResourceNotFoundException",
        service_message="Rule Churn-Pipeline-failed does not exist.",
        expected_params={"Rule": "Churn-Pipeline-failed", "Ids": ["llpipe-failure-topic"]},
    )
    assert main(["alerts", "--delete", *CONFIG_FLAGS]) == 0
    assert main(["alerts", "--delete", *CONFIG_FLAGS]) == 0
    session.verify()
    out = capsys.readouterr().out
    assert "deleted rule Churn-Pipeline-failed" in out and "nothing to delete" in out


def test_alerts_reject_a_topic_that_is_not_an_sns_arn(
    session: StubbedSession, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["alerts", "--sns-topic", "ml-alerts", *CONFIG_FLAGS]) == 2
    session.verify()
    assert "expected an SNS topic ARN" in capsys.readouterr().err


def test_long_pipeline_names_give_rule_names_within_the_limit() -> None:
    config = PipelineConfig(pipeline_name="p" * 120)
    name = alerts.alert_rule_name(config)
    assert len(name) == 64 and name.endswith("-failed")
    assert name != alerts.alert_rule_name(PipelineConfig(pipeline_name="p" * 119))


# ---------------------------------------------------------------- cost


def test_training_cost_is_billable_time_times_instances_and_cache_hits_cost_nothing() -> None:
    described = training_job("t", "Completed", 4, 100, T0, EnableManagedSpotTraining=True)
    assert sagemaker_inspect.job_cost("Train", "TrainingJob", described, cached=False).instance_seconds == 400.0
    assert sagemaker_inspect.job_cost("Train", "TrainingJob", described, cached=True).instance_seconds == 0.0
    running = processing_job("p", "InProgress", 2, "ml.m5.xlarge", T0, 10)
    del running["ProcessingEndTime"]
    cost = sagemaker_inspect.job_cost("Preprocess", "ProcessingJob", running, cached=False)
    assert cost.instance_seconds is None
    text = io.StringIO()
    Console(file=text, width=120).print(cost_table([cost]))
    assert "running" in text.getvalue()


def test_local_cost_from_the_record_and_the_definition(definition_json: str) -> None:
    from pipeline.local.executions import StepRecord

    definition = json.loads(definition_json)
    steps = {
        "Preprocess": StepRecord(
            "Preprocess", "Processing", "Succeeded", "2026-01-02T03:00:00+00:00", "2026-01-02T03:00:10+00:00"
        ),
        "Train": StepRecord("Train", "Training", "Succeeded", "2026-01-02T03:00:10+00:00", "2026-01-02T03:00:40+00:00"),
        "CreateModel": StepRecord(
            "CreateModel", "Model", "Succeeded", "2026-01-02T03:00:40+00:00", "2026-01-02T03:00:41+00:00"
        ),
        "Transform": StepRecord(
            "Transform", "Transform", "Succeeded", "2026-01-02T03:00:41+00:00", "2026-01-02T03:00:45+00:00"
        ),
        "Evaluate": StepRecord(
            "Evaluate",
            "Processing",
            "Succeeded",
            "2026-01-02T03:00:45+00:00",
            "2026-01-02T03:00:50+00:00",
            cache_hit_source="older",
        ),
    }
    costs = local_costs(steps, definition, {"TrainingInstanceCount": "3"})
    by_step = {cost.step: cost for cost in costs}
    assert set(by_step) == {"Preprocess", "Train", "Transform", "Evaluate"}
    assert by_step["Preprocess"] == JobCost("Preprocess", "ProcessingJob", "ml.m5.xlarge", 2, 10.0)  # the default
    assert by_step["Train"].instance_count == 3 and by_step["Train"].instance_seconds == 90.0  # the override
    assert by_step["Transform"].instance_type == "ml.m5.large"
    assert by_step["Evaluate"].instance_seconds == 0.0
    assert total_instance_seconds(costs) == 20.0 + 90.0 + 4.0 * by_step["Transform"].instance_count


def test_show_with_scaling_reads_each_training_job_s_hosts_and_names_the_idle_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``execution show --sagemaker --scaling`` on a 3-instance Train job over 2 ShardedByS3Key shards: after the
    execution's own requests, exactly DescribeTrainingJob, ListObjectsV2 of its train channel, GetMetricData of the
    hosts' CPUUtilization (Host=<job>/algo-N) and FilterLogEvents of their #throughput_metric lines; the printed
    record has the global batch (3 x 500), the total throughput, algo-3 idle, and a row per host."""
    session = StubbedSession("sagemaker", "logs", "s3", "cloudwatch")
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.setattr(aws, "session", lambda config: session)
    t1 = T0 + timedelta(minutes=5)
    sagemaker, logs = session.stubs["sagemaker"], session.stubs["logs"]
    sagemaker.add_response(
        "describe_pipeline_execution",
        {
            "PipelineArn": PIPELINE_ARN,
            "PipelineExecutionArn": EXECUTION_ARN,
            "PipelineExecutionStatus": "Succeeded",
            "CreationTime": T0,
            "LastModifiedTime": T0 + timedelta(minutes=20),
        },
        {"PipelineExecutionArn": EXECUTION_ARN},
    )
    sagemaker.add_response(
        "list_pipeline_parameters_for_execution",
        {"PipelineParameters": [{"Name": "TrainingInstanceCount", "Value": "3"}]},
        {"PipelineExecutionArn": EXECUTION_ARN},
    )
    train_step = step("Train", "Succeeded", t1, 520, Metadata={"TrainingJob": {"Arn": job_arn("training-job", TRAIN)}})
    sagemaker.add_response(
        "list_pipeline_execution_steps",
        {"PipelineExecutionSteps": [train_step]},
        {"PipelineExecutionArn": EXECUTION_ARN, "SortOrder": "Ascending"},
    )
    channel = {
        "ChannelName": "train",
        "DataSource": {
            "S3DataSource": {
                "S3DataType": "S3Prefix",
                "S3Uri": "s3://artifacts-bucket/run/train/",
                "S3DataDistributionType": "ShardedByS3Key",
            }
        },
    }
    described = training_job(
        TRAIN,
        "Completed",
        3,
        480,
        t1,
        HyperParameters={"mini_batch_size": "500"},
        InputDataConfig=[channel],
        SecondaryStatusTransitions=[
            {"Status": "Downloading", "StartTime": t1, "EndTime": t1 + timedelta(seconds=60)},
            {"Status": "Training", "StartTime": t1 + timedelta(seconds=60), "EndTime": t1 + timedelta(seconds=440)},
            {"Status": "Uploading", "StartTime": t1 + timedelta(seconds=440), "EndTime": t1 + timedelta(seconds=500)},
        ],
        FinalMetricDataList=[{"MetricName": "train:throughput", "Value": 120000.0, "Timestamp": t1}],
    )
    sagemaker.add_response("describe_training_job", described, {"TrainingJobName": TRAIN.lower()})
    logs.add_response(
        "describe_log_streams",
        {"logStreams": [{"logStreamName": s, "creationTime": 1767323045000} for s in streams(TRAIN, 3)]},
        {"logGroupName": "/aws/sagemaker/TrainingJobs", "logStreamNamePrefix": f"{TRAIN}/"},
    )
    # the scaling record's own requests
    sagemaker.add_response("describe_training_job", described, {"TrainingJobName": TRAIN})
    session.stubs["s3"].add_response(
        "list_objects_v2",
        {"Contents": [{"Key": f"run/train/train-algo-{n}-00000.pbr"} for n in (1, 2)]},
        {"Bucket": "artifacts-bucket", "Prefix": "run/train/"},
    )
    hosts = ["algo-1", "algo-2", "algo-3"]
    queries = cpu_utilization_queries(TRAIN, hosts)
    minute = [t1 + timedelta(minutes=2), t1 + timedelta(minutes=3)]
    session.stubs["cloudwatch"].add_response(
        "get_metric_data",
        {
            "MetricDataResults": [
                {"Id": "cpu0", "Label": "algo-1", "Values": [96.0, 98.0], "Timestamps": minute},
                {"Id": "cpu1", "Label": "algo-2", "Values": [90.0, 94.0], "Timestamps": minute},
                {"Id": "cpu2", "Label": "algo-3", "Values": [1.0, 1.0], "Timestamps": minute},
            ]
        },
        {"MetricDataQueries": queries, "StartTime": t1, "EndTime": t1 + timedelta(seconds=500)},
    )
    line = "[01/02/2026 03:12:00 INFO 140] #throughput_metric: host={}, train throughput={} records/second"
    logs.add_response(
        "filter_log_events",
        {"events": [{"message": line.format("algo-1", 61000.5)}, {"message": line.format("algo-2", 59000.0)}]},
        {
            "logGroupName": "/aws/sagemaker/TrainingJobs",
            "logStreamNamePrefix": f"{TRAIN}/algo-",
            "filterPattern": '"#throughput_metric"',
        },
    )
    code = main(["execution", "show", EXECUTION_ID, "--sagemaker", "--scaling", *CONFIG_FLAGS])
    session.verify()
    out = capsys.readouterr().out
    assert code == 0
    assert (
        f"Scaling of Train job {TRAIN}: 3 instance(s), global batch 1,500, 120,000 records/s, sync not "
        "reported, imbalance 1.03, idle: algo-3\n  algo-3 had no train shard and idled: use at most as many "
        "instances as train shards\n"
    ) in out
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│ algo-")]
    assert rows == [
        ["algo-1", "1", "0", "61,000", "-", "-", "-", "97"],  # the service reports no compute or wait time
        ["algo-2", "1", "0", "59,000", "-", "-", "-", "92"],
        ["algo-3 (idle)", "0", "0", "0", "0.00", "0.00", "0%", "1"],
    ]
