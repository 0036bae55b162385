"""MLflow on SageMaker (issue 41), asserted request by request with botocore's Stubber: the tracking server or App
ARN in the configuration and the definition's MlflowConfig, the experiment named per execution by ``start`` and by
the schedule, and Linear Learner's metrics forwarded from the training job's own record into MLflow runs that
MLflow's client reads back."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from botocore.stub import ANY
from support.aws_stubs import REAL_SESSION, StubbedSession

from pipeline.cli import main
from pipeline.core.errors import ConfigError
from pipeline.definition.build import build_definition
from pipeline.definition.config import PipelineConfig, load_config
from pipeline.sagemaker import aws, schedule, start
from pipeline.sagemaker.mlflow_metrics import forward_execution

ACCOUNT = "123456789012"
APP_ARN = f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:mlflow-app/app-7x2k9abcd"
CONFIG = PipelineConfig(
    region="us-west-2",
    role_arn=f"arn:aws:iam::{ACCOUNT}:role/PipelineRole",
    bucket="artifacts-bucket",
    pipeline_name="churn-pipeline",
    mlflow_arn=APP_ARN,
)
PIPELINE_ARN = f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:pipeline/churn-pipeline"
EXECUTION_ARN = f"{PIPELINE_ARN}/execution/abc123def456"
JOB = "pipelines-abc123def456-Train-x1y2z3"
JOB_ARN = f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:training-job/{JOB.lower()}"
T0 = datetime(2026, 12, 1, 3, 0, 5, tzinfo=timezone.utc)
PACKAGE_ARN = f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:model-package/churn-models/7"
UPDATE_REQUEST = {"ModelPackageArn": PACKAGE_ARN, "CustomerMetadataProperties": ANY}  # the run id: read back below
SCHEDULE_ARN = f"arn:aws:scheduler:us-west-2:{ACCOUNT}:schedule/default/churn-pipeline"


@pytest.fixture(scope="module")
def definition() -> dict[str, Any]:
    return json.loads(build_definition(CONFIG).definition_json)


def test_an_mlflow_arn_that_is_neither_a_tracking_server_nor_an_app_is_refused() -> None:
    wrong = f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:mlflow/tracker"
    with pytest.raises(ConfigError) as error:
        load_config({"mlflow_arn": wrong}, env={})
    assert str(error.value) == (
        f"mlflow_arn: {wrong!r} is not valid; expected an MLflow tracking server or App ARN: "
        "arn:aws:sagemaker:REGION:ACCOUNT:mlflow-tracking-server/NAME or ...:mlflow-app/ID (from overrides)"
    )
    assert load_config({}, env={"LLPIPE_MLFLOW_ARN": APP_ARN}).mlflow_arn == APP_ARN


def test_the_definition_names_the_server_and_the_pipelines_own_experiment(definition: dict[str, Any]) -> None:
    """The default experiment is the pipeline's name (where scheduled executions land), nothing per execution; the
    steps are configured exactly as without MLflow (the SDK passes nothing to them, nor does the project)."""
    assert definition["MlflowConfig"] == {"MlflowExperimentName": "churn-pipeline", "MlflowResourceArn": APP_ARN}
    without = json.loads(build_definition(dataclasses.replace(CONFIG, mlflow_arn=None)).definition_json)
    assert without.get("MlflowConfig") is None
    assert definition["Steps"] == without["Steps"] and definition["Parameters"] == without["Parameters"]
    assert {key: value for key, value in definition.items() if key != "MlflowConfig"} == {
        key: value for key, value in without.items() if key != "MlflowConfig"
    }


def test_start_names_the_executions_experiment(definition: dict[str, Any]) -> None:
    config = dataclasses.replace(CONFIG, mlflow_experiment="churn-experiments")
    session = StubbedSession("sagemaker", "s3")
    request = start.start_request(config, {"DataVersion": "v1"}, session, definition=definition)
    session.stubs["sagemaker"].add_response(
        "start_pipeline_execution",
        {"PipelineExecutionArn": EXECUTION_ARN},
        {
            "PipelineName": "churn-pipeline",
            "PipelineParameters": [{"Name": "DataVersion", "Value": "v1"}],
            "MlflowExperimentName": "churn-experiments",
        },
    )
    assert start.start(config, session=session, request=request) == EXECUTION_ARN
    session.verify()
    plain = start.start_request(
        dataclasses.replace(CONFIG, mlflow_arn=None), {"DataVersion": "v1"}, session, None, definition=definition
    )
    assert "MlflowExperimentName" not in plain


@pytest.mark.parametrize("experiment", [None, "churn-experiments"])
def test_each_scheduled_execution_starts_in_the_pipelines_experiment(
    definition: dict[str, Any], experiment: str | None
) -> None:
    """The exact UpdateSchedule request: every StartPipelineExecution the schedule sends names the experiment
    (``MlflowExperimentName``), the pipeline's or the configured one, next to the scheduled time; nothing of an
    execution is in the definition, which stays the same whatever the experiment."""
    from botocore.validate import validate_parameters

    config = dataclasses.replace(CONFIG, mlflow_experiment=experiment)
    name = experiment or "churn-pipeline"
    pipeline_id = hashlib.sha256(b"churn-pipeline").hexdigest()[:16]
    start_input = (
        '{"PipelineName": "churn-pipeline", "PipelineParameters": ['
        '{"Name": "DataVersion", "Value": "<aws.scheduler.scheduled-time>"}], '
        '"PipelineExecutionDescription": "Scheduled for <aws.scheduler.scheduled-time> by '
        '<aws.scheduler.schedule-arn>", '
        f'"ClientRequestToken": "llpipe-{pipeline_id}-<aws.scheduler.scheduled-time>", '
        f'"MlflowExperimentName": "{name}"}}'
    )
    expected = {
        "Name": "churn-pipeline",
        "ScheduleExpression": "rate(1 day)",
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "Target": {
            "Arn": "arn:aws:scheduler:::aws-sdk:sagemaker:startPipelineExecution",
            "RoleArn": CONFIG.role_arn,
            "Input": start_input,
        },
        "State": "ENABLED",
        "StartDate": T0,
    }
    session = StubbedSession("scheduler")
    session.stubs["scheduler"].add_response("update_schedule", {"ScheduleArn": SCHEDULE_ARN}, expected)
    declared = {parameter["Name"]: parameter for parameter in definition["Parameters"]}
    assert schedule.put_schedule(config, "rate(1 day)", session=session, now=T0, declared=declared) == SCHEDULE_ARN
    session.verify()
    operation = REAL_SESSION.client("sagemaker").meta.service_model.operation_model("StartPipelineExecution")
    validate_parameters(json.loads(start_input), operation.input_shape)
    # the definition holds the server and the default experiment only; no execution's value (no time, no run)
    built = json.loads(build_definition(config).definition_json)
    assert built["MlflowConfig"] == {"MlflowExperimentName": name, "MlflowResourceArn": APP_ARN}
    assert {key: value for key, value in built.items() if key != "MlflowConfig"} == {
        key: value for key, value in definition.items() if key != "MlflowConfig"
    }


def described_job() -> dict[str, Any]:
    return {
        "TrainingJobName": JOB,
        "TrainingJobArn": JOB_ARN,
        "ModelArtifacts": {"S3ModelArtifacts": f"s3://artifacts-bucket/churn-pipeline/train/{JOB}/output/model.tar.gz"},
        "TrainingJobStatus": "Completed",
        "SecondaryStatus": "Completed",
        "HyperParameters": {"epochs": "3", "predictor_type": "binary_classifier", "mini_batch_size": "200"},
        "AlgorithmSpecification": {
            "TrainingImage": "174872318107.dkr.ecr.us-west-2.amazonaws.com/linear-learner:1",
            "TrainingInputMode": "File",
            "MetricDefinitions": [
                {
                    "Name": "train:objective_loss",
                    "Regex": "#quality_metric: host=\\S+, epoch=\\S+, train \\S+ <loss>=(\\S+)",
                },
                {
                    "Name": "validation:objective_loss",
                    "Regex": "#quality_metric: host=\\S+, epoch=\\S+, validation \\S+ <loss>=(\\S+)",
                },
            ],
        },
        "ResourceConfig": {"InstanceType": "ml.m5.xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30},
        "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
        "CreationTime": T0 + timedelta(minutes=4),
        "TrainingStartTime": T0 + timedelta(minutes=5),
        "TrainingEndTime": T0 + timedelta(minutes=9),
        "FinalMetricDataList": [
            {"MetricName": "validation:objective_loss", "Value": 0.21, "Timestamp": T0 + timedelta(minutes=9)},
            {"MetricName": "validation:roc_auc_score", "Value": 0.93, "Timestamp": T0 + timedelta(minutes=9)},
        ],
    }


def query(name: str) -> dict[str, str]:
    return {
        "MetricName": name,
        "ResourceArn": JOB_ARN,
        "MetricStat": "Avg",
        "Period": "IterationNumber",
        "XAxisType": "IterationNumber",
    }


def stub_execution(session: StubbedSession, mlflow_config: dict[str, str] | None, arn: str = EXECUTION_ARN) -> None:
    """The reads of one scheduled execution: Preprocess, Train (a cache hit would name its source), the gate."""
    sagemaker = session.stubs["sagemaker"]
    described: dict[str, Any] = {
        "PipelineArn": PIPELINE_ARN,
        "PipelineExecutionArn": arn,
        "PipelineExecutionStatus": "Succeeded",
        "PipelineExecutionDescription": f"Scheduled for 2026-12-01T03:00:00Z by {SCHEDULE_ARN}",
        "CreationTime": T0,
        "LastModifiedTime": T0 + timedelta(minutes=20),
    }
    if mlflow_config is not None:
        described["MLflowConfig"] = mlflow_config
    sagemaker.add_response("describe_pipeline_execution", described, {"PipelineExecutionArn": arn})
    if mlflow_config is None:
        return
    sagemaker.add_response(
        "list_pipeline_parameters_for_execution",
        {
            "PipelineParameters": [
                {"Name": "Epochs", "Value": "3"},
                {"Name": "DataVersion", "Value": "2026-12-01T03:00:00Z"},
            ]
        },
        {"PipelineExecutionArn": arn},
    )
    processing_arn = f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:processing-job/pipelines-abc123def456-preprocess"
    sagemaker.add_response(
        "list_pipeline_execution_steps",
        {
            "PipelineExecutionSteps": [
                {
                    "StepName": "Preprocess",
                    "StepStatus": "Succeeded",
                    "StartTime": T0,
                    "EndTime": T0 + timedelta(minutes=4),
                    "Metadata": {"ProcessingJob": {"Arn": processing_arn}},
                },
                {
                    "StepName": "Train",
                    "StepStatus": "Succeeded",
                    "StartTime": T0 + timedelta(minutes=4),
                    "EndTime": T0 + timedelta(minutes=10),
                    "Metadata": {"TrainingJob": {"Arn": JOB_ARN}},
                },
                {
                    "StepName": "QualityGate",
                    "StepStatus": "Succeeded",
                    "StartTime": T0 + timedelta(minutes=18),
                    "EndTime": T0 + timedelta(minutes=18),
                    "Metadata": {"Condition": {"Outcome": "True"}},
                },
                {
                    "StepName": "Register",
                    "StepStatus": "Succeeded",
                    "StartTime": T0 + timedelta(minutes=18),
                    "EndTime": T0 + timedelta(minutes=19),
                    "Metadata": {"RegisterModel": {"Arn": PACKAGE_ARN}},
                },
            ]
        },
        {"PipelineExecutionArn": arn, "SortOrder": "Ascending"},
    )
    sagemaker.add_response("describe_training_job", described_job(), {"TrainingJobName": JOB.lower()})  # as in its ARN
    session.stubs["sagemaker-metrics"].add_response(
        "batch_get_metrics",
        {
            "MetricQueryResults": [
                {"Status": "Complete", "XAxisValues": [0, 1, 2], "MetricValues": [0.61, 0.42, 0.33]},
                {"Status": "Complete", "XAxisValues": [0, 1, 2], "MetricValues": [0.52, 0.30, 0.21]},
                {"Status": "ValidationError", "Message": "no data points", "XAxisValues": [], "MetricValues": []},
            ]
        },
        {
            "MetricQueries": [
                query("train:objective_loss"),
                query("validation:objective_loss"),
                query("validation:roc_auc_score"),
            ]
        },
    )
    sagemaker.add_response("update_model_package", {"ModelPackageArn": PACKAGE_ARN}, UPDATE_REQUEST)


def test_a_scheduled_execution_is_forwarded_as_its_own_run_with_linear_learners_metrics(mlflow_sqlite_uri: str) -> None:
    session = StubbedSession("sagemaker", "sagemaker-metrics")
    stub_execution(session, {"MlflowResourceArn": APP_ARN, "MlflowExperimentName": "churn-experiments"})
    sent: list[dict[str, Any]] = []
    session.clients["sagemaker"].meta.events.register(
        "provide-client-params.sagemaker.UpdateModelPackage", lambda params, **kwargs: sent.append(dict(params))
    )
    uri = mlflow_sqlite_uri
    run = forward_execution(CONFIG, EXECUTION_ARN, session=session, tracking_uri=uri)
    session.verify()
    # the registered version names the run back
    assert sent == [
        {
            "ModelPackageArn": PACKAGE_ARN,
            "CustomerMetadataProperties": {"mlflow:run-id": run.run_id, "mlflow:experiment-id": run.experiment_id},
        }
    ]
    from mlflow import MlflowClient  # imported by the tests that read a store: ~2 s per xdist worker otherwise

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("churn-experiments")  # the execution's, not the configuration's
    assert experiment is not None and run.experiment_id == experiment.experiment_id
    runs = client.search_runs([experiment.experiment_id])
    (parent,) = [item for item in runs if "mlflow.parentRunId" not in item.data.tags]
    assert parent.info.run_id == run.run_id and parent.info.run_name == "abc123def456"
    assert parent.info.status == "FINISHED"
    assert parent.info.start_time == int(T0.timestamp() * 1000)
    assert {key: parent.data.tags[key] for key in ("llpipe.source", "llpipe.execution_arn", "llpipe.data_version")} == {
        "llpipe.source": "schedule",
        "llpipe.execution_arn": EXECUTION_ARN,
        "llpipe.data_version": "2026-12-01T03:00:00Z",
    }
    assert parent.data.params == {
        "Epochs": "3",
        "DataVersion": "2026-12-01T03:00:00Z",
        "linear_learner.epochs": "3",
        "linear_learner.predictor_type": "binary_classifier",
        "linear_learner.mini_batch_size": "200",
    }
    children = {item.info.run_name: item for item in runs if item.data.tags.get("mlflow.parentRunId") == run.run_id}
    assert sorted(children) == ["Preprocess", "QualityGate", "Register", "Train"]
    assert children["Register"].data.tags["llpipe.model_package_arn"] == PACKAGE_ARN
    train = children["Train"]
    assert train.data.metrics == {
        "final/validation:objective_loss": 0.21,
        "final/validation:roc_auc_score": 0.93,
        "train:objective_loss": 0.33,
        "validation:objective_loss": 0.21,
    }
    history = client.get_metric_history(train.info.run_id, "train:objective_loss")
    assert [(metric.step, metric.value) for metric in history] == [(0, 0.61), (1, 0.42), (2, 0.33)]
    assert train.data.tags["llpipe.training_job_arn"] == JOB_ARN
    assert train.data.params["epochs"] == "3"


def test_an_execution_without_an_mlflow_server_is_refused_naming_what_to_pass(tmp_path: Path) -> None:
    session = StubbedSession("sagemaker", "sagemaker-metrics")
    stub_execution(session, None)
    with pytest.raises(ConfigError) as error:
        forward_execution(dataclasses.replace(CONFIG, mlflow_arn=None), EXECUTION_ARN, session=session)
    assert str(error.value) == (
        f"execution {EXECUTION_ARN} names no MLflow tracking server and mlflow_arn is not set: give mlflow arn "
        "(a tracking server or App ARN) or tracking uri"
    )
    from pipeline.cli import flag

    assert error.value.worded(flag).endswith("give --mlflow-arn (a tracking server or App ARN) or --tracking-uri")
    session.verify()


def test_llpipe_execution_show_to_mlflow_forwards_and_prints_the_run(
    mlflow_sqlite_uri: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    session = StubbedSession("sagemaker", "sagemaker-metrics")
    stub_execution(session, {"MlflowResourceArn": APP_ARN, "MlflowExperimentName": "churn-pipeline"})
    monkeypatch.setattr(aws, "session", lambda config: session)
    uri = mlflow_sqlite_uri
    code = main(
        [
            "execution",
            "show",
            EXECUTION_ARN,
            "--sagemaker",
            "--to-mlflow",
            "--tracking-uri",
            uri,
            "--region",
            "us-west-2",
        ]
    )
    assert code == 0
    session.verify()
    from mlflow import MlflowClient

    (parent,) = MlflowClient(tracking_uri=uri).search_runs(["1"], filter_string="attributes.run_name = 'abc123def456'")
    assert capsys.readouterr().out == (
        f"MLflow run {parent.info.run_id}: http://127.0.0.1:5000/#/experiments/1/runs/{parent.info.run_id}"
        f"  (after: mlflow ui --backend-store-uri {uri})\n"
    )


# ------------------------------------------------------------------------------ llpipe start --wait forwards it


def stub_watch(session: StubbedSession) -> None:
    """What ``wait_and_report`` reads before forwarding: one poll of the finished execution, then each job step's
    job for the compute table (Preprocess's processing job, Train's training job)."""
    sagemaker = session.stubs["sagemaker"]
    steps = [
        {
            "StepName": "Preprocess",
            "StepStatus": "Succeeded",
            "StartTime": T0,
            "EndTime": T0 + timedelta(minutes=4),
            "Metadata": {"ProcessingJob": {"Arn": PROCESSING_ARN}},
        },
        {
            "StepName": "Train",
            "StepStatus": "Succeeded",
            "StartTime": T0 + timedelta(minutes=4),
            "EndTime": T0 + timedelta(minutes=10),
            "Metadata": {"TrainingJob": {"Arn": JOB_ARN}},
        },
    ]
    sagemaker.add_response(
        "describe_pipeline_execution",
        {"PipelineArn": PIPELINE_ARN, "PipelineExecutionArn": EXECUTION_ARN, "PipelineExecutionStatus": "Succeeded"},
        {"PipelineExecutionArn": EXECUTION_ARN},
    )
    sagemaker.add_response(
        "list_pipeline_execution_steps",
        {"PipelineExecutionSteps": steps},
        {"PipelineExecutionArn": EXECUTION_ARN, "SortOrder": "Ascending"},
    )
    processing_name = PROCESSING_ARN.rsplit("/", 1)[-1]
    sagemaker.add_response(
        "describe_processing_job",
        {
            "ProcessingJobName": processing_name,
            "ProcessingJobArn": PROCESSING_ARN,
            "ProcessingJobStatus": "Completed",
            "ProcessingResources": {
                "ClusterConfig": {"InstanceCount": 2, "InstanceType": "ml.m5.xlarge", "VolumeSizeInGB": 30}
            },
            "AppSpecification": {"ImageUri": "sklearn-image"},
            "CreationTime": T0,
            "ProcessingStartTime": T0,
            "ProcessingEndTime": T0 + timedelta(minutes=4),
        },
        {"ProcessingJobName": processing_name},
    )
    sagemaker.add_response("describe_training_job", described_job(), {"TrainingJobName": JOB.lower()})


PROCESSING_ARN = f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:processing-job/pipelines-abc123def456-preprocess"


def test_start_wait_forwards_the_finished_execution_and_prints_its_run(
    mlflow_sqlite_uri: str, capsys: pytest.CaptureFixture
) -> None:
    """``llpipe start --wait`` with MLflow configured: the watch's reads, then the forwarder's (the execution's own
    experiment), the run printed; the execution object finds the same run by its ARN afterwards."""
    from mlflow import MlflowClient
    from rich.console import Console

    from pipeline.api.sagemaker_execution import SageMakerExecution
    from pipeline.cli.start import wait_and_report

    uri = mlflow_sqlite_uri  # the store made first (migrated), as a server's is: its migration is no part of forwarding
    client = MlflowClient(tracking_uri=uri)
    config = dataclasses.replace(CONFIG, mlflow_tracking=True, mlflow_tracking_uri=uri)
    session = StubbedSession("sagemaker", "sagemaker-metrics")
    stub_watch(session)
    stub_execution(session, {"MlflowResourceArn": APP_ARN, "MlflowExperimentName": "churn-pipeline"})
    code = wait_and_report(config, EXECUTION_ARN, 0, console=Console(file=io.StringIO()), session=session)
    session.verify()
    assert code == 0
    out, err = capsys.readouterr()
    experiment = client.get_experiment_by_name("churn-pipeline")
    assert experiment is not None
    (parent,) = client.search_runs([experiment.experiment_id], filter_string="attributes.run_name = 'abc123def456'")
    run_id = parent.info.run_id
    assert out.splitlines()[-1] == (
        f"MLflow run {run_id}: http://127.0.0.1:5000/#/experiments/{experiment.experiment_id}/runs/{run_id}"
        f"  (after: mlflow ui --backend-store-uri {uri})"
    )
    assert "MLflow" not in err
    history = client.get_metric_history(
        client.search_runs([experiment.experiment_id], filter_string="attributes.run_name = 'Train'")[0].info.run_id,
        "validation:objective_loss",
    )
    assert [(metric.step, metric.value) for metric in history] == [(0, 0.52), (1, 0.30), (2, 0.21)]

    # compare from MLflow: a forwarded run has no report, Train's final metrics stand for it (by execution id, then
    # by run id: the same run twice, nothing differs)
    from pipeline.api.mlflow_comparison import read_runs, runs_side_by_side

    frame = runs_side_by_side(read_runs(uri, ["abc123def456", run_id], "churn-pipeline"))
    assert list(frame.columns) == ["abc123def456 (1)", "abc123def456 (2)", "differs"]
    assert frame.loc["metric: final/validation:roc_auc_score"].tolist() == ["0.9300", "0.9300", False]
    assert frame.loc["parameter: linear_learner.epochs"].tolist() == ["3", "3", False]
    assert frame.loc["model package"].tolist() == [PACKAGE_ARN, PACKAGE_ARN, False]

    # the execution's mlflow_run: its description names the experiment, the store is searched by its ARN
    later = StubbedSession("sagemaker")
    later.stubs["sagemaker"].add_response(
        "describe_pipeline_execution",
        {
            "PipelineArn": PIPELINE_ARN,
            "PipelineExecutionArn": EXECUTION_ARN,
            "PipelineExecutionStatus": "Succeeded",
            "MLflowConfig": {"MlflowResourceArn": APP_ARN, "MlflowExperimentName": "churn-pipeline"},
        },
        {"PipelineExecutionArn": EXECUTION_ARN},
    )
    found = SageMakerExecution(config, EXECUTION_ARN, session=later).mlflow_run
    later.verify()
    assert found is not None and found.run_id == run_id and found.experiment_id == experiment.experiment_id
    assert found.tracking_uri == uri


def test_forwarding_an_execution_again_updates_its_runs_and_another_execution_is_a_run_of_its_own(
    mlflow_sqlite_uri: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """``llpipe start --wait`` forwards the execution, ``llpipe execution show --to-mlflow`` forwards it again: still
    one parent run (found by its ARN tag), one child per step, each series point once, the registered version naming
    the same run; the next scheduled execution is a run of its own in the same experiment."""
    from mlflow import MlflowClient
    from rich.console import Console

    from pipeline.cli.start import wait_and_report

    uri = mlflow_sqlite_uri
    config = dataclasses.replace(CONFIG, mlflow_tracking=True, mlflow_tracking_uri=uri)
    mlflow_config = {"MlflowResourceArn": APP_ARN, "MlflowExperimentName": "churn-pipeline"}
    session = StubbedSession("sagemaker", "sagemaker-metrics")
    sent: list[dict[str, Any]] = []
    session.clients["sagemaker"].meta.events.register(
        "provide-client-params.sagemaker.UpdateModelPackage", lambda params, **kwargs: sent.append(dict(params))
    )
    stub_watch(session)
    stub_execution(session, mlflow_config)
    assert wait_and_report(config, EXECUTION_ARN, 0, console=Console(file=io.StringIO()), session=session) == 0
    stub_execution(session, mlflow_config)
    monkeypatch.setattr(aws, "session", lambda config: session)
    argv = ["execution", "show", EXECUTION_ARN, "--sagemaker", "--to-mlflow", "--tracking-uri", uri]
    assert main([*argv, "--region", "us-west-2"]) == 0
    session.verify()
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("churn-pipeline")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    (parent,) = [run for run in runs if "mlflow.parentRunId" not in run.data.tags]
    run_id = parent.info.run_id
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("MLflow run ")]
    assert [line.split()[2].rstrip(":") for line in printed] == [run_id, run_id]
    assert parent.data.tags["llpipe.execution_arn"] == EXECUTION_ARN and parent.info.status == "FINISHED"
    assert parent.data.params["Epochs"] == "3" and parent.data.params["linear_learner.epochs"] == "3"
    children = sorted(run.info.run_name for run in runs if run.data.tags.get("mlflow.parentRunId") == run_id)
    assert children == ["Preprocess", "QualityGate", "Register", "Train"]
    assert len(runs) == 5
    (train,) = [run for run in runs if run.info.run_name == "Train"]
    history = client.get_metric_history(train.info.run_id, "train:objective_loss")
    assert [(metric.step, metric.value) for metric in history] == [(0, 0.61), (1, 0.42), (2, 0.33)]
    final = client.get_metric_history(train.info.run_id, "final/validation:roc_auc_score")
    assert [(metric.step, metric.value) for metric in final] == [(0, 0.93)]
    assert [request["CustomerMetadataProperties"]["mlflow:run-id"] for request in sent] == [run_id, run_id]

    # the next scheduled execution: a parent run of its own beside the first
    following = f"{PIPELINE_ARN}/execution/f00ba4000000"
    stub_execution(session, mlflow_config, following)
    other = forward_execution(config, following, session=session, tracking_uri=uri)
    session.verify()
    assert other.run_id != run_id and other.experiment_id == experiment.experiment_id
    parents = client.search_runs([experiment.experiment_id], filter_string="tags.`llpipe.source` = 'schedule'")
    assert sorted((run.info.run_name, run.data.tags["llpipe.execution_arn"]) for run in parents) == [
        ("abc123def456", EXECUTION_ARN),
        ("f00ba4000000", following),
    ]


def test_start_wait_with_the_store_down_warns_once_and_keeps_its_exit_code(capsys: pytest.CaptureFixture) -> None:
    """The forwarder asks the store first: a server that is down costs DescribePipelineExecution and one line."""
    import socket

    from rich.console import Console

    from pipeline.cli.start import wait_and_report

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{free.getsockname()[1]}"
    config = dataclasses.replace(CONFIG, mlflow_tracking=True, mlflow_tracking_uri=closed)
    session = StubbedSession("sagemaker", "sagemaker-metrics")
    stub_watch(session)
    stub_execution(session, None)  # DescribePipelineExecution only
    code = wait_and_report(config, EXECUTION_ARN, 0, console=Console(file=io.StringIO()), session=session)
    session.verify()
    assert code == 0
    out, err = capsys.readouterr()
    (line,) = err.splitlines()
    assert line.startswith(
        f"llpipe start: warning: MLflow: execution abc123def456 not logged to {closed}: "
        f"MLflow tracking server {closed} cannot be reached ("
    )
    assert out.splitlines()[-1] == "execution succeeded"


def test_start_wait_with_tracking_off_forwards_nothing(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from rich.console import Console

    from pipeline.cli.start import wait_and_report

    config = dataclasses.replace(CONFIG, mlflow_tracking=False)
    session = StubbedSession("sagemaker", "sagemaker-metrics")
    stub_watch(session)  # and nothing after: a forwarding request would find no stubbed answer
    code = wait_and_report(config, EXECUTION_ARN, 0, console=Console(file=io.StringIO()), session=session)
    session.verify()
    assert code == 0
    out, err = capsys.readouterr()
    assert "MLflow" not in out + err


# ------------------------------------------------------------------------------ Evaluate's report and plots

EVALUATE_JOB = "pipelines-abc123def456-evaluate-q7"
EVALUATE_ARN = f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:processing-job/{EVALUATE_JOB}"
EVALUATION_PREFIX = "churn-pipeline/abc123def456/evaluation"


def stub_evaluated_execution(session: StubbedSession, report: bytes) -> None:
    """An execution whose Evaluate step succeeded: its job's output names where the report is in S3."""
    sagemaker = session.stubs["sagemaker"]
    sagemaker.add_response(
        "describe_pipeline_execution",
        {
            "PipelineArn": PIPELINE_ARN,
            "PipelineExecutionArn": EXECUTION_ARN,
            "PipelineExecutionStatus": "Succeeded",
            "CreationTime": T0,
            "MLflowConfig": {"MlflowResourceArn": APP_ARN, "MlflowExperimentName": "churn-pipeline"},
        },
        {"PipelineExecutionArn": EXECUTION_ARN},
    )
    sagemaker.add_response(
        "list_pipeline_parameters_for_execution",
        {"PipelineParameters": [{"Name": "Epochs", "Value": "3"}]},
        {"PipelineExecutionArn": EXECUTION_ARN},
    )
    steps = [
        {
            "StepName": "Evaluate",
            "StepStatus": "Succeeded",
            "StartTime": T0 + timedelta(minutes=12),
            "EndTime": T0 + timedelta(minutes=16),
            "Metadata": {"ProcessingJob": {"Arn": EVALUATE_ARN}},
        },
        {
            "StepName": "Register",
            "StepStatus": "Succeeded",
            "StartTime": T0 + timedelta(minutes=18),
            "EndTime": T0 + timedelta(minutes=19),
            "Metadata": {"RegisterModel": {"Arn": PACKAGE_ARN}},
        },
    ]
    sagemaker.add_response(
        "list_pipeline_execution_steps",
        {"PipelineExecutionSteps": steps},
        {"PipelineExecutionArn": EXECUTION_ARN, "SortOrder": "Ascending"},
    )
    sagemaker.add_response(
        "describe_processing_job",
        {
            "ProcessingJobName": EVALUATE_JOB,
            "ProcessingJobArn": EVALUATE_ARN,
            "ProcessingJobStatus": "Completed",
            "ProcessingResources": {
                "ClusterConfig": {"InstanceCount": 1, "InstanceType": "ml.m5.large", "VolumeSizeInGB": 30}
            },
            "AppSpecification": {"ImageUri": "sklearn-image"},
            "CreationTime": T0 + timedelta(minutes=12),
            "ProcessingOutputConfig": {
                "Outputs": [
                    {
                        "OutputName": "evaluation",
                        "S3Output": {
                            "S3Uri": f"s3://artifacts-bucket/{EVALUATION_PREFIX}",
                            "LocalPath": "/opt/ml/processing/evaluation",
                            "S3UploadMode": "EndOfJob",
                        },
                    }
                ]
            },
        },
        {"ProcessingJobName": EVALUATE_JOB},
    )
    from botocore.response import StreamingBody

    session.stubs["s3"].add_response(
        "get_object",
        {"Body": StreamingBody(io.BytesIO(report), len(report)), "ContentLength": len(report)},
        {"Bucket": "artifacts-bucket", "Key": f"{EVALUATION_PREFIX}/evaluation.json"},
    )
    sagemaker.add_response("update_model_package", {"ModelPackageArn": PACKAGE_ARN}, UPDATE_REQUEST)


