"""1 TB of input: `llpipe start` lists it (a stubbed ListObjectsV2, two pages of 1,000 objects), sizes every job from
it and sends exactly those parameters; the deployed definition, with them substituted, gives every host a volume at
least what it downloads and writes, replicates no data-sized input to every host, sizes Transform and Evaluate to the
test split, and every job's request is valid against botocore's SageMaker model."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from botocore.validate import validate_parameters
from support.aws_stubs import StubbedSession

from pipeline.cli import main
from pipeline.core.botocore_session import new_botocore_session
from pipeline.core.sizing import GB, InputData, plan_sizes
from pipeline.definition.build import BuiltDefinition, build_definition
from pipeline.definition.config import PipelineConfig
from pipeline.sagemaker import aws

CONFIG = PipelineConfig(
    region="us-west-2",
    role_arn="arn:aws:iam::123456789012:role/PipelineRole",
    bucket="artifacts-bucket",
    pipeline_name="big-pipeline",
)
ARN = "arn:aws:sagemaker:us-west-2:123456789012:pipeline/big-pipeline/execution/abc123def456"
INPUT = "s3://big-data/events/"
OBJECT_BYTES = 512 << 20
OBJECTS = [(f"part-{number:05d}.csv", OBJECT_BYTES, f'"{number:032x}"') for number in range(2048)]  # 1 TiB
OPERATIONS = {"Processing": "CreateProcessingJob", "Training": "CreateTrainingJob", "Transform": "CreateTransformJob"}
# the inputs every host of a job needs whole: small, fixed-size objects
SMALL_INPUTS = {"code", "schema", "summary"}


@pytest.fixture(scope="module")
def built() -> BuiltDefinition:
    return build_definition(CONFIG)


def expect_listing(session: StubbedSession) -> str:
    """ListObjectsV2 of INPUT in pages of 1,000 (the service's most); the DataVersion those objects give."""
    bucket, prefix = INPUT.removeprefix("s3://").split("/", 1)
    pages = [OBJECTS[start : start + 1000] for start in range(0, len(OBJECTS), 1000)]
    for number, page in enumerate(pages):
        request = {"Bucket": bucket, "Prefix": prefix}
        if number:
            request["ContinuationToken"] = f"page-{number}"
        response: dict[str, Any] = {
            "Contents": [{"Key": prefix + key, "Size": size, "ETag": etag} for key, size, etag in page],
            "IsTruncated": number < len(pages) - 1,
        }
        if number < len(pages) - 1:
            response["NextContinuationToken"] = f"page-{number + 1}"
        session.stubs["s3"].add_response("list_objects_v2", response, request)
    lines = "".join(f"{key}\0{size}\0{etag}\n" for key, size, etag in sorted(OBJECTS))
    return hashlib.sha256(lines.encode()).hexdigest()[:16]


def steps(definition: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for step in definition["Steps"]:
        found[step["Name"]] = step
        if step["Type"] == "Condition":
            found.update(steps({"Steps": step["Arguments"]["IfSteps"] + step["Arguments"]["ElseSteps"]}))
    return found


def resolve(value: Any, values: dict[str, Any]) -> Any:
    """Parameters by their values, other references by placeholders of the right type."""
    if isinstance(value, list):
        return [resolve(item, values) for item in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Get"}:
        path = value["Get"]
        if path.startswith("Parameters."):
            return values[path.removeprefix("Parameters.")]
        return "llpipe-model" if path.endswith("ModelName") else "s3://placeholder-bucket/prefix"
    if set(value) == {"Std:Join"}:
        return value["Std:Join"]["On"].join(str(part) for part in resolve(value["Std:Join"]["Values"], values))
    return {key: resolve(item, values) for key, item in value.items()}


def test_start_sizes_every_job_for_a_terabyte(
    built: BuiltDefinition, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    session = StubbedSession("sagemaker", "s3")
    describe = {"PipelineArn": "arn", "PipelineName": "big-pipeline", "PipelineDefinition": built.definition_json}
    session.stubs["sagemaker"].add_response("describe_pipeline", describe, {"PipelineName": "big-pipeline"})
    version = expect_listing(session)
    # the documented rules (docs/guides/very-large-data.md) worked by hand for 2,048 CSV objects of 512 MiB:
    # Preprocess: 100 instances (the most), the busiest reads 21 objects (10.5 GiB), writes 2.5x twice (spill) plus a
    # 2 GiB baseline sample: (10.5 + 52.5 + 2) x 1.25 + 1 MiB = 82 GB. Train: 2.5 TiB x 0.7 of RecordIO wants 36
    # instances of 50 GiB, capped at 20; in Pipe mode a host downloads 5 validation shards, 19.7 GiB: the 30 GB
    # default holds it. Transform: 384 GiB of test RecordIO, 20 GiB an instance: 20. Evaluate: the test split and its
    # predictions (1.5x): 960 GiB x 1.25 + 1 MiB = 1,201 GB.
    parameters = [
        {"Name": "InputDataUrl", "Value": INPUT},
        {"Name": "ProcessingInstanceCount", "Value": "100"},
        {"Name": "ProcessingVolumeSizeInGB", "Value": "82"},
        {"Name": "TrainingInstanceCount", "Value": "20"},
        {"Name": "TransformInstanceCount", "Value": "20"},
        {"Name": "EvaluationVolumeSizeInGB", "Value": "1201"},
        {"Name": "DataVersion", "Value": version},
    ]
    session.stubs["sagemaker"].add_response(
        "start_pipeline_execution",
        {"PipelineExecutionArn": ARN},
        {"PipelineName": "big-pipeline", "PipelineParameters": parameters},
    )
    monkeypatch.setattr(aws, "session", lambda config: session)
    argv = ["start", "--region", "us-west-2", "--pipeline-name", "big-pipeline", "--no-infer"]
    assert main([*argv, "--param", f"InputDataUrl={INPUT}"]) == 0
    session.verify()
    assert ARN in capsys.readouterr().out

    definition = json.loads(built.definition_json)
    values = {p["Name"]: p["DefaultValue"] for p in definition["Parameters"]}
    values.update({p["Name"]: p["Value"] for p in parameters})
    values = {name: int(value) if str(value).isdigit() else value for name, value in values.items()}
    plan = plan_sizes(InputData(tuple((key, size) for key, size, _ in OBJECTS)), values, set(values))
    model = new_botocore_session().get_service_model("sagemaker")
    for name, step in steps(definition).items():
        operation = OPERATIONS.get(step["Type"])
        if operation is None:
            continue
        request = resolve(step["Arguments"], values)
        if operation == "CreateTrainingJob":
            request["TrainingJobName"] = "big-train"
        validate_parameters(request, model.operation_model(operation).input_shape)
        if operation == "CreateProcessingJob":
            cluster = request["ProcessingResources"]["ClusterConfig"]
            hosts, volume = cluster["InstanceCount"], cluster["VolumeSizeInGB"]
            for item in request["ProcessingInputs"]:
                data_sized = item["InputName"] not in SMALL_INPUTS
                if hosts > 1 and data_sized:
                    assert item["S3Input"]["S3DataDistributionType"] == "ShardedByS3Key", (name, item)
        elif operation == "CreateTrainingJob":
            hosts, volume = request["ResourceConfig"]["InstanceCount"], request["ResourceConfig"]["VolumeSizeInGB"]
            distributions = {
                c["ChannelName"]: c["DataSource"]["S3DataSource"]["S3DataDistributionType"]
                for c in request["InputDataConfig"]
            }
            assert distributions == {"train": "ShardedByS3Key", "validation": "ShardedByS3Key"}
        else:
            hosts, volume = request["TransformResources"]["InstanceCount"], None
        if name in plan:
            size = plan[name]
            assert hosts == size.instances, name
            if volume is not None:
                assert volume * GB >= size.download_bytes + size.write_bytes, name
    # what each job's busiest host holds, checked against the rules' independent figures
    assert plan["Preprocess"].download_bytes == 21 * OBJECT_BYTES  # 2,048 objects dealt round-robin to 100
    assert plan["Evaluate"].download_bytes == int(2048 * OBJECT_BYTES * 2.5 * 0.15 * 2.5)
    assert steps(definition)["Transform"]["Arguments"]["TransformResources"]["InstanceCount"] == {
        "Get": "Parameters.TransformInstanceCount"
    }


def test_start_refuses_a_given_volume_too_small_for_a_terabyte(
    built: BuiltDefinition, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    session = StubbedSession("sagemaker", "s3")
    describe = {"PipelineArn": "arn", "PipelineName": "big-pipeline", "PipelineDefinition": built.definition_json}
    session.stubs["sagemaker"].add_response("describe_pipeline", describe, {"PipelineName": "big-pipeline"})
    expect_listing(session)
    monkeypatch.setattr(aws, "session", lambda config: session)
    argv = ["start", "--region", "us-west-2", "--pipeline-name", "big-pipeline", "--no-infer"]
    assert main([*argv, "--param", f"InputDataUrl={INPUT}", "--param", "EvaluationVolumeSizeInGB=500"]) == 2
    session.verify()  # no StartPipelineExecution: nothing started
    assert (
        "parameter EvaluationVolumeSizeInGB=500 is too small for the data: each Evaluate instance downloads up to "
        "1,030,792,151,040 bytes and writes up to 0; give at least EvaluationVolumeSizeInGB=1201"
    ) in capsys.readouterr().err


def test_a_schedule_fixes_the_sizes_of_todays_listing(built: BuiltDefinition) -> None:
    from pipeline.sagemaker.schedule import sized_for_schedule

    session = StubbedSession("s3")
    expect_listing(session)
    declared = {p["Name"]: p for p in json.loads(built.definition_json)["Parameters"]}
    assert sized_for_schedule(CONFIG, declared, {"InputDataUrl": INPUT}, session) == {
        "ProcessingInstanceCount": "100",
        "ProcessingVolumeSizeInGB": "82",
        "TrainingInstanceCount": "20",
        "TransformInstanceCount": "20",
        "EvaluationVolumeSizeInGB": "1201",
    }
    session.verify()


def test_the_capacity_plan_gives_the_sizes_the_definition_gets(built: BuiltDefinition) -> None:
    """``llpipe plan`` of the same listing, and of the same size stated (planned as 512 MiB objects), has the
    counts and volumes a schedule (and ``start``) gives the deployed definition, and the bytes behind them: both are
    ``pipeline.core.sizing``'s, from the same defaults."""
    import pipeline
    from pipeline.sagemaker.schedule import sized_for_schedule

    session = StubbedSession("s3")
    expect_listing(session)
    declared = {p["Name"]: p for p in json.loads(built.definition_json)["Parameters"]}
    sized = sized_for_schedule(CONFIG, declared, {"InputDataUrl": INPUT}, session)
    definition = {p["Name"]: int(p["DefaultValue"]) for p in declared.values() if p["Type"] == "Integer"}
    definition.update({name: int(value) for name, value in sized.items()})
    expect_listing(session)
    listed = pipeline.plan(INPUT, s3=session.client("s3"))
    session.verify()
    stated = pipeline.plan(bytes=f"{len(OBJECTS) * OBJECT_BYTES}")
    for plan in (listed, stated):
        steps = {step.step: step for step in plan.steps}
        assert steps["Preprocess"].instance_count == definition["ProcessingInstanceCount"] == 100
        assert steps["Preprocess"].volume_gb == definition["ProcessingVolumeSizeInGB"] == 82
        assert steps["Train"].instance_count == definition["TrainingInstanceCount"] == 20
        assert steps["Train"].volume_gb == definition["TrainingVolumeSizeInGB"] == 30
        assert steps["Transform"].instance_count == definition["TransformInstanceCount"] == 20
        assert steps["Evaluate"].volume_gb == definition["EvaluationVolumeSizeInGB"] == 1201
        for name, step in steps.items():
            if name != "Transform":
                assert step.volume_gb * GB >= step.download_bytes + step.write_bytes, name
        assert steps["Preprocess"].download_bytes == 21 * OBJECT_BYTES
        assert steps["Evaluate"].download_bytes == int(2048 * OBJECT_BYTES * 2.5 * 0.15 * 2.5)
