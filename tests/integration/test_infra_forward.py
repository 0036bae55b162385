"""infra/pipeline.yaml's forwarding to MLflow: with MLflow configured, an EventBridge rule lets through the ends
(Succeeded, Failed, Stopped) of this pipeline's executions only (SageMaker's own event samples, delivered by moto's
EventBridge), each becoming a StartBuild of the forwarding project with the execution's ARN; the project runs
forward/buildspec.yml, whose command is the CLI's own `execution show ARN --sagemaker --to-mlflow` and, run
verbatim twice for a scheduled execution (a moto server, a SQLite MLflow store), leaves one run; the roles are
limited to starting that build and to forwarding; without MLflow none of it exists.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import boto3
from support.cloudformation import actions, create_stack, delivered_events, load_template
from support.codebuild import buildspec_commands, run_buildspec

REPOSITORY = Path(__file__).resolve().parents[2]
TEMPLATE = REPOSITORY / "infra" / "pipeline.yaml"
BUILDSPEC = REPOSITORY / "forward" / "buildspec.yml"
EVENTS = Path(__file__).resolve().parents[1] / "fixtures" / "events"
REGION = "us-east-1"  # the samples' region
PIPELINE = "mypipeline-123"  # the docs' sample's pipeline: project mypipeline, id 123
PIPELINE_ARN = f"arn:aws:sagemaker:{REGION}:123456789012:pipeline/{PIPELINE}"
MLFLOW_ARN = f"arn:aws:sagemaker:{REGION}:123456789012:mlflow-tracking-server/churn-tracking"
PARAMETERS = {"ProjectName": "mypipeline", "ProjectId": "123", "SourceLocation": "https://github.com/example/llpipe"}


def event(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / f"pipeline-execution-{name}.json").read_text())


def deploy(parameters: dict[str, str]) -> dict[str, str]:
    outputs, skipped = create_stack("llpipe", TEMPLATE, parameters, REGION)
    assert skipped == {"AWS::CodeBuild::Project", "AWS::S3::BucketPolicy"}  # the projects: checked on the template
    return outputs


def roles_trusting(service: str) -> list[str]:
    iam = boto3.client("iam", region_name=REGION)
    named = []
    for role in iam.list_roles()["Roles"]:
        document = role["AssumeRolePolicyDocument"]
        document = json.loads(document) if isinstance(document, str) else document
        if [statement["Principal"]["Service"] for statement in document["Statement"]] == [service]:
            named.append(role["RoleName"])
    return named


def test_with_mlflow_the_rule_lets_through_the_ends_of_this_pipelines_executions_only(moto_aws: None) -> None:
    outputs = deploy({**PARAMETERS, "MlflowResourceArn": MLFLOW_ARN})
    events = boto3.client("events", region_name=REGION)
    rule = events.describe_rule(Name=outputs["ForwardToMlflowRule"])
    assert json.loads(rule["EventPattern"]) == {
        "source": ["aws.sagemaker"],
        "detail-type": ["SageMaker Model Building Pipeline Execution Status Change"],
        "detail": {"pipelineArn": [PIPELINE_ARN], "currentPipelineExecutionStatus": ["Succeeded", "Failed", "Stopped"]},
    }
    [target] = events.list_targets_by_rule(Rule=outputs["ForwardToMlflowRule"])["Targets"]
    assert target["Id"] == "forward-to-mlflow"
    assert target["RoleArn"].rsplit("/", 1)[-1] in roles_trusting("events.amazonaws.com")
    # the deployed pattern, delivering to a queue: what EventBridge would start the build for (moto fills the
    # transformer in without JSON quotes, so the CodeBuild target is checked the EventBridge way below)
    names = ["executing", "succeeded", "stopping", "failed", "stopped", "succeeded-other-pipeline-drift-sample"]
    received = delivered_events(outputs["ForwardToMlflowRule"], "forward-to-mlflow", [event(n) for n in names], REGION)
    matched = sorted(delivered["detail"]["pipelineExecutionArn"] for delivered in received)
    assert matched == sorted(
        f"{PIPELINE_ARN}/execution/{execution}" for execution in ("p4jn9xou8a8s", "a1b2c3d4e5f6", "s7t8o9p0q1r2")
    )  # the docs' Succeeded sample, the Failed and the Stopped one; not Executing, Stopping or another pipeline's

    # the forwarding build's role: the MLflow policies and its logs, nothing of the build role's upsert and start
    iam = boto3.client("iam", region_name=REGION)
    [forwarder] = [name for name in roles_trusting("codebuild.amazonaws.com") if "ForwardToMlflowRole" in name]
    policies = sorted(iam.list_role_policies(RoleName=forwarder)["PolicyNames"])
    assert policies == ["forward-build", "mlflow-runs", "mlflow-tracking"]
    granted = set()
    for policy in policies:
        document = iam.get_role_policy(RoleName=forwarder, PolicyName=policy)["PolicyDocument"]
        # moto keeps a role's own inline policy (Policies of AWS::IAM::Role) as the repr of a dict
        document = ast.literal_eval(document) if isinstance(document, str) else document
        granted |= actions(document["Statement"])
    assert {"sagemaker:DescribePipelineExecution", "sagemaker-mlflow:*", "sagemaker:UpdateModelPackage"} <= granted
    assert not granted & {"sagemaker:StartPipelineExecution", "sagemaker:CreatePipeline", "iam:PassRole"}


def test_without_mlflow_there_is_no_rule_no_build_and_no_role(moto_aws: None) -> None:
    outputs = deploy(PARAMETERS)
    assert not {"ForwardToMlflowRule", "ForwardToMlflowProject", "MlflowArn"} & set(outputs)
    assert boto3.client("events", region_name=REGION).list_rules()["Rules"] == []
    assert roles_trusting("events.amazonaws.com") == []
    assert len(roles_trusting("codebuild.amazonaws.com")) == 1  # the build project's own


def test_the_target_turns_the_event_into_a_start_build_with_the_execution_arn() -> None:
    """The input transformer's output, filled in as EventBridge does (a string value placed outside quotes is
    quoted), is a valid StartBuild request for the forwarding project."""
    from botocore.session import get_session
    from botocore.validate import validate_parameters

    resources = load_template(TEMPLATE)["Resources"]
    rule = resources["ForwardToMlflowRule"]
    assert rule["Condition"] == "HasMlflow"
    [target] = rule["Properties"]["Targets"]
    transformer = target["InputTransformer"]
    assert transformer["InputPathsMap"] == {"execution": "$.detail.pipelineExecutionArn"}
    stopped = event("stopped")["detail"]["pipelineExecutionArn"]
    text = transformer["InputTemplate"].replace("<execution>", json.dumps(stopped))
    start_build = {"projectName": "forward", **json.loads(text)}
    shape = get_session().get_service_model("codebuild").operation_model("StartBuild").input_shape
    validate_parameters(start_build, shape)  # raises on anything StartBuild would reject
    assert start_build["environmentVariablesOverride"] == [
        {"name": "EXECUTION_ARN", "value": stopped, "type": "PLAINTEXT"}
    ]
    project = "arn:${AWS::Partition}:codebuild:${AWS::Region}:${AWS::AccountId}:project/${ForwardToMlflowProject}"
    assert target["Arn"] == {"Sub": project}
    assert target["RoleArn"] == {"GetAtt": "ForwardToMlflowEventsRole.Arn"}
    [start] = resources["ForwardToMlflowEventsRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    assert (start["Action"], start["Resource"]) == ("codebuild:StartBuild", {"Sub": project})


def test_the_project_runs_the_forward_buildspec_with_the_pipeline_and_the_mlflow_arn() -> None:
    resources = load_template(TEMPLATE)["Resources"]
    project = resources["ForwardToMlflowProject"]
    assert project["Condition"] == "HasMlflow"
    build = project["Properties"]
    assert build["Source"]["BuildSpec"] == "forward/buildspec.yml"
    assert build["ServiceRole"] == {"GetAtt": "ForwardToMlflowRole.Arn"}
    variables = {v["Name"]: v["Value"] for v in build["Environment"]["EnvironmentVariables"]}
    assert variables == {  # what forward/buildspec.yml and pipeline.definition.config read
        "SAGEMAKER_PROJECT_NAME": {"Ref": "ProjectName"},
        "SAGEMAKER_PROJECT_ID": {"Ref": "ProjectId"},
        "LLPIPE_MLFLOW_ARN": {"If": ["WithMlflowApp", {"GetAtt": "MlflowApp.Arn"}, {"Ref": "MlflowResourceArn"}]},
    }
    # the forwarding grants of iam/mlflow-policy.json reach its role through the same policies as the build role's
    for name in ("MlflowPolicy", "MlflowResourceAccess", "MlflowAppAccess", "MlflowArtifactWrites"):
        assert {"Ref": "ForwardToMlflowRole"} in resources[name]["Properties"]["Roles"], name
    [logs] = resources["ForwardToMlflowRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    assert logs["Sid"] == "BuildLogs"
    # the project's own App: the plots into its artifact store under the bucket's mlflow/; a KMS key: the report
    # read and the artifacts written through it
    app, kms = resources["ForwardToMlflowAppArtifacts"], resources["ForwardToMlflowKmsPolicy"]
    assert (app["Condition"], kms["Condition"]) == ("WithMlflowApp", "HasMlflowAndKmsKey")
    assert app["Properties"]["Roles"] == kms["Properties"]["Roles"] == [{"Ref": "ForwardToMlflowRole"}]
    [put] = app["Properties"]["PolicyDocument"]["Statement"]
    assert (put["Action"], put["Resource"]) == ("s3:PutObject", {"Sub": "${ArtifactBucket.Arn}/mlflow/*"})
    [key] = kms["Properties"]["PolicyDocument"]["Statement"]
    assert (key["Action"], key["Resource"]) == (["kms:Decrypt", "kms:GenerateDataKey"], {"Ref": "KmsKeyArn"})


# ------------------------------------------------------------------------------------------------ the buildspec


def run_build(tmp_path: Path, endpoint: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """The buildspec's commands as CodeBuild runs them, in the project's environment (``support.codebuild``), with
    ``variables`` (the rule's overrides)."""
    project = {"SAGEMAKER_PROJECT_NAME": "mypipeline", "SAGEMAKER_PROJECT_ID": "123", "LLPIPE_MLFLOW_ARN": MLFLOW_ARN}
    return run_buildspec(BUILDSPEC, tmp_path, endpoint, REGION, **project, **variables)


def test_the_buildspec_command_is_the_clis_forward_of_the_events_execution() -> None:
    """The command as the shell expands it with the event's ARN, parsed by llpipe's own parser."""
    from pipeline.cli import build_parser
    from pipeline.cli.execution import run

    defaults, [command] = buildspec_commands(BUILDSPEC)
    assert defaults == {"EXECUTION_ARN": ""}
    arn = event("succeeded")["detail"]["pipelineExecutionArn"]
    shell = subprocess.run(
        ["sh", "-e", "-c", 'llpipe() { printf "%s\\0" "$@"; }\n' + command],
        env={"PATH": os.environ["PATH"], "EXECUTION_ARN": arn},
        capture_output=True,
        text=True,
        check=True,
    )
    argv = shell.stdout.split("\0")[:-1]
    args = build_parser().parse_args(argv)
    assert (args.command_name, args.handler, args.execution_id) == ("execution show", run, arn)
    assert args.sagemaker and args.to_mlflow and not args.json


def test_the_buildspec_without_an_execution_arn_fails_the_build(tmp_path: Path) -> None:
    """Started by hand without the override, the build fails saying why (the CLI's usage error, exit 2)."""
    result = run_build(tmp_path, "http://127.0.0.1:9")  # the discard port: nothing may be asked of AWS
    assert result.returncode == 2, result.stdout + result.stderr
    assert "llpipe execution show: '' is neither an execution id nor an execution ARN" in result.stderr


def test_with_a_kms_key_and_an_artifact_store_the_forwarding_role_reads_and_writes_through_them(moto_aws: None) -> None:
    key = f"arn:aws:kms:{REGION}:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    outputs = deploy(
        {**PARAMETERS, "MlflowResourceArn": MLFLOW_ARN, "MlflowArtifactBucket": "mlflow-store", "KmsKeyArn": key}
    )
    assert "ForwardToMlflowRule" in outputs
    iam = boto3.client("iam", region_name=REGION)
    [forwarder] = [name for name in roles_trusting("codebuild.amazonaws.com") if "ForwardToMlflowRole" in name]
    policies = sorted(iam.list_role_policies(RoleName=forwarder)["PolicyNames"])
    assert policies == [
        "forward-build",
        "kms-for-the-report-and-artifacts",
        "mlflow-artifacts-from-jobs",
        "mlflow-runs",
        "mlflow-tracking",
    ]
    kms = iam.get_role_policy(RoleName=forwarder, PolicyName="kms-for-the-report-and-artifacts")["PolicyDocument"]
    assert kms["Statement"][0]["Resource"] == key
    store = iam.get_role_policy(RoleName=forwarder, PolicyName="mlflow-artifacts-from-jobs")["PolicyDocument"]
    assert store["Statement"][0]["Resource"] == "arn:aws:s3:::mlflow-store/*"