def test_evaluates_report_and_plots_are_forwarded_as_the_evaluate_childs_metrics_and_artifacts(
    mlflow_sqlite_uri: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``llpipe execution show --sagemaker --to-mlflow``, twice: the report read from Evaluate's S3 output (its job
    described first), its metrics on the Evaluate child as locally, ``evaluation.json`` and the plots drawn from it
    (the image draws none) as artifacts; forwarded again, the same child holds the same artifacts."""
    from mlflow import MlflowClient
    from support.reports import report_file

    from pipeline.api.plots import render_plots
    from pipeline.core.tracking import report_metrics

    monkeypatch.chdir(tmp_path)  # a SQLite store's experiments keep their artifacts in ./mlruns
    report = report_file(tmp_path, "binary_classifier").read_bytes()
    session = StubbedSession("sagemaker", "sagemaker-metrics", "s3")
    monkeypatch.setattr(aws, "session", lambda config: session)
    uri = mlflow_sqlite_uri
    argv = ["execution", "show", EXECUTION_ARN, "--sagemaker", "--to-mlflow", "--tracking-uri", uri]
    for _ in range(2):
        stub_evaluated_execution(session, report)
        assert main([*argv, "--region", "us-west-2"]) == 0
    session.verify()
    client = MlflowClient(tracking_uri=uri)
    (evaluate,) = client.search_runs(["1"], filter_string="attributes.run_name = 'Evaluate'")
    expected = report_metrics(json.loads(report))
    assert len(expected) >= 8 and evaluate.data.metrics == expected
    assert evaluate.data.tags["llpipe.report"] == f"s3://artifacts-bucket/{EVALUATION_PREFIX}/evaluation.json"
    drawn = render_plots(report_file(tmp_path, "binary_classifier"), tmp_path / "drawn")
    assert [item.path for item in client.list_artifacts(evaluate.info.run_id)] == ["evaluation.json", "plots"]
    assert sorted(item.path for item in client.list_artifacts(evaluate.info.run_id, "plots")) == sorted(
        f"plots/{path.name}" for path in drawn
    )
    downloaded = client.download_artifacts(evaluate.info.run_id, "evaluation.json", str(tmp_path))
    assert json.loads(Path(downloaded).read_text()) == json.loads(report)
    assert len(client.search_runs(["1"], max_results=1000)) == 3  # the parent, Evaluate, Register
