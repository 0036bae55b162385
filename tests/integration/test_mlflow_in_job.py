"""Evaluate and Preprocess log their own MLflow runs from inside their jobs (issue 41): each bundle run as the
scikit-learn image runs it (Python 3.9, no MLflow installed) against a real ``mlflow server`` on 127.0.0.1, given the
tracking URI and the execution's parent run; MLflow's client reads the child run back with the report's metrics and
the rows per split, and Evaluate's ``evaluation.json`` as an artifact: through the server's artifact proxy, or written
to an S3 artifact root (a moto server on 127.0.0.1 standing in for S3, its objects listed). A store that cannot be
reached (a job with network isolation) is one warning line and the job still succeeds. For an ARN, the requests are
signed with SigV4 as the sagemaker-mlflow plugin signs them."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from mlflow import MlflowClient
from support.container import Container
from support.evaluation_inputs import write_binary_inputs
from support.mlflow_server import Server, free_port
from support.moto_additions import moto_server

from containerlib.mlflow_rest import MlflowRest

S3_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture(scope="module")
def server(mlflow_server: Server) -> Server:
    """The session's server (shared with test_mlflow_tracking; each test here logs to an experiment of its own)."""
    mlflow_server.wait_healthy()
    return mlflow_server


def evaluate_args(tmp_path: Path) -> list[str | Path]:
    predictions_dir, test_dir = write_binary_inputs(tmp_path)
    output_dir = tmp_path / "evaluation"
    return [
        "--predictor-type",
        "binary_classifier",
        "--predictions-dir",
        predictions_dir,
        "--test-dir",
        test_dir,
        "--output-dir",
        output_dir,
        "--metric-threshold",
        "0.5",
    ]


def test_evaluate_logs_its_child_run_from_inside_the_job(server: Server, container: Container, tmp_path: Path) -> None:
    client = MlflowClient(tracking_uri=server.uri)
    experiment = client.create_experiment("churn-pipeline")
    parent = client.create_run(experiment, run_name="abc123def456").info.run_id
    args = evaluate_args(tmp_path)
    result = container.run("evaluate", *args, "--mlflow-tracking-uri", server.uri, "--mlflow-parent-run-id", parent)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    (child,) = client.search_runs([experiment], filter_string=f"tags.`mlflow.parentRunId` = '{parent}'")
    assert child.info.run_name == "Evaluate" and child.info.status == "FINISHED"
    assert result.stdout.splitlines()[-1] == f"evaluate: MLflow run {child.info.run_id} (under {parent})"
    report = json.loads((tmp_path / "evaluation" / "evaluation.json").read_text())
    expected = {
        name: entry["value"]
        for name, entry in report["binary_classification_metrics"].items()
        if isinstance(entry, dict) and isinstance(entry.get("value"), float) and math.isfinite(entry["value"])
    }
    assert len(expected) >= 8
    assert {name: child.data.metrics[name] for name in expected} == expected
    assert child.data.metrics[f"gate.{report['gate']['metric']}"] == report["gate"]["value"]
    assert child.data.tags["llpipe.promote"] == ("true" if report["decision"]["promote"] else "false")
    assert child.data.tags["llpipe.logged_from"] == "job"
    assert child.data.params["decision.reason"] == report["decision"]["reason"]
    # the report as an artifact, through the server's artifact proxy (mlflow-artifacts:)
    assert child.info.artifact_uri.startswith("mlflow-artifacts:/")
    assert [item.path for item in client.list_artifacts(child.info.run_id)] == ["evaluation.json"]
    downloaded = client.download_artifacts(child.info.run_id, "evaluation.json", str(tmp_path))
    assert Path(downloaded).read_bytes() == (tmp_path / "evaluation" / "evaluation.json").read_bytes()


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """A moto server on 127.0.0.1 standing in for S3, reached by the job through ``AWS_ENDPOINT_URL``."""
    with moto_server() as url:
        yield url


