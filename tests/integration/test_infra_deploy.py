"""infra/deploy.yaml: cfn-lint finds nothing; it deploys to moto's CloudFormation; its rule lets through the Approved
events of the project's group only (SageMaker's own event samples, delivered by moto's EventBridge); the event
becomes a valid StartBuild request; the roles grant what iam/deploy-role-policy.json documents; and
deploy/buildspec.yml's commands run verbatim against a moto server, refusing what must be refused.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import boto3
from support.cloudformation import actions, create_stack, delivered_events, load_template
from support.codebuild import run_buildspec
from support.moto_additions import moto_server

REPOSITORY = Path(__file__).resolve().parents[2]
TEMPLATE = REPOSITORY / "infra" / "deploy.yaml"
EVENTS = Path(__file__).resolve().parents[1] / "fixtures" / "events"
REGION = "us-east-2"  # the samples' region
GROUP = "versionedmp-p-idy6c3e1fiqj"  # the samples' group: project versionedmp, id p-idy6c3e1fiqj
PARAMETERS = {
    "ProjectName": "versionedmp",
    "ProjectId": "p-idy6c3e1fiqj",
    "ArtifactBucket": "sagemaker-project-p-idy6c3e1fiqj",
    "PipelineRoleArn": "arn:aws:iam::123456789012:role/PipelineRole",
    "SourceLocation": "https://github.com/example/llpipe",
}


def template() -> dict[str, Any]:
    return load_template(TEMPLATE)


def event(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / f"model-package-{name}.json").read_text())


def test_cfn_lint_finds_nothing() -> None:
    from cfnlint.api import ManualArgs, lint_file

    assert [str(match) for match in lint_file(TEMPLATE, ManualArgs(regions=[REGION, "us-east-1"]))] == []


def test_the_rule_lets_through_only_approved_versions_of_the_projects_group(moto_aws: None) -> None:
    outputs, skipped = create_stack("llpipe-deploy", TEMPLATE, PARAMETERS, REGION)
    assert skipped == {"AWS::CodeBuild::Project"}  # checked on the template instead, below
    assert (outputs["StagingEndpoint"], outputs["ProdEndpoint"]) == (f"{GROUP}-staging", f"{GROUP}-prod")
    events = boto3.client("events", region_name=REGION)
    rule = events.describe_rule(Name=outputs["DeployOnApprovalRule"])
    assert json.loads(rule["EventPattern"]) == {
        "source": ["aws.sagemaker"],
        "detail-type": ["SageMaker Model Package State Change"],
        "detail": {
            "ModelPackageGroupName": [GROUP],
            "ModelApprovalStatus": ["Approved"],
            "ModelPackageStatus": ["Completed"],
        },
    }
    # the deployed rule's pattern, delivering to a queue: what EventBridge would start the build for. The CodeBuild
    # target is taken off first: moto fills the transformer's <package> in without JSON quotes, where EventBridge
    # quotes a string value placed outside quotes (the next test checks the template the EventBridge way)
    samples = ["rejected", "pending", "approved", "approved-other-group", "approved-drift-sample"]
    received = delivered_events(outputs["DeployOnApprovalRule"], "deploy-staging", [event(n) for n in samples], REGION)
    matched = sorted(delivered["detail"]["ModelPackageArn"] for delivered in received)
    assert matched == [
        f"arn:aws:sagemaker:us-east-2:123456789012:model-package/{GROUP}/2",  # the approval of the docs' sample
        f"arn:aws:sagemaker:us-east-2:123456789012:model-package/{GROUP}/26",  # aws-samples' approval
    ]


def test_the_target_turns_the_event_into_a_start_build_with_the_approved_arn() -> None:
    """The input transformer's output, filled in as EventBridge does, is a valid StartBuild request."""
    from botocore.session import get_session
    from botocore.validate import validate_parameters

    rule = template()["Resources"]["DeployOnApprovalRule"]["Properties"]
    [target] = rule["Targets"]
    transformer = target["InputTransformer"]
    assert transformer["InputPathsMap"] == {"package": "$.detail.ModelPackageArn"}
    approved = event("approved")
    text = transformer["InputTemplate"].replace("<package>", json.dumps(approved["detail"]["ModelPackageArn"]))
    start_build = {"projectName": "staging-deploy", **json.loads(text)}
    shape = get_session().get_service_model("codebuild").operation_model("StartBuild").input_shape
    validate_parameters(start_build, shape)  # raises on anything StartBuild would reject
    assert start_build["environmentVariablesOverride"] == [
        {"name": "MODEL_PACKAGE_ARN", "value": approved["detail"]["ModelPackageArn"], "type": "PLAINTEXT"}
    ]
    assert target["Arn"] == {
        "Sub": "arn:${AWS::Partition}:codebuild:${AWS::Region}:${AWS::AccountId}:project/${StagingDeployProject}"
    }


