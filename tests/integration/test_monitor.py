"""``llpipe monitor``: served traffic checked against the served version's registered baseline.

Locally on capture files written as SageMaker writes them (tests/support/capture_files.py; ``llpipe serve`` writes the
real ones), through the real monitoring job (the analyzer's stand-in in the image's environment); on SageMaker the
schedule's exact requests, asserted with botocore's Stubber.
"""

from __future__ import annotations

import base64
import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from support import drift_table
from support.aws_stubs import StubbedSession
from support.capture_files import Captured, write_capture

from dataquality.dataset import DatasetFormat
from dataquality.job import analyze
from dataquality.settings import Settings
from pipeline import cli
from pipeline.core.errors import AwsError, MonitorError
from pipeline.definition.config import PipelineConfig, load_config
from pipeline.local.registry import LocalRegistry
from pipeline.local.s3 import LocalS3
from pipeline.local.workdir import Workdir
from pipeline.sagemaker import monitoring

FEATURES = ["tenure", "minutes", "calls", "plan"]
START = datetime(2024, 1, 19, 18, 0, tzinfo=timezone.utc)
WINDOW = ["--start", "2024-01-19T18:00:00Z", "--end", "2024-01-19T19:00:00Z"]
GROUP = "linear-learner-models"
PACKAGE_ARN = f"arn:aws:sagemaker:us-east-1:111122223333:model-package/{GROUP}/1"
BASELINE = "s3://llpipe-local/linear-learner-pipeline/e1/dataquality"


def register_with_baseline(workdir: Workdir, tmp_path: Path) -> str:
    """An approved version whose DriftCheckBaselines were calculated by the analyzer from the table's raw columns
    (what the pipeline's DataQuality step registers)."""
    s3 = LocalS3(workdir.s3)
    rows = drift_table.write(drift_table.table()[FEATURES], tmp_path / "baseline-rows", parts=1)
    analyze(Settings(rows, DatasetFormat.parse('{"csv": {"header": true}}'), s3.path(BASELINE)))
    model = "s3://llpipe-local/linear-learner-pipeline/e1/train/model.tar.gz"
    s3.put_bytes(model, b"model")
    sources = {
        "Statistics": {"ContentType": "application/json", "S3Uri": f"{BASELINE}/statistics.json"},
        "Constraints": {"ContentType": "application/json", "S3Uri": f"{BASELINE}/constraints.json"},
    }
    request = {
        "ModelPackageGroupName": GROUP,
        "ModelApprovalStatus": "Approved",
        "InferenceSpecification": {"Containers": [{"Image": "linear-learner:1", "ModelDataUrl": model}]},
        "ModelMetrics": {"ModelDataQuality": sources},
        "DriftCheckBaselines": {"ModelDataQuality": sources},
    }
    return LocalRegistry(workdir.registry_db).register(request, region="us-east-1", account="111122223333").arn


def csv_requests(frame: Any) -> list[Captured]:
    """One headerless CSV row per request, as a client sends raw rows, ten seconds apart."""
    rows = frame[FEATURES].itertuples(index=False)
    return [
        Captured(START + timedelta(seconds=10 * i), "text/csv", ",".join(map(str, row))) for i, row in enumerate(rows)
    ]


