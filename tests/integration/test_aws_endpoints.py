"""The SageMaker commands honour boto3's standard endpoint settings: a moto server on 127.0.0.1 serves them.

``AWS_ENDPOINT_URL`` sends every service there; ``AWS_ENDPOINT_URL_SAGEMAKER`` only SageMaker (and wins over the
global one). The requests are checked by their effect on the server's state, read back with plain boto3 clients.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from support.moto_additions import moto_server

from pipeline.cli import main

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's account
ROLE = f"arn:aws:iam::{ACCOUNT}:role/PipelineRole"
PIPELINE = "endpoint-test"
FLAGS = ["--region", REGION, "--role-arn", ROLE, "--pipeline-name", PIPELINE]
DEFINITION = json.dumps({"Version": "2020-12-01", "Parameters": [{"Name": "Epochs", "Type": "Integer"}], "Steps": []})


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_server() as url:
        client("sagemaker", url).create_pipeline(PipelineName=PIPELINE, PipelineDefinition=DEFINITION, RoleArn=ROLE)
        yield url


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SAGEMAKER", "AWS_PROFILE", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")


def client(service: str, url: str) -> Any:
    return boto3.client(
        service, endpoint_url=url, region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing"
    )


def test_start_and_execution_show_through_aws_endpoint_url(
    endpoint: str, credentials: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    assert main(["start", "--param", "Epochs=3", "--max-parallel", "2", *FLAGS]) == 0
    arn = capsys.readouterr().out.split()[-1]
    execution_id = arn.rsplit("/", 1)[-1]
    described = client("sagemaker", endpoint).describe_pipeline_execution(PipelineExecutionArn=arn)
    assert described["ParallelismConfiguration"] == {"MaxParallelExecutionSteps": 2}

    assert main(["execution", "show", execution_id, "--sagemaker", "--json", *FLAGS]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["arn"] == arn == f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:pipeline/{PIPELINE}/execution/{execution_id}"
    assert shown["status"] == "Succeeded" and shown["parameters"] == {"Epochs": "3"}


def test_alerts_through_aws_endpoint_url(
    endpoint: str, credentials: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    topic = client("sns", endpoint).create_topic(Name="ml-alerts")["TopicArn"]
    assert main(["alerts", "--sns-topic", topic, *FLAGS]) == 0
    events = client("events", endpoint)
    rule = events.describe_rule(Name=f"{PIPELINE}-failed")
    assert json.loads(rule["EventPattern"]) == {
        "source": ["aws.sagemaker"],
        "detail-type": ["SageMaker Model Building Pipeline Execution Status Change"],
        "detail": {
            "pipelineArn": [f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:pipeline/{PIPELINE}"],
            "currentPipelineExecutionStatus": ["Failed"],
        },
    }
    [target] = events.list_targets_by_rule(Rule=f"{PIPELINE}-failed")["Targets"]
    assert (target["Id"], target["Arn"]) == ("llpipe-failure-topic", topic)
    assert main(["alerts", "--delete", *FLAGS]) == 0
    assert events.list_rules(NamePrefix=PIPELINE)["Rules"] == []


def test_the_sagemaker_specific_endpoint_wins_over_the_global_one(
    endpoint: str, credentials: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # the discard port: nothing answers there
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER", endpoint)
    assert main(["start", "--display-name", "service-specific", *FLAGS]) == 0
    arn = capsys.readouterr().out.split()[-1]
    assert main(["executions", "--sagemaker", "--json", *FLAGS]) == 0
    listed = {row["arn"] for row in json.loads(capsys.readouterr().out)}
    assert arn in listed
    # moto has no StopPipelineExecution: an HTTP 500 from the server proves the request reached it (not port 9)
    assert main(["stop", arn, *FLAGS]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"llpipe stop: StopPipelineExecution {arn}: 500") and "Could not connect" not in err


def test_execution_show_with_jobs_and_logs_from_the_stand_in(
    endpoint: str, credentials: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole `execution show --sagemaker --logs` path over HTTP: moto's jobs and CloudWatch Logs."""
    from support import moto_additions

    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    sagemaker, logs = client("sagemaker", endpoint), client("logs", endpoint)
    arn = sagemaker.start_pipeline_execution(PipelineName=PIPELINE)["PipelineExecutionArn"]
    train, evaluate = f"pipelines-{arn[-12:]}-Train-Ab12Cd", f"pipelines-{arn[-12:]}-Evaluate-Ef34Gh"
    training_arn = sagemaker.create_training_job(
        TrainingJobName=train,
        AlgorithmSpecification={
            "TrainingImage": "174872318107.dkr.ecr.us-east-1.amazonaws.com/linear-learner:1",
            "TrainingInputMode": "Pipe",
        },
        RoleArn=ROLE,
        OutputDataConfig={"S3OutputPath": "s3://artifacts/model/"},
        ResourceConfig={"InstanceType": "ml.m5.xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30},
        StoppingCondition={"MaxRuntimeInSeconds": 3600},
    )["TrainingJobArn"]
    processing_arn = sagemaker.create_processing_job(
        ProcessingJobName=evaluate,
        ProcessingResources={
            "ClusterConfig": {"InstanceCount": 1, "InstanceType": "ml.m5.large", "VolumeSizeInGB": 30}
        },
        AppSpecification={"ImageUri": "683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-scikit-learn:1.2-1"},
        RoleArn=ROLE,
    )["ProcessingJobArn"]
    moto_additions.STEPS[arn] = [
        {"StepName": "Train", "StepStatus": "Succeeded", "Metadata": {"TrainingJob": {"Arn": training_arn}}},
        {
            "StepName": "Evaluate",
            "StepStatus": "Failed",
            "FailureReason": "ClientError: AlgorithmError: See job logs for more information",
            "Metadata": {"ProcessingJob": {"Arn": processing_arn}},
        },
    ]
    logs.create_log_group(logGroupName="/aws/sagemaker/ProcessingJobs")
    logs.create_log_stream(logGroupName="/aws/sagemaker/ProcessingJobs", logStreamName=f"{evaluate}/algo-1-1767323045")
    logs.put_log_events(
        logGroupName="/aws/sagemaker/ProcessingJobs",
        logStreamName=f"{evaluate}/algo-1-1767323045",
        # CloudWatch Logs refuses events older than 14 days: stamped now
        logEvents=[
            {"timestamp": int(time.time() * 1000), "message": "ValueError: the predictions have 3 rows, the labels 4"}
        ],
    )

    assert main(["execution", "show", arn.rsplit("/", 1)[-1], "--sagemaker", "--logs", "--json", *FLAGS]) == 0
    shown = json.loads(capsys.readouterr().out)
    train_step, evaluate_step = shown["steps"]
    assert train_step["job"]["arn"] == training_arn and train_step["job"]["name"] == train
    assert train_step["job"]["cost"]["instance_count"] == 2
    assert evaluate_step["job"]["log_streams"] == [f"{evaluate}/algo-1-1767323045"]
    assert evaluate_step["failure_reason"] == "ClientError: AlgorithmError: See job logs for more information"
    [event] = shown["logs"]["Evaluate"]
    assert event["message"] == "ValueError: the predictions have 3 rows, the labels 4"
