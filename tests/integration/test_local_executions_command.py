"""``llpipe executions --sagemaker`` lists the pipeline's executions through ListPipelineExecutions (moto at the AWS
boundary), newest first, with the same columns as the local list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline import cli

ROLE = "arn:aws:iam::123456789012:role/pipeline"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch):
    from moto import mock_aws

    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        yield


def test_sagemaker_executions_are_listed_newest_first(aws, capsys: pytest.CaptureFixture[str]) -> None:
    import boto3

    client = boto3.client("sagemaker", region_name="eu-west-1")
    client.create_pipeline(
        PipelineName="my-pipeline",
        RoleArn=ROLE,
        PipelineDefinition=json.dumps({"Version": "2020-12-01", "Parameters": [], "Steps": []}),
    )
    arns = [client.start_pipeline_execution(PipelineName="my-pipeline")["PipelineExecutionArn"] for _ in range(3)]
    argv = ["executions", "--sagemaker", "--json", "--region", "eu-west-1", "--pipeline-name", "my-pipeline"]
    assert cli.main([*argv, "--max-results", "2"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 2
    assert {row["arn"] for row in rows} <= set(arns)
    assert all(row["id"] == row["arn"].rsplit("/", 1)[-1] and row["status"] for row in rows)


def test_sagemaker_errors_are_one_line(aws, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["executions", "--sagemaker", "--region", "eu-west-1", "--pipeline-name", "missing-pipeline"]
    code = cli.main(argv)
    error = capsys.readouterr().err
    assert code == 1, error
    assert "missing-pipeline" in error and "Traceback" not in error


def test_durations_read_as_people_write_them() -> None:
    from datetime import datetime, timezone

    from pipeline.api.execution import seconds_between
    from pipeline.cli.executions import _duration

    start = datetime(2026, 11, 30, 5, 0, 0, tzinfo=timezone.utc)
    assert _duration(seconds_between(start.isoformat(), "2026-11-30T05:00:11.84+00:00")) == "11.8s"
    assert _duration(seconds_between(start, datetime(2026, 11, 30, 5, 4, 5, tzinfo=timezone.utc))) == "4m05s"
    assert _duration(seconds_between(start, None)) == "-", "a running execution has no duration yet"


def test_the_local_listing_is_readable_in_80_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: in an 80-column terminal or a pipe (which rich takes as 80 columns) the four unwrapped columns left the
    data, parameters, gate and failure columns two characters wide: one execution took hundreds of lines."""
    from pipeline.local.executions import ExecutionStore

    definition = {"Parameters": [{"Name": "Epochs", "Type": "Integer", "DefaultValue": 15}]}
    record = ExecutionStore(tmp_path / "executions").create("p", definition, {"Epochs": 3, "SchemaUrl": "s3://b/" * 9})
    record.status, record.end_time = "Failed", record.start_time
    record.failure_reason = "step Train failed: " + "a reason that goes on " * 8
    record.save()
    assert cli.main(["executions", "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    words = " ".join(out.split())  # long values wrap at the width
    assert lines[1].startswith(f"{record.id}  Failed  ") and lines[2].startswith("  parameters: Epochs=3")
    assert f"parameters:Epochs=3SchemaUrl={'s3://b/' * 9}" in "".join(out.split())
    assert "failure: step Train failed: a reason that goes on" in words
    assert len(lines) < 12 and max(len(line) for line in lines) <= 80, out
