"""``llpipe endpoints`` and ``llpipe undeploy`` through ``AWS_ENDPOINT_URL``: a moto server on 127.0.0.1 holds a
deployed staging endpoint (made with the requests ``llpipe deploy`` sends), the commands read and remove it with
their ordinary boto3 clients, and the server's state says what they did."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from support.moto_additions import moto_server

from pipeline.cli import main
from pipeline.core.deployment import Version
from pipeline.definition.config import PipelineConfig
from pipeline.sagemaker import endpoint_requests as requests
from pipeline.sagemaker.endpoints import SageMakerEndpoints

REGION, ACCOUNT = "us-east-1", "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/PipelineRole"
CONFIG = PipelineConfig(region=REGION, role_arn=ROLE, bucket="my-bucket", pipeline_name="churn")
FLAGS = ["--region", REGION, "--role-arn", ROLE, "--bucket", "my-bucket", "--pipeline-name", "churn"]
PACKAGE = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:model-package/linear-learner-models/3"
VERSION = Version(
    PACKAGE, 3, "linear-learner-models", "Approved", f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:pipeline/churn/execution/e3"
)


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for name in ("AWS_ENDPOINT_URL_SAGEMAKER", "AWS_ENDPOINT_URL_CLOUDWATCH", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    with moto_server() as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL", url)
        yield url


def client(service: str, url: str) -> Any:
    return boto3.client(service, endpoint_url=url, region_name=REGION)


def deployed(url: str, stage: str, with_endpoint: bool = True) -> tuple[str, str]:
    """Model, endpoint config (tagged as deploy tags them, the smoke test passed) and endpoint of a stage."""
    sagemaker = client("sagemaker", url)
    name = requests.endpoint_name(CONFIG, stage)
    model = requests.model_request(CONFIG, name, stage, VERSION)
    sagemaker.create_model(**model)
    config = requests.endpoint_config_request(CONFIG, name, stage, VERSION, model["ModelName"])
    config["Tags"].append({"Key": requests.TAG_SMOKE_TEST, "Value": "passed: 200 rows at 2026-01-02T03:04:05Z"})
    sagemaker.create_endpoint_config(**config)
    if with_endpoint:
        sagemaker.create_endpoint(EndpointName=name, EndpointConfigName=config["EndpointConfigName"])
    for alarm in requests.alarm_requests(CONFIG, name):
        client("cloudwatch", url).put_metric_alarm(**alarm)
    return model["ModelName"], config["EndpointConfigName"]


def test_endpoints_lists_each_stage_from_the_live_configs_tags(
    endpoint: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # rich's table width: one line per stage
    deployed(endpoint, "staging")
    assert main(["endpoints", "--sagemaker", "--json", *FLAGS]) == 0
    staging, prod = json.loads(capsys.readouterr().out)
    assert (staging["endpoint"], staging["status"], staging["version"]) == ("churn-staging", "InService", 3)
    assert staging["package_arn"] == PACKAGE and staging["execution_arn"].endswith("/execution/e3")
    assert staging["smoke_test_passed"] is True and staging["since"]
    assert prod == {"stage": "prod", "endpoint": "churn-prod", "status": None}
    assert main(["endpoints", "--sagemaker", *FLAGS]) == 0
    table = capsys.readouterr().out
    assert "churn-staging" in table and "not deployed" in table and "passed: 200 rows" in table


def test_undeploy_removes_the_stages_endpoint_configs_models_and_alarms_only(
    endpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    staging_model, staging_config = deployed(endpoint, "staging")
    prod_model, prod_config = deployed(endpoint, "prod", with_endpoint=False)
    sagemaker = client("sagemaker", endpoint)
    sagemaker.create_model(ModelName="churn-staging-vnext", ExecutionRoleArn=ROLE, PrimaryContainer={"Image": "x"})
    assert main(["undeploy", "--stage", "staging", "--sagemaker", "--json", *FLAGS]) == 0
    removed = json.loads(capsys.readouterr().out)  # progress on stderr
    assert removed == {
        "endpoint": "churn-staging",
        "endpoint_deleted": True,
        "endpoint_configs": [staging_config],
        "models": [staging_model],
        "alarms": ["churn-staging-5xx-errors", "churn-staging-model-latency"],
    }
    assert [e["EndpointName"] for e in sagemaker.list_endpoints()["Endpoints"]] == []
    assert sorted(m["ModelName"] for m in sagemaker.list_models()["Models"]) == [prod_model, "churn-staging-vnext"]
    assert [c["EndpointConfigName"] for c in sagemaker.list_endpoint_configs()["EndpointConfigs"]] == [prod_config]
    alarms = client("cloudwatch", endpoint).describe_alarms()["MetricAlarms"]
    assert sorted(a["AlarmName"] for a in alarms) == ["churn-prod-5xx-errors", "churn-prod-model-latency"]

    assert main(["undeploy", "--stage", "staging", "--sagemaker", *FLAGS]) == 0  # again: nothing left, says so
    assert capsys.readouterr().out.startswith("staging: no endpoint named churn-staging")


def test_every_client_of_a_deployment_goes_to_aws_endpoint_url(endpoint: str) -> None:
    clients = SageMakerEndpoints(CONFIG).session
    for service in ("sagemaker", "sagemaker-runtime", "cloudwatch", "s3"):
        assert clients.client(service).meta.endpoint_url == endpoint