def test_each_stage_has_its_project_and_a_role_limited_to_its_endpoint() -> None:
    resources = template()["Resources"]
    for stage, project, role in (
        ("staging", "StagingDeployProject", "StagingDeployRole"),
        ("prod", "ProdDeployProject", "ProdDeployRole"),
    ):
        build = resources[project]["Properties"]
        assert build["Source"]["BuildSpec"] == "deploy/buildspec.yml" and build["ServiceRole"] == {
            "GetAtt": f"{role}.Arn"
        }
        variables = {v["Name"]: v["Value"] for v in build["Environment"]["EnvironmentVariables"]}
        assert variables["DEPLOY_STAGE"] == stage
        # exactly what deploy/buildspec.yml and pipeline.definition.config read
        assert set(variables) == {
            "DEPLOY_STAGE",
            "ARTIFACT_BUCKET",
            "SAGEMAKER_PIPELINE_ROLE_ARN",
            "SAGEMAKER_PROJECT_NAME",
            "SAGEMAKER_PROJECT_ID",
            "LLPIPE_KMS_KEY_ID",
            "DEPLOY_ARGUMENTS",
        }
        statements = resources[role]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
        [endpoint] = [s for s in statements if s["Sid"] == "TheStagesEndpointItsConfigsAndModels"]
        named = " ".join(item["Sub"] for item in endpoint["Resource"])
        assert f"${{ProjectId}}-{stage}" in named and f"-{'prod' if stage == 'staging' else 'staging'}" not in named
    prod = resources["ProdDeployRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    [staging_read] = [s for s in prod if s["Sid"] == "WhatStagingServesAndWhetherItPassed"]
    assert actions([staging_read]) == {
        "sagemaker:DescribeEndpoint",
        "sagemaker:DescribeEndpointConfig",
        "sagemaker:ListTags",
    }


def test_the_template_grants_what_the_iam_document_grants() -> None:
    resources = template()["Resources"]
    prod = resources["ProdDeployRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    staging = resources["StagingDeployRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    kms = resources["DeployRolesKmsPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    documented = json.loads((REPOSITORY / "iam" / "deploy-role-policy.json").read_text())["Statement"]
    assert actions(prod) | actions(kms) == actions(documented)
    assert actions(staging) == actions(
        prod
    )  # the same actions, on the other stage's resources (prod also reads staging's)
    assert sorted(s["Sid"] for s in staging) == sorted(
        s["Sid"] for s in prod if s["Sid"] != "WhatStagingServesAndWhetherItPassed"
    )


# ------------------------------------------------------------------------------------------------ the buildspec


def run_build(url: str, tmp_path: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    """The deploy buildspec's commands as CodeBuild runs them (``support.codebuild``) for project churn."""
    project = {
        "ARTIFACT_BUCKET": "my-bucket",
        "SAGEMAKER_PIPELINE_ROLE_ARN": "arn:aws:iam::123456789012:role/PipelineRole",
        "SAGEMAKER_PROJECT_NAME": "churn",
        "SAGEMAKER_PROJECT_ID": "p-abc123",
        "COLUMNS": "200",
    }
    return run_buildspec(REPOSITORY / "deploy" / "buildspec.yml", tmp_path, url, "us-east-1", **project, **variables)


def test_the_deploy_buildspec_refuses_an_unapproved_version_and_an_unpassed_promotion(tmp_path: Path) -> None:
    with moto_server() as url:
        sagemaker = boto3.client(
            "sagemaker", endpoint_url=url, region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        sagemaker.create_model_package_group(ModelPackageGroupName="churn-p-abc123")
        pending = sagemaker.create_model_package(
            ModelPackageGroupName="churn-p-abc123",
            ModelApprovalStatus="PendingManualApproval",
            InferenceSpecification={
                "Containers": [{"Image": "image", "ModelDataUrl": "s3://my-bucket/model.tar.gz"}],
                "SupportedContentTypes": ["application/x-recordio-protobuf"],
                "SupportedResponseMIMETypes": ["application/jsonlines"],
            },
        )["ModelPackageArn"]
        staging = run_build(url, tmp_path, MODEL_PACKAGE_ARN=pending)
        prod = run_build(url, tmp_path, DEPLOY_STAGE="prod")
        wrong = run_build(url, tmp_path, DEPLOY_STAGE="production")
    assert staging.returncode == 1, staging.stderr
    assert "is PendingManualApproval, not Approved" in staging.stderr
    assert prod.returncode == 1 and "staging serves no version: deploy to staging first" in prod.stderr
    assert wrong.returncode == 2 and "DEPLOY_STAGE must be staging or prod, not 'production'" in wrong.stderr
