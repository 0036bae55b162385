"""``upsert``/``start`` and the SageMaker execution object at the AWS boundary: moto for what it implements
(CreatePipeline, S3, StartPipelineExecution, DescribePipelineExecution, ListPipelineParametersForExecution), botocore's
Stubber for the calls it does not (ListPipelineExecutionSteps) and the job descriptions, with exact requests."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import boto3
import numpy as np
import pytest
from botocore.stub import Stubber

from pipeline.api import get_execution, start, upsert
from pipeline.api.sagemaker_execution import SageMakerExecution
from pipeline.definition.config import load_config

FIXTURES = Path(__file__).parents[1] / "fixtures" / "model_monitor"
REGION = "eu-west-1"
ROLE = "arn:aws:iam::123456789012:role/PipelineRole"
SETTINGS = {"bucket": "studio-bucket", "role_arn": ROLE, "region": REGION}
ARN = f"arn:aws:sagemaker:{REGION}:123456789012:pipeline/linear-learner-pipeline/execution/abc123def456"
SOURCE = f"arn:aws:sagemaker:{REGION}:123456789012:pipeline/linear-learner-pipeline/execution/0123456789ab"
JOB = f"arn:aws:sagemaker:{REGION}:123456789012:processing-job/pipelines-abc123def456-evaluate-x1"
PACKAGE = f"arn:aws:sagemaker:{REGION}:123456789012:model-package/linear-learner-models/7"
REPORT_PREFIX = "s3://studio-bucket/linear-learner-pipeline/0123456789ab/evaluate/evaluation"
REPORT = {
    "version": 0.0,
    "dataset": {"item_count": 400, "file_count": 2},
    "binary_classification_metrics": {
        "auc": {"value": 0.97, "standard_deviation": 0.01},
        "accuracy": {"value": 0.91, "standard_deviation": 0.02},
        "accuracy_best_constant_classifier": {"value": 0.6, "standard_deviation": "NaN"},
    },
    "gate": {"metric": "auc", "value": 0.97},
}


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch):
    from moto import mock_aws

    from pipeline.core.botocore_session import new_botocore_session

    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "ARTIFACT_BUCKET"):
        monkeypatch.delenv(name, raising=False)
    with mock_aws():
        # moto drops boto3's default session; the new one shares the parsed service models (parsed once, not per test)
        boto3.setup_default_session(botocore_session=new_botocore_session())
        boto3.client("s3", region_name=REGION).create_bucket(
            Bucket="studio-bucket", CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        yield


def test_upsert_then_start_returns_an_execution_the_service_fills(aws) -> None:
    result = upsert(description="from a notebook", **SETTINGS)
    assert result.created and result.pipeline_arn.endswith(":pipeline/linear-learner-pipeline")
    s3 = boto3.client("s3", region_name=REGION)
    s3.put_object(Bucket="studio-bucket", Key="data/part-0.csv", Body=b"x,label\n1,0\n2,1\n")

    execution = start(InputDataUrl="s3://studio-bucket/data/", LabelColumn="label", Epochs=5, **SETTINGS)
    assert isinstance(execution, SageMakerExecution)
    described = boto3.client("sagemaker", region_name=REGION).describe_pipeline_execution(
        PipelineExecutionArn=execution.arn
    )
    assert execution.status == described["PipelineExecutionStatus"]
    parameters = execution.parameters
    assert parameters["Epochs"] == "5" and parameters["InputDataUrl"] == "s3://studio-bucket/data/"
    assert len(parameters["DataVersion"]) == 16
    assert execution.wait(poll_seconds=0, progress=False) is execution and execution.finished
    found = get_execution(execution.id, sagemaker=True, **SETTINGS)
    assert found.arn == execution.arn and found.parameters == parameters


def test_unknown_parameters_are_refused_against_the_deployed_definition(aws) -> None:
    from pipeline.core.errors import ParameterError

    upsert(**SETTINGS)
    with pytest.raises(ParameterError, match="unknown parameter"):
        start(Epoch=5, **SETTINGS)


def test_deploy_still_upserts_the_pipeline_with_a_deprecation_naming_upsert(aws) -> None:
    """The old name of upsert() keeps working for one release, and says what to call instead."""
    from pipeline.api import deploy

    with pytest.warns(DeprecationWarning) as caught:
        created = deploy(description="the old name", **SETTINGS)
    assert [str(warning.message) for warning in caught] == [
        "pipeline.deploy() upserts the pipeline and is renamed upsert(); deploy() goes in the next release "
        "(a model version is deployed with deploy_model())"
    ]
    assert caught[0].filename == __file__  # the warning points at the caller's line
    assert created.created and created.pipeline_arn.endswith(":pipeline/linear-learner-pipeline")
    described = boto3.client("sagemaker", region_name=REGION).describe_pipeline(PipelineName="linear-learner-pipeline")
    assert described["PipelineDescription"] == "the old name"
    assert not upsert(**SETTINGS).created  # the same pipeline, updated


class Session:
    """What SageMakerExecution asks of a boto3 session: a stubbed SageMaker client and (moto's) S3."""

    def __init__(self, sagemaker: Any) -> None:
        self.sagemaker = sagemaker

    def client(self, name: str) -> Any:
        return self.sagemaker if name == "sagemaker" else boto3.client(name, region_name=REGION)


def step(name: str, metadata: dict[str, Any], minutes: int, **extra: Any) -> dict[str, Any]:
    started = datetime(2026, 12, 1, 1, 0, tzinfo=timezone.utc) + timedelta(minutes=minutes)
    return {
        "StepName": name,
        "StartTime": started,
        "EndTime": started + timedelta(seconds=90),
        "StepStatus": "Succeeded",
        "Metadata": metadata,
        **extra,
    }


def test_a_finished_execution_reads_steps_report_gate_and_package_from_the_service(aws) -> None:
    boto3.client("s3", region_name=REGION).put_object(
        Bucket="studio-bucket",
        Key="linear-learner-pipeline/0123456789ab/evaluate/evaluation/evaluation.json",
        Body=json.dumps(REPORT).encode(),
    )
    client = boto3.client("sagemaker", region_name=REGION)
    stubber = Stubber(client)
    now = datetime(2026, 12, 1, tzinfo=timezone.utc)
    stubber.add_response(
        "describe_pipeline_execution",
        {"PipelineExecutionArn": ARN, "PipelineExecutionStatus": "Succeeded"},
        {"PipelineExecutionArn": ARN},
    )
    steps = [
        step("Evaluate", {"ProcessingJob": {"Arn": JOB}}, 1, CacheHitResult={"SourcePipelineExecutionArn": SOURCE}),
        step("QualityGate", {"Condition": {"Outcome": "True"}}, 3),
        step("Register", {"RegisterModel": {"Arn": PACKAGE}}, 4),
    ]
    stubber.add_response(
        "list_pipeline_execution_steps",
        {"PipelineExecutionSteps": steps},
        {"PipelineExecutionArn": ARN, "SortOrder": "Ascending"},
    )
    stubber.add_response(
        "describe_processing_job",
        {
            "ProcessingJobName": "pipelines-abc123def456-evaluate-x1",
            "ProcessingJobArn": JOB,
            "ProcessingJobStatus": "Completed",
            "CreationTime": now,
            "AppSpecification": {"ImageUri": "sklearn"},
            "RoleArn": ROLE,
            "ProcessingResources": {
                "ClusterConfig": {"InstanceCount": 1, "InstanceType": "ml.m5.large", "VolumeSizeInGB": 30}
            },
            "ProcessingOutputConfig": {
                "Outputs": [
                    {
                        "OutputName": "evaluation",
                        "S3Output": {
                            "S3Uri": REPORT_PREFIX,
                            "LocalPath": "/opt/ml/processing/evaluation",
                            "S3UploadMode": "EndOfJob",
                        },
                    }
                ]
            },
        },
        {"ProcessingJobName": "pipelines-abc123def456-evaluate-x1"},
    )
    stubber.add_response(
        "list_pipeline_parameters_for_execution",
        {"PipelineParameters": [{"Name": "MetricThreshold", "Value": "0.8"}]},
        {"PipelineExecutionArn": ARN},
    )
    stubber.add_response(
        "describe_model_package",
        {
            "ModelPackageName": "linear-learner-models",
            "ModelPackageGroupName": "linear-learner-models",
            "ModelPackageVersion": 7,
            "ModelPackageArn": PACKAGE,
            "CreationTime": now,
            "ModelPackageStatus": "Completed",
            "ModelPackageStatusDetails": {"ValidationStatuses": [], "ImageScanStatuses": []},
            "ModelApprovalStatus": "PendingManualApproval",
        },
        {"ModelPackageName": PACKAGE},
    )
    config = load_config(SETTINGS, env={})
    with stubber:
        execution = SageMakerExecution(config, ARN, session=Session(client))
        frame = execution.steps
        source = SOURCE.rsplit("/", 1)[-1]
        assert frame.to_dict(orient="records") == [
            {"step": "Evaluate", "type": "Processing", "status": "Succeeded", "seconds": 90.0, "cache_hit": source},
            {"step": "QualityGate", "type": "Condition", "status": "Succeeded", "seconds": 90.0, "cache_hit": None},
            {"step": "Register", "type": "RegisterModel", "status": "Succeeded", "seconds": 90.0, "cache_hit": None},
        ]
        metrics = execution.metrics
        assert metrics.loc["auc"].tolist()[:2] == [0.97, 0.01]
        assert metrics.loc["accuracy", "best_constant_classifier"] == 0.6
        # a report without a decision: the threshold is the parameter as given
        assert execution.gate == {
            "metric": "auc",
            "value": 0.97,
            "threshold": "0.8",
            "metric_threshold": "0.8",
            "passed": True,
        }
        assert execution.model_package == {
            "group": "linear-learner-models",
            "version": 7,
            "arn": PACKAGE,
            "approval_status": "PendingManualApproval",
        }
        assert execution.status == "Succeeded" and execution.id == "abc123def456"
        stubber.assert_no_pending_responses()


def test_predictions_are_read_from_the_transform_jobs_input_and_output_in_s3(aws) -> None:
    import io

    from containerlib.recordio import write_dense

    s3 = boto3.client("s3", region_name=REGION)
    prefix = "linear-learner-pipeline/abc123def456"
    labels = {"part-0.pbr": [1.0, 0.0, 1.0], "part-1.pbr": [0.0, 1.0]}
    scores = {"part-0.pbr": [0.9, 0.2, 0.7], "part-1.pbr": [0.4, 0.8]}
    for name, shard_labels in labels.items():
        shard = io.BytesIO()
        write_dense(shard, np.ones((len(shard_labels), 3), dtype=np.float32), np.asarray(shard_labels))
        s3.put_object(Bucket="studio-bucket", Key=f"{prefix}/preprocess/test/{name}", Body=shard.getvalue())
        lines = [json.dumps({"score": s, "predicted_label": int(s > 0.5)}) for s in scores[name]]
        s3.put_object(Bucket="studio-bucket", Key=f"{prefix}/transform/{name}.out", Body="\n".join(lines).encode())
        ids = [json.dumps({"file": f"in-{name}.csv", "row": row}) for row in range(1, len(shard_labels) + 1)]
        s3.put_object(Bucket="studio-bucket", Key=f"{prefix}/preprocess/summary/{name}.ids.jsonl",
                      Body="\n".join(ids).encode() + b"\n")  # fmt: skip
    transform_arn = f"arn:aws:sagemaker:{REGION}:123456789012:transform-job/pipelines-abc123def456-transform-x1"
    client = boto3.client("sagemaker", region_name=REGION)
    stubber = Stubber(client)
    stubber.add_response(
        "describe_pipeline_execution",
        {"PipelineExecutionArn": ARN, "PipelineExecutionStatus": "Succeeded"},
        {"PipelineExecutionArn": ARN},
    )
    stubber.add_response(
        "list_pipeline_execution_steps",
        {"PipelineExecutionSteps": [step("Transform", {"TransformJob": {"Arn": transform_arn}}, 2)]},
        {"PipelineExecutionArn": ARN, "SortOrder": "Ascending"},
    )
    stubber.add_response(
        "describe_transform_job",
        {
            "TransformJobName": "pipelines-abc123def456-transform-x1",
            "TransformJobArn": transform_arn,
            "TransformJobStatus": "Completed",
            "ModelName": "model",
            "CreationTime": datetime(2026, 12, 1, tzinfo=timezone.utc),
            "TransformInput": {
                "DataSource": {
                    "S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"s3://studio-bucket/{prefix}/preprocess/test"}
                }
            },
            "TransformOutput": {"S3OutputPath": f"s3://studio-bucket/{prefix}/transform"},
            "TransformResources": {"InstanceType": "ml.m5.large", "InstanceCount": 1},
        },
        {"TransformJobName": "pipelines-abc123def456-transform-x1"},
    )
    stubber.add_response(
        "list_pipeline_parameters_for_execution",
        {"PipelineParameters": [{"Name": "PredictorType", "Value": "binary_classifier"}]},
        {"PipelineExecutionArn": ARN},
    )
    with stubber:
        execution = SageMakerExecution(load_config(SETTINGS, env={}), ARN, session=Session(client))
        predictions = execution.predictions()
        stubber.assert_no_pending_responses()
    assert predictions.to_dict(orient="list") == {
        "file": ["in-part-0.pbr.csv"] * 3 + ["in-part-1.pbr.csv"] * 2,  # the row ids Preprocess wrote, in shard order
        "row": [1, 2, 3, 1, 2],
        "label": [1.0, 0.0, 1.0, 0.0, 1.0],
        "score": [0.9, 0.2, 0.7, 0.4, 0.8],
        "predicted_label": [1, 0, 1, 0, 1],
    }


def test_wait_polls_until_finished_and_shows_each_polls_steps(aws, capsys: pytest.CaptureFixture[str]) -> None:
    client = boto3.client("sagemaker", region_name=REGION)
    stubber = Stubber(client)
    running = {**step("Preprocess", {}, 0), "StepStatus": "Executing"}
    del running["EndTime"]
    for status, steps in (("Executing", [running]), ("Succeeded", [step("Preprocess", {}, 0)])):
        stubber.add_response(
            "describe_pipeline_execution",
            {"PipelineExecutionArn": ARN, "PipelineExecutionStatus": status},
            {"PipelineExecutionArn": ARN},
        )
        stubber.add_response(
            "list_pipeline_execution_steps",
            {"PipelineExecutionSteps": steps},
            {"PipelineExecutionArn": ARN, "SortOrder": "Ascending"},
        )
    with stubber:
        execution = SageMakerExecution(load_config(SETTINGS, env={}), ARN, session=Session(client))
        assert execution.wait(poll_seconds=0, progress=True) is execution
        stubber.assert_no_pending_responses()
    assert capsys.readouterr().err.splitlines() == [
        "abc123def456: Executing (Preprocess Executing)",
        "abc123def456: Succeeded (Preprocess Succeeded)",
    ]
    assert execution.status == "Succeeded" and repr(execution) == "<SageMakerExecution abc123def456: Succeeded>"


def test_the_data_quality_check_is_read_from_the_quality_check_steps_metadata_and_s3(aws) -> None:
    """ListPipelineExecutionSteps' QualityCheck metadata names the files; the violation report is read from S3."""
    s3 = boto3.client("s3", region_name=REGION)
    prefix = "linear-learner-pipeline/abc123def456/dataquality"
    statistics = json.loads((FIXTURES / "analyzer-statistics.json").read_text())
    s3.put_object(Bucket="studio-bucket", Key=f"{prefix}/statistics.json", Body=json.dumps(statistics).encode())
    violations = json.loads((FIXTURES / "constraint-violations.json").read_text())
    s3.put_object(
        Bucket="studio-bucket", Key=f"{prefix}/constraint_violations.json", Body=json.dumps(violations).encode()
    )
    client = boto3.client("sagemaker", region_name=REGION)
    stubber = Stubber(client)
    base = f"s3://studio-bucket/{prefix}"
    metadata = {
        "QualityCheck": {
            "CheckType": "DATA_QUALITY",
            "CalculatedBaselineStatistics": f"{base}/statistics.json",
            "CalculatedBaselineConstraints": f"{base}/constraints.json",
            "BaselineUsedForDriftCheckStatistics": "s3://studio-bucket/linear-learner-pipeline/e0/dataquality/statistics.json",
            "BaselineUsedForDriftCheckConstraints": "s3://studio-bucket/linear-learner-pipeline/e0/dataquality/constraints.json",
            "ModelPackageGroupName": "linear-learner-models",
            "ViolationReport": f"{base}/constraint_violations.json",
            "CheckJobArn": JOB,
            "SkipCheck": False,
            "RegisterNewBaseline": False,
        }
    }
    stubber.add_response(
        "describe_pipeline_execution",
        {"PipelineExecutionArn": ARN, "PipelineExecutionStatus": "Failed"},
        {"PipelineExecutionArn": ARN},
    )
    stubber.add_response(
        "list_pipeline_execution_steps",
        {"PipelineExecutionSteps": [step("DataQuality", metadata, 1, StepStatus="Failed")]},
        {"PipelineExecutionArn": ARN, "SortOrder": "Ascending"},
    )
    with stubber:
        view = SageMakerExecution(load_config(SETTINGS, env={}), ARN, session=Session(client)).data_quality
        stubber.assert_no_pending_responses()
    assert view["item_count"] == 100 and [feature["name"] for feature in view["features"]][:2] == ["_c0", "_c1"]
    assert view["violations"] == violations["violations"] and view["skipped"] is False
    assert view["drift_check_statistics"].endswith("/e0/dataquality/statistics.json")
