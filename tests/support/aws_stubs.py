"""The AWS boundary for tests: real botocore clients (real service models, request validation) behind Stubbers."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.stub import Stubber

from pipeline.core.botocore_session import new_botocore_session

# one real session for every test, sharing the parsed service models with the sessions the product makes
REAL_SESSION = boto3.Session(
    aws_access_key_id="testing",
    aws_secret_access_key="testing",
    region_name="us-west-2",
    botocore_session=new_botocore_session(),
)


def aws_session(region: str = "us-east-1") -> boto3.Session:
    """A boto3 session of its own (its credentials, config, event hooks and clients) sharing the process's parsed
    service models, as the product's sessions do: a plain new session parses them again, ~0.1-0.2 s of CPU for
    SageMaker's and S3's models with their endpoint rules, in every test that makes one."""
    return boto3.Session(
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="x",
        region_name=region,
        botocore_session=new_botocore_session(),
    )


class StubbedSession:
    """A boto3-like session handing out one stubbed client per service (the AWS boundary, nothing else)."""

    def __init__(self, *services: str) -> None:
        self.clients = {name: REAL_SESSION.client(name) for name in services}
        self.stubs = {name: Stubber(client) for name, client in self.clients.items()}
        for stub in self.stubs.values():
            stub.activate()

    def client(self, name: str) -> Any:
        return self.clients[name]

    def verify(self) -> None:
        for stub in self.stubs.values():
            stub.assert_no_pending_responses()


def cpu_utilization_queries(job: str, hosts: list[str]) -> list[dict[str, Any]]:
    """The GetMetricData queries the scaling record sends: each host's mean CPUUtilization a minute, by its label."""
    return [
        {
            "Id": f"cpu{index}",
            "MetricStat": {
                "Metric": {
                    "Namespace": "/aws/sagemaker/TrainingJobs",
                    "MetricName": "CPUUtilization",
                    "Dimensions": [{"Name": "Host", "Value": f"{job}/{host}"}],
                },
                "Period": 60,
                "Stat": "Average",
            },
            "Label": host,
        }
        for index, host in enumerate(hosts)
    ]