def s3_client(endpoint: str) -> object:
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def test_evaluate_writes_its_report_to_an_s3_artifact_root(
    server: Server, container: Container, tmp_path: Path, s3_endpoint: str
) -> None:
    """An experiment whose artifacts are in S3, as SageMaker's managed MLflow keeps them: the job writes the report
    under the run's artifact URI with its own credentials (one PutObject), and nothing else."""
    s3 = s3_client(s3_endpoint)
    s3.create_bucket(Bucket="mlflow-artifacts")
    client = MlflowClient(tracking_uri=server.uri)
    experiment = client.create_experiment("s3-artifacts", artifact_location="s3://mlflow-artifacts/mlflow/7")
    parent = client.create_run(experiment, run_name="abc123def456").info.run_id
    result = container.run(
        "evaluate",
        *evaluate_args(tmp_path),
        *("--mlflow-tracking-uri", server.uri, "--mlflow-parent-run-id", parent),
        env={**S3_CREDENTIALS, "AWS_ENDPOINT_URL": s3_endpoint},
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    (child,) = client.search_runs([experiment], filter_string=f"tags.`mlflow.parentRunId` = '{parent}'")
    assert child.info.status == "FINISHED"
    key = f"mlflow/7/{child.info.run_id}/artifacts/evaluation.json"
    assert child.info.artifact_uri == f"s3://mlflow-artifacts/{key.rsplit('/', 1)[0]}"
    listed = s3.list_objects_v2(Bucket="mlflow-artifacts")["Contents"]
    assert [item["Key"] for item in listed] == [key]
    written = s3.get_object(Bucket="mlflow-artifacts", Key=key)
    assert written["ContentType"] == "application/json"
    assert written["Body"].read() == (tmp_path / "evaluation" / "evaluation.json").read_bytes()


def test_an_artifact_root_the_job_cannot_write_is_one_warning_and_the_run_is_logged_without_it(
    server: Server, container: Container, tmp_path: Path
) -> None:
    """S3 unreachable (no endpoint answers): the run holds its metrics and is FINISHED; one line says why the report
    is not among its artifacts."""
    closed = f"http://127.0.0.1:{free_port()}"
    client = MlflowClient(tracking_uri=server.uri)
    experiment = client.create_experiment("s3-unreachable", artifact_location="s3://mlflow-artifacts/mlflow/8")
    parent = client.create_run(experiment, run_name="abc123def456").info.run_id
    result = container.run(
        "evaluate",
        *evaluate_args(tmp_path),
        *("--mlflow-tracking-uri", server.uri, "--mlflow-parent-run-id", parent),
        env={**S3_CREDENTIALS, "AWS_ENDPOINT_URL": closed},
    )
    assert result.returncode == 0, result.stderr
    (child,) = client.search_runs([experiment], filter_string=f"tags.`mlflow.parentRunId` = '{parent}'")
    assert child.info.status == "FINISHED" and child.data.metrics
    key = f"mlflow/8/{child.info.run_id}/artifacts/evaluation.json"
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        f"evaluate: warning: MLflow: Evaluate's artifacts not uploaded to run {child.info.run_id}: "
        f"PutObject s3://mlflow-artifacts/{key}: "
    )
    assert result.stdout.splitlines()[-1] == f"evaluate: MLflow run {child.info.run_id} (under {parent})"


@pytest.mark.parametrize(
    ("tracking_uri", "artifact_uri"),
    [
        ("http://127.0.0.1:5000", "mlflow-artifacts:/1/0a1b2c/artifacts"),
        ("https://mlflow.example.com/team/", "mlflow-artifacts:/1/0a1b2c/artifacts"),
        ("http://127.0.0.1:5000", "mlflow-artifacts://artifacts.example.com:8443/1/0a1b2c/artifacts"),
    ],
)
def test_the_artifact_proxys_address_is_resolved_as_mlflows_client_resolves_it(
    tracking_uri: str, artifact_uri: str
) -> None:
    from mlflow.store.artifact.mlflow_artifacts_repo import MlflowArtifactsRepository

    expected = MlflowArtifactsRepository.resolve_uri(artifact_uri, tracking_uri.rstrip("/"))
    rest = MlflowRest(tracking_uri)
    assert rest.artifact_url(artifact_uri, "plots/roc curve.png") == f"{expected}/plots/roc%20curve.png"