def json_requests(frame: Any) -> list[Captured]:
    """Ten JSON records per request (named columns), a minute apart."""
    records = frame[FEATURES].to_dict("records")
    return [
        Captured(START + timedelta(minutes=i // 10), "application/json", json.dumps(records[i : i + 10]))
        for i in range(0, len(records), 10)
    ]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Workdir:
    """A work dir with the approved version and three endpoints' capture files: clean CSV, drifted JSON, and clean
    traffic captured after the window."""
    root = tmp_path_factory.mktemp("served")
    workdir = Workdir.at(root / "work")
    register_with_baseline(workdir, root)
    capture = LocalS3(workdir.s3).path("s3://llpipe-local/linear-learner-pipeline/datacapture")
    write_capture(capture, "ep-clean", "AllTraffic", csv_requests(drift_table.table(rows=300, seed=5)))
    drifted = drift_table.drifted(drift_table.table(rows=300, seed=6))
    write_capture(capture, "ep-drift", "AllTraffic", json_requests(drifted))
    late = [Captured(item.time + timedelta(hours=2), item.content_type, item.data) for item in json_requests(drifted)]
    write_capture(capture, "ep-late", "AllTraffic", late)
    return workdir


def monitor(workdir: Workdir, endpoint: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, Any]:
    """The exit code and the report's one part (one version served these test captures)."""
    code = cli.main(["monitor", "--endpoint", endpoint, *WINDOW, "--workdir", str(workdir.root), "--json", *extra])
    (part,) = json.loads(capsys.readouterr().out)["parts"]
    return code, part


def test_clean_traffic_reports_no_violations(
    served: Workdir, capsys: pytest.CaptureFixture[str], image_environment: Any
) -> None:
    code, report = monitor(served, "ep-clean", capsys)
    assert code == 0
    assert report["model_package_arn"] == PACKAGE_ARN
    view = report["data_quality"]
    assert view["violations"] == [] and view["item_count"] == 300
    assert [feature["name"] for feature in view["features"]] == FEATURES  # positional CSV named by the baseline
    written = LocalS3(served.s3).path(view["violation_report"])
    assert json.loads(written.read_text()) == {"violations": []}
    window = "2024/01/19/19/20240119T180000Z-20240119T190000Z"  # the hour of its end, then the window itself
    assert view["violation_report"].endswith(f"/monitoring/ep-clean/AllTraffic/{window}/constraint_violations.json")
    record = Path(report["record"])
    request = json.loads((record / "processing-request.json").read_text())
    assert request["Environment"]["dataset_format"] == monitoring_format()
    assert request["Environment"]["start_time"] == "2024-01-19T18:00:00Z"
    assert request["Environment"]["baseline_constraints"] == "/opt/ml/processing/baseline/constraints/constraints.json"


def monitoring_format() -> str:
    return '{"sagemakerCaptureJson": {"captureIndexNames": ["endpointInput", "endpointOutput"]}}'


def test_drifted_traffic_names_the_drifted_features_and_exits_1(
    served: Workdir, capsys: pytest.CaptureFixture[str], image_environment: Any
) -> None:
    code, report = monitor(served, "ep-drift", capsys, "--model-package", "1")
    assert code == 1
    found = {(item["feature_name"], item["constraint_check_type"]) for item in report["data_quality"]["violations"]}
    assert found == {
        ("minutes", "baseline_drift_check"),
        ("plan", "categorical_values_check"),
        ("plan", "baseline_drift_check"),
    }
    assert [Path(plot).name for plot in report["plots"]] == ["data-quality-minutes.png", "data-quality-plan.png"]
    assert all(Path(plot).stat().st_size > 0 for plot in report["plots"])


def test_a_window_without_captured_requests_is_an_error_naming_it(
    served: Workdir, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["monitor", "--endpoint", "ep-late", *WINDOW, "--workdir", str(served.root)]) == 1
    message = capsys.readouterr().err
    assert "no capture files of endpoint ep-late (variant AllTraffic)" in message
    assert "2024-01-19T18:00:00Z - 2024-01-19T19:00:00Z" in message


def test_a_version_without_a_baseline_or_nothing_approved_is_an_error(tmp_path: Path) -> None:
    from pipeline.local.monitor import served_package

    workdir = Workdir.at(tmp_path)
    with pytest.raises(MonitorError, match="has no approved version"):
        served_package(workdir, load_config(env={}), None)
    _register_without_baseline(workdir, "Approved")
    with pytest.raises(MonitorError, match="carries no DriftCheckBaselines.ModelDataQuality"):
        served_package(workdir, load_config(env={}), "latest-approved")


def _register_without_baseline(workdir: Workdir, status: str) -> str:
    """A model package version with no DriftCheckBaselines (a one-byte model); its ARN."""
    LocalS3(workdir.s3).put_bytes("s3://b/model.tar.gz", b"m")
    request = {
        "ModelPackageGroupName": GROUP,
        "ModelApprovalStatus": status,
        "InferenceSpecification": {"Containers": [{"Image": "i", "ModelDataUrl": "s3://b/model.tar.gz"}]},
    }
    return LocalRegistry(workdir.registry_db).register(request, region="us-east-1", account="111122223333").arn


def test_captures_of_versions_without_a_baseline_are_an_error_naming_each_version(
    served: Workdir, capsys: pytest.CaptureFixture[str]
) -> None:
    """Requests served by version 1 (with a baseline), by a version registered without one and by a version the
    registry does not know: nothing is checked, and the error names each version and its request count."""
    bare = _register_without_baseline(served, "PendingManualApproval")
    unknown = f"arn:aws:sagemaker:us-east-1:111122223333:model-package/{GROUP}/99"
    requests = csv_requests(drift_table.table(rows=30, seed=7))
    arns = [PACKAGE_ARN] * 10 + [bare] * 15 + [unknown] * 5
    mixed = [
        Captured(item.time, item.content_type, item.data, model_package_arn=arn)
        for item, arn in zip(requests, arns, strict=True)
    ]
    capture = LocalS3(served.s3).path("s3://llpipe-local/linear-learner-pipeline/datacapture")
    write_capture(capture, "ep-mixed", "AllTraffic", mixed)
    assert cli.main(["monitor", "--endpoint", "ep-mixed", *WINDOW, "--workdir", str(served.root)]) == 1
    message = " ".join(capsys.readouterr().err.split())
    assert f"served by {PACKAGE_ARN} (10), {bare} (15), {unknown} (5)" in message
    assert f"{bare} (15 requests) carries no DriftCheckBaselines.ModelDataQuality" in message
    assert f"{unknown} (5 requests): model package {unknown} not found" in message
    assert not list(LocalS3(served.s3).path("s3://llpipe-local/linear-learner-pipeline/monitoring").glob("ep-mixed"))


def _smoke_requests(count: int, arn: str, minute: int) -> list[Captured]:
    """Requests of encoded rows (RecordIO-protobuf, captured base64), as the deploy's smoke test sends them."""
    body = base64.b64encode(b"\x0a\x23\xd7\xce" + bytes(12)).decode()
    return [
        Captured(START + timedelta(minutes=minute, seconds=i), "application/x-recordio-protobuf", body,
                 model_package_arn=arn)
        for i in range(count)
    ]  # fmt: skip


@pytest.mark.parametrize("smoke_requests", [1, 7])
def test_a_version_whose_requests_are_only_the_smoke_test_is_skipped_with_a_note(
    served: Workdir, tmp_path: Path, capsys: pytest.CaptureFixture[str], image_environment: Any, smoke_requests: int
) -> None:
    """Version 1 served raw rows, a version deployed after it only the deploy's smoke test (encoded rows): the window
    is checked for version 1 and the other part is skipped with a note, not the whole window failed."""
    workdir = Workdir.at(tmp_path / "work")
    shutil.copytree(served.root, workdir.root)
    second = register_with_baseline(workdir, tmp_path)  # a later version, with a baseline of its own
    raw = [
        Captured(item.time, item.content_type, item.data, model_package_arn=PACKAGE_ARN)
        for item in csv_requests(drift_table.table(rows=40, seed=8))
    ]
    capture = LocalS3(workdir.s3).path("s3://llpipe-local/linear-learner-pipeline/datacapture")
    write_capture(capture, "ep-smoke", "AllTraffic", raw + _smoke_requests(smoke_requests, second, 50))
    code = cli.main(["monitor", "--endpoint", "ep-smoke", *WINDOW, "--workdir", str(workdir.root), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    (part,) = report["parts"]
    assert part["model_package_arn"] == PACKAGE_ARN and part["requests"] == 40
    (note,) = report["notes"]
    assert note.startswith(f"{second}: its {smoke_requests} request(s) in the window hold no raw rows")
    assert "smoke test" in note and "skipped" in note

    write_capture(capture, "ep-only-smoke", "AllTraffic", _smoke_requests(smoke_requests, second, 5))
    code = cli.main(["monitor", "--endpoint", "ep-only-smoke", *WINDOW, "--workdir", str(workdir.root)])
    error = " ".join(capsys.readouterr().err.split())
    assert code == 1 and "Traceback" not in error
    assert f"endpoint ep-only-smoke's {smoke_requests} captured request(s)" in error and "hold no raw rows" in error
    assert "--start" in error


# ------------------------------------------------------------------------------------------------------ SageMaker

CONFIG = PipelineConfig(
    region="us-east-1",
    role_arn="arn:aws:iam::111122223333:role/SageMakerRole",
    bucket="my-bucket",
    pipeline_name="p",
    model_package_group="grp",
)
ARN = "arn:aws:sagemaker:us-east-1:111122223333:model-package/grp/3"
STATISTICS = "s3://my-bucket/p/exec/dataquality/statistics.json"
CONSTRAINTS = "s3://my-bucket/p/exec/dataquality/constraints.json"
JOB_DEFINITION = {
    "JobDefinitionName": "llpipe-staging-dq-v3",
    "DataQualityBaselineConfig": {
        "ConstraintsResource": {"S3Uri": CONSTRAINTS},
        "StatisticsResource": {"S3Uri": STATISTICS},
    },
    "DataQualityAppSpecification": {
        "ImageUri": "156813124566.dkr.ecr.us-east-1.amazonaws.com/sagemaker-model-monitor-analyzer",
        "Environment": {"publish_cloudwatch_metrics": "Enabled"},
    },
    "DataQualityJobInput": {
        "EndpointInput": {
            "EndpointName": "llpipe-staging",
            "LocalPath": "/opt/ml/processing/input/endpoint",
            "S3InputMode": "File",
            "S3DataDistributionType": "FullyReplicated",
        }
    },
    "DataQualityJobOutputConfig": {
        "MonitoringOutputs": [
            {
                "S3Output": {
                    "S3Uri": "s3://my-bucket/p/monitoring/llpipe-staging",
                    "LocalPath": "/opt/ml/processing/output",
                    "S3UploadMode": "Continuous",
                }
            }
        ]
    },
    "JobResources": {"ClusterConfig": {"InstanceCount": 1, "InstanceType": "ml.m5.xlarge", "VolumeSizeInGB": 20}},
    "RoleArn": "arn:aws:iam::111122223333:role/SageMakerRole",
    "StoppingCondition": {"MaxRuntimeInSeconds": 1800},
    "NetworkConfig": {"EnableInterContainerTrafficEncryption": True, "EnableNetworkIsolation": False},
}
SCHEDULE_CONFIG = {
    "ScheduleConfig": {"ScheduleExpression": "cron(0 * ? * * *)"},
    "MonitoringJobDefinitionName": "llpipe-staging-dq-v3",
    "MonitoringType": "DataQuality",
}
DEFINITION_ARN = "arn:aws:sagemaker:us-east-1:111122223333:data-quality-job-definition/llpipe-staging-dq-v3"
SCHEDULE_ARN = "arn:aws:sagemaker:us-east-1:111122223333:monitoring-schedule/llpipe-staging-data-quality"


def expect_package_and_endpoint(stub: Any, capture: bool = True) -> None:
    stub.add_response(
        "list_model_packages",
        {"ModelPackageSummaryList": [package_summary()]},
        {
            "ModelPackageGroupName": "grp",
            "ModelApprovalStatus": "Approved",
            "SortBy": "CreationTime",
            "SortOrder": "Descending",
            "MaxResults": 1,
        },
    )
    source = {"ContentType": "application/json"}
    stub.add_response(
        "describe_model_package",
        {
            "ModelPackageName": "grp",
            "ModelPackageArn": ARN,
            "ModelPackageVersion": 3,
            "CreationTime": datetime(2026, 1, 1),
            "ModelPackageStatus": "Completed",
            "ModelPackageStatusDetails": {"ValidationStatuses": []},
            "DriftCheckBaselines": {
                "ModelDataQuality": {
                    "Statistics": {**source, "S3Uri": STATISTICS},
                    "Constraints": {**source, "S3Uri": CONSTRAINTS},
                }
            },
        },
        {"ModelPackageName": ARN},
    )
    stub.add_response(
        "describe_endpoint",
        {
            "EndpointName": "llpipe-staging",
            "EndpointArn": "arn:aws:sagemaker:us-east-1:111122223333:endpoint/llpipe-staging",
            "EndpointConfigName": "cfg",
            "EndpointStatus": "InService",
            "CreationTime": datetime(2026, 1, 1),
            "LastModifiedTime": datetime(2026, 1, 1),
            "DataCaptureConfig": {
                "EnableCapture": capture,
                "CaptureStatus": "Started",
                "CurrentSamplingPercentage": 100,
                "DestinationS3Uri": "s3://my-bucket/p/datacapture",
                "KmsKeyId": "",
            },
        },
        {"EndpointName": "llpipe-staging"},
    )


def package_summary() -> dict[str, Any]:
    return {
        "ModelPackageName": "grp",
        "ModelPackageArn": ARN,
        "ModelPackageVersion": 3,
        "CreationTime": datetime(2026, 1, 1),
        "ModelPackageStatus": "Completed",
        "ModelApprovalStatus": "Approved",
    }


def not_found(stub: Any, operation: str, parameters: dict[str, Any]) -> None:
    stub.add_client_error(operation, "ResourceNotFound", "not found", 400, expected_params=parameters)


def test_schedule_creates_the_job_definition_and_the_hourly_schedule_with_the_registered_baseline() -> None:
    session = StubbedSession("sagemaker")
    stub = session.stubs["sagemaker"]
    expect_package_and_endpoint(stub)
    not_found(stub, "describe_data_quality_job_definition", {"JobDefinitionName": "llpipe-staging-dq-v3"})
    stub.add_response("create_data_quality_job_definition", {"JobDefinitionArn": DEFINITION_ARN}, JOB_DEFINITION)
    not_found(stub, "describe_monitoring_schedule", {"MonitoringScheduleName": "llpipe-staging-data-quality"})
    stub.add_response(
        "create_monitoring_schedule",
        {"MonitoringScheduleArn": SCHEDULE_ARN},
        {
            "MonitoringScheduleName": "llpipe-staging-data-quality",
            "MonitoringScheduleConfig": SCHEDULE_CONFIG,
            "Tags": [],
        },
    )
    made = monitoring.schedule_data_quality(CONFIG, "llpipe-staging", session=session)
    session.verify()
    assert (made.created, made.schedule_arn, made.job_definition_arn) == (True, SCHEDULE_ARN, DEFINITION_ARN)
    assert (made.statistics, made.constraints, made.model_package_arn) == (STATISTICS, CONSTRAINTS, ARN)


def test_an_existing_schedule_is_pointed_at_the_new_versions_definition() -> None:
    session = StubbedSession("sagemaker")
    stub = session.stubs["sagemaker"]
    expect_package_and_endpoint(stub)
    stub.add_response(
        "describe_data_quality_job_definition",
        {**JOB_DEFINITION, "JobDefinitionArn": DEFINITION_ARN, "CreationTime": datetime(2026, 1, 1)},
        {"JobDefinitionName": "llpipe-staging-dq-v3"},
    )
    stub.add_response(
        "describe_monitoring_schedule",
        {
            "MonitoringScheduleArn": SCHEDULE_ARN,
            "MonitoringScheduleName": "llpipe-staging-data-quality",
            "MonitoringScheduleStatus": "Scheduled",
            "CreationTime": datetime(2026, 1, 1),
            "LastModifiedTime": datetime(2026, 1, 1),
            "MonitoringScheduleConfig": SCHEDULE_CONFIG,
        },
        {"MonitoringScheduleName": "llpipe-staging-data-quality"},
    )
    stub.add_response(
        "update_monitoring_schedule",
        {"MonitoringScheduleArn": SCHEDULE_ARN},
        {"MonitoringScheduleName": "llpipe-staging-data-quality", "MonitoringScheduleConfig": SCHEDULE_CONFIG},
    )
    made = monitoring.schedule_data_quality(CONFIG, "llpipe-staging", "latest-approved", session=session)
    session.verify()
    assert made.created is False and made.job_definition_arn == DEFINITION_ARN


def test_an_endpoint_that_captures_nothing_is_refused_before_anything_is_created() -> None:
    session = StubbedSession("sagemaker")
    expect_package_and_endpoint(session.stubs["sagemaker"], capture=False)
    with pytest.raises(AwsError, match="endpoint llpipe-staging does not capture its traffic"):
        monitoring.schedule_data_quality(CONFIG, "llpipe-staging", session=session)
    session.verify()


def test_the_analyzer_image_is_the_documented_one_of_each_region() -> None:
    """The accounts of the Developer Guide's model-monitor-pre-built-container table (read from the SDK's own)."""
    assert [monitoring.analyzer_image(region) for region in ("us-east-1", "eu-west-1", "cn-north-1")] == [
        "156813124566.dkr.ecr.us-east-1.amazonaws.com/sagemaker-model-monitor-analyzer",
        "468650794304.dkr.ecr.eu-west-1.amazonaws.com/sagemaker-model-monitor-analyzer",
        "453000072557.dkr.ecr.cn-north-1.amazonaws.com.cn/sagemaker-model-monitor-analyzer",
    ]
    assert monitoring.job_definition_name("e" * 70, 12) == "e" * 56 + "-dq-v12"  # 63 characters at most