def test_the_buildspec_forwards_a_scheduled_execution_as_one_run_however_often_it_runs(tmp_path: Path) -> None:
    """The build's commands, verbatim, against a moto server standing in for SageMaker and a SQLite MLflow store
    standing in for the tracking server (``MLFLOW_TRACKING_URI`` wins over the ARN): a scheduled execution becomes
    its run, and a second build for it (a repeated event, or start --wait's forward first) updates the same run."""
    from mlflow import MlflowClient
    from support.moto_additions import moto_server

    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with moto_server() as url:
        sagemaker = boto3.client(
            "sagemaker", endpoint_url=url, region_name=REGION, aws_access_key_id="t", aws_secret_access_key="t"
        )
        role = "arn:aws:iam::123456789012:role/PipelineRole"
        definition = '{"Version": "2020-12-01", "Steps": []}'
        sagemaker.create_pipeline(PipelineName=PIPELINE, PipelineDefinition=definition, RoleArn=role)
        arn = sagemaker.start_pipeline_execution(
            PipelineName=PIPELINE,
            PipelineExecutionDescription="Scheduled for 2026-12-07T06:00:00Z by arn:aws:scheduler:us-east-1:"
            "123456789012:schedule/default/mypipeline-123",
        )["PipelineExecutionArn"]
        # the rule's environmentVariablesOverride (EXECUTION_ARN) and the store forwarded to
        builds = [run_build(tmp_path, url, MLFLOW_TRACKING_URI=store, EXECUTION_ARN=arn) for _ in range(2)]
    for build in builds:
        assert build.returncode == 0, build.stdout + build.stderr
        assert build.stdout.startswith("MLflow run "), build.stdout
    client = MlflowClient(tracking_uri=store)
    experiment = client.get_experiment_by_name(PIPELINE)  # the pipeline's experiment
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], filter_string=f"tags.`llpipe.execution_arn` = '{arn}'")
    assert len(runs) == 1  # two builds, one run
    assert runs[0].info.run_name == arn.rsplit("/", 1)[-1]
    assert runs[0].data.tags["llpipe.source"] == "schedule"
    assert all(run.info.run_id in build.stdout for run in runs for build in builds)
