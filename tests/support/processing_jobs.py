"""A processing job run by the real local job runners: its one-step definition and the interpreter around it, for
the local jobs' and the image environments' tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.local.executions import ExecutionStore
from pipeline.local.interpreter import Interpreter
from pipeline.local.jobs import local_runners
from pipeline.local.s3 import LocalS3
from pipeline.local.workdir import Workdir


def processing_definition(instances: int = 3, fail_on: str = "none", entrypoint: str = "python3") -> dict[str, Any]:
    """A one-step definition: a processing job of ``instances`` running s3://bkt/code/job.py on s3://bkt/data/ (sharded
    by key), its outputs under s3://bkt/out/<execution>."""
    return {
        "Version": "2020-12-01",
        "Parameters": [{"Name": "Instances", "Type": "Integer", "DefaultValue": instances}],
        "Steps": [
            {
                "Name": "Job",
                "Type": "Processing",
                "Arguments": {
                    "ProcessingResources": {"ClusterConfig": {"InstanceCount": {"Get": "Parameters.Instances"}}},
                    "AppSpecification": {
                        "ImageUri": "sklearn-image",
                        "ContainerEntrypoint": [entrypoint, "/opt/ml/processing/input/code/job.py"],
                        "ContainerArguments": [
                            "--data-dir",
                            "/opt/ml/processing/input/data",
                            "--output-dir=/opt/ml/processing/output",
                            "--fail-on",
                            fail_on,
                            "--resource-config",
                            "/opt/ml/config/resourceconfig.json",
                        ],
                    },
                    "Environment": {"GREETING": "hi"},
                    "ProcessingInputs": [
                        {
                            "InputName": "data",
                            "S3Input": {
                                "S3Uri": "s3://bkt/data/",
                                "LocalPath": "/opt/ml/processing/input/data",
                                "S3DataType": "S3Prefix",
                                "S3DataDistributionType": "ShardedByS3Key",
                            },
                        },
                        {
                            "InputName": "code",
                            "S3Input": {
                                "S3Uri": "s3://bkt/code/",
                                "LocalPath": "/opt/ml/processing/input/code",
                                "S3DataType": "S3Prefix",
                                "S3DataDistributionType": "FullyReplicated",
                            },
                        },
                    ],
                    "ProcessingOutputConfig": {
                        "Outputs": [
                            {
                                "OutputName": "result",
                                "S3Output": {
                                    "S3Uri": {
                                        "Std:Join": {
                                            "On": "/",
                                            "Values": ["s3://bkt/out", {"Get": "Execution.PipelineExecutionId"}],
                                        }
                                    },
                                    "LocalPath": "/opt/ml/processing/output",
                                },
                            }
                        ]
                    },
                },
            }
        ],
    }


def run(workdir: Path, definition: dict[str, Any], runners: dict[str, Any] | None = None):
    """Interpret ``definition`` with the local job runners (or ``runners``) in ``workdir``: the record, its S3."""
    s3 = LocalS3(workdir / "s3")
    interpreter = Interpreter(
        runners=runners or local_runners(Workdir(workdir), region="us-east-1", account="111122223333"),
        store=ExecutionStore(workdir / "executions"),
        read_json=lambda uri: json.loads(s3.path(uri).read_text()),
        pipeline_name="jobs-test",
    )
    return interpreter.run(definition, {}), s3