def test_preprocess_logs_its_child_run_from_inside_the_job(
    server: Server, container: Container, tmp_path: Path
) -> None:
    from sklearn.datasets import load_breast_cancer

    frame = load_breast_cancer(as_frame=True).frame
    (tmp_path / "input").mkdir()
    frame.to_csv(tmp_path / "input" / "data.csv", index=False)
    client = MlflowClient(tracking_uri=server.uri)
    experiment = client.create_experiment("preprocess-in-job")
    parent = client.create_run(experiment, run_name="abc123def456").info.run_id
    result = container.run(
        "preprocess",
        *("--input-dir", tmp_path / "input", "--output-dir", tmp_path / "output"),
        *("--label-column", "target", "--predictor-type", "binary_classifier"),
        *("--resource-config", tmp_path / "absent.json", "--train-shards", "2"),
        *("--mlflow-tracking-uri", server.uri, "--mlflow-parent-run-id", parent),
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    (child,) = client.search_runs([experiment], filter_string=f"tags.`mlflow.parentRunId` = '{parent}'")
    assert child.info.run_name == "Preprocess" and child.info.status == "FINISHED"
    assert result.stdout.splitlines()[-1] == f"preprocess: MLflow run {child.info.run_id} (under {parent})"
    metrics = child.data.metrics
    assert metrics["rows.train"] + metrics["rows.validation"] + metrics["rows.test"] == len(frame)
    assert metrics["rows_read"] == len(frame) and metrics["rows_dropped"] == 0
    summary = json.loads(next((tmp_path / "output").rglob("summary*.json")).read_text())
    assert {split: metrics[f"rows.{split}"] for split in summary["rows"]} == summary["rows"]
    assert child.data.params["columns"].split(", ") == summary["feature_names"]
    assert sorted(summary["feature_names"]) == sorted(set(frame.columns) - {"target"})
    assert child.data.params["label_column"] == "target"
    assert child.data.tags["llpipe.host"] == "algo-1" and child.data.tags["llpipe.logged_from"] == "job"


def test_an_unreachable_store_is_one_warning_and_the_job_succeeds(container: Container, tmp_path: Path) -> None:
    """What a job with network isolation sees: no connection; the report is written all the same."""
    closed = f"http://127.0.0.1:{free_port()}"
    result = container.run(
        "evaluate", *evaluate_args(tmp_path), "--mlflow-tracking-uri", closed, "--mlflow-parent-run-id", "0" * 32
    )
    assert result.returncode == 0, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"evaluate: warning: MLflow: Evaluate's run not logged to {closed}: {closed} cannot be ")
    assert (tmp_path / "evaluation" / "evaluation.json").is_file()


@pytest.mark.parametrize(
    ("arn", "endpoint", "header", "service"),
    [
        (
            "arn:aws:sagemaker:us-west-2:123456789012:mlflow-tracking-server/tracker",
            "https://us-west-2.experiments.sagemaker.aws",
            "x-mlflow-sm-tracking-server-arn",
            "sagemaker-mlflow",
        ),
        (
            "arn:aws:sagemaker:eu-west-1:123456789012:mlflow-app/app-7x2k9abcd",
            "https://mlflow.sagemaker.eu-west-1.app.aws",
            "x-sm-mlflow-app-arn",
            "sagemaker",
        ),
    ],
)
def test_an_arn_is_reached_at_its_endpoint_with_sigv4_as_the_plugin_does(
    arn: str, endpoint: str, header: str, service: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sagemaker_mlflow.auth_provider import AuthProvider
    from sagemaker_mlflow.mlflow_sagemaker_helpers import SageMakerMLflowHostMetadataProvider

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDTESTING")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    rest = MlflowRest(arn)
    assert rest.base == endpoint and rest.headers[header] == arn
    # the plugin's own choices for the same ARN
    plugin = SageMakerMLflowHostMetadataProvider()
    plugin.set_arn(arn)
    assert plugin._get_endpoint() == endpoint
    provider = AuthProvider()
    provider.host_metadata_provider.set_arn(arn)
    assert provider._get_auth_service_name() == service
    region = arn.split(":")[3]
    signed = rest._signed("POST", f"{endpoint}/api/2.0/mlflow/runs/create", b"{}")
    assert signed["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDTESTING/")
    assert f"/{region}/{service}/aws4_request, SignedHeaders=" in signed["Authorization"]
    assert header in signed["Authorization"].split("SignedHeaders=", 1)[1]
