"""infra/pipeline.yaml: cfn-lint finds nothing, and it deploys to moto's CloudFormation with the resources iam/ and
the buildspec expect (roles trusted by the right services, the bucket encrypted and private, build variables).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
from support.cloudformation import actions, create_stack, load_template

TEMPLATE = Path(__file__).resolve().parents[2] / "infra" / "pipeline.yaml"
REGION = "eu-west-1"
MOTO_SKIPS = ["AWS::CodeBuild::Project", "AWS::S3::BucketPolicy"]
PARAMETERS = {"ProjectName": "churn", "ProjectId": "p-abc123", "SourceLocation": "https://github.com/example/llpipe"}


def test_cfn_lint_finds_nothing() -> None:
    from cfnlint.api import ManualArgs, lint_file

    matches = lint_file(TEMPLATE, ManualArgs(regions=[REGION, "us-east-1"]))
    assert [str(match) for match in matches] == []


def test_cfn_lint_catches_a_broken_template(tmp_path: Path) -> None:
    """The check above can fail: a property the resource type does not have is an error."""
    from cfnlint.api import ManualArgs, lint_file

    broken = tmp_path / "broken.yaml"
    broken.write_text(TEMPLATE.read_text().replace("VersioningConfiguration:", "Versioning:"))
    matches = lint_file(broken, ManualArgs(regions=[REGION]))
    assert any("Versioning" in str(match) for match in matches)


def deploy(parameters: dict[str, str]) -> dict[str, Any]:
    """Create the stack in moto; returns its outputs."""
    outputs, skipped = create_stack("llpipe", TEMPLATE, parameters, REGION)
    assert sorted(skipped) == MOTO_SKIPS  # checked on the template instead, in the last test
    return outputs


def role_named_by(arn: str) -> dict[str, Any]:
    return boto3.client("iam", region_name=REGION).get_role(RoleName=arn.rsplit("/", 1)[-1])["Role"]


def trusted_services(role: dict[str, Any]) -> list[str]:
    document = role["AssumeRolePolicyDocument"]
    document = json.loads(document) if isinstance(document, str) else document
    return [statement["Principal"]["Service"] for statement in document["Statement"]]


def test_deploys_to_moto_with_roles_and_a_private_encrypted_bucket(moto_aws: None) -> None:
    outputs = deploy(PARAMETERS)
    assert outputs["PipelineName"] == "churn-p-abc123"
    assert "SchedulerRoleArn" not in outputs  # optional, off by default
    assert trusted_services(role_named_by(outputs["PipelineRoleArn"])) == ["sagemaker.amazonaws.com"]

    iam = boto3.client("iam", region_name=REGION)
    pipeline_role = outputs["PipelineRoleArn"].rsplit("/", 1)[-1]
    assert iam.list_role_policies(RoleName=pipeline_role)["PolicyNames"] == ["pipeline-jobs"]  # no KMS policy
    policy = iam.get_role_policy(RoleName=pipeline_role, PolicyName="pipeline-jobs")["PolicyDocument"]
    statements = {statement["Sid"]: statement for statement in policy["Statement"]}
    assert statements["PassThisRoleToTheJobs"]["Resource"] == outputs["PipelineRoleArn"]
    assert statements["ReadInputsAndCodeWriteArtifacts"]["Resource"] == f"arn:aws:s3:::{outputs['ArtifactBucket']}/*"

    roles = {role["RoleName"]: role for role in iam.list_roles()["Roles"]}
    codebuild_roles = [r for r in roles.values() if trusted_services(r) == ["codebuild.amazonaws.com"]]
    assert len(codebuild_roles) == 1

    s3 = boto3.client("s3", region_name=REGION)
    encryption = s3.get_bucket_encryption(Bucket=outputs["ArtifactBucket"])["ServerSideEncryptionConfiguration"]
    assert encryption["Rules"][0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    tags = {tag["Key"]: tag["Value"] for tag in s3.get_bucket_tagging(Bucket=outputs["ArtifactBucket"])["TagSet"]}
    assert tags == {"sagemaker:project-name": "churn", "sagemaker:project-id": "p-abc123"}


def test_a_kms_key_and_the_scheduler_role(moto_aws: None) -> None:
    key = f"arn:aws:kms:{REGION}:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    outputs = deploy({**PARAMETERS, "KmsKeyArn": key, "CreateSchedulerRole": "true"})
    assert trusted_services(role_named_by(outputs["SchedulerRoleArn"])) == ["scheduler.amazonaws.com"]
    iam = boto3.client("iam", region_name=REGION)
    pipeline_role = outputs["PipelineRoleArn"].rsplit("/", 1)[-1]
    assert sorted(iam.list_role_policies(RoleName=pipeline_role)["PolicyNames"]) == [
        "kms-for-outputs-and-volumes",
        "pipeline-jobs",
    ]
    kms = iam.get_role_policy(RoleName=pipeline_role, PolicyName="kms-for-outputs-and-volumes")["PolicyDocument"]
    assert kms["Statement"][0]["Resource"] == key
    s3 = boto3.client("s3", region_name=REGION)
    [rule] = s3.get_bucket_encryption(Bucket=outputs["ArtifactBucket"])["ServerSideEncryptionConfiguration"]["Rules"]
    assert rule["ApplyServerSideEncryptionByDefault"] == {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": key}


def test_the_template_declares_what_moto_cannot_check() -> None:
    """moto skips the CodeBuild project and the bucket policy and ignores PublicAccessBlockConfiguration."""
    resources = template_resources()
    bucket = resources["ArtifactBucket"]["Properties"]
    assert bucket["PublicAccessBlockConfiguration"] == dict.fromkeys(
        ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"), True
    )
    [deny] = resources["ArtifactBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    build = resources["BuildProject"]["Properties"]
    variables = {variable["Name"] for variable in build["Environment"]["EnvironmentVariables"]}
    # exactly what buildspec.yml and pipeline.definition.config read
    assert variables == {
        "ARTIFACT_BUCKET",
        "SAGEMAKER_PIPELINE_ROLE_ARN",
        "SAGEMAKER_PROJECT_NAME",
        "SAGEMAKER_PROJECT_ID",
        "START_PIPELINE_EXECUTION",
        "LLPIPE_KMS_KEY_ID",
        "LLPIPE_MLFLOW_ARN",
    }
    [kms] = [variable for variable in build["Environment"]["EnvironmentVariables"] if "KMS" in variable["Name"]]
    assert kms["Value"] == {"Ref": "KmsKeyArn"}  # the key that encrypts the bucket also encrypts the jobs' outputs
    assert build["Source"]["BuildSpec"] == "buildspec.yml"


def template_resources() -> dict[str, Any]:
    return load_template(TEMPLATE)["Resources"]


def policy_file_actions(name: str) -> set[str]:
    return actions(json.loads((TEMPLATE.parent.parent / "iam" / name).read_text())["Statement"])


def test_the_template_grants_what_the_iam_documents_grant() -> None:
    resources = template_resources()
    pipeline = actions(resources["PipelineRolePolicy"]["Properties"]["PolicyDocument"]["Statement"])
    pipeline |= actions(resources["PipelineRoleKmsPolicy"]["Properties"]["PolicyDocument"]["Statement"])
    scheduler = actions(resources["SchedulerRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"])
    # iam/ lets the pipeline role be the scheduler role too; the template has a role of its own for that
    assert pipeline | scheduler == policy_file_actions("pipeline-role-policy.json")
    build = actions(resources["CodeBuildRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"])
    build |= actions(resources["CodeBuildRoleKmsPolicy"]["Properties"]["PolicyDocument"]["Statement"])
    assert build == policy_file_actions("codebuild-role-policy.json")
    # with an MLflow ARN (or the template's own App), the three roles get iam/mlflow-policy.json's grants (Evaluate
    # and Preprocess log from their jobs; the build's start --wait and the forwarding rule's build forward the
    # execution: tests/integration/test_infra_forward.py)
    mlflow = [resources[name] for name in ("MlflowPolicy", "MlflowResourceAccess", "MlflowAppAccess")]
    assert [policy["Condition"] for policy in mlflow] == ["HasMlflow", "HasMlflowResourceArn", "WithMlflowApp"]
    roles = [{"Ref": "PipelineRole"}, {"Ref": "CodeBuildRole"}, {"Ref": "ForwardToMlflowRole"}]
    for policy in mlflow:
        assert policy["Properties"]["Roles"] == roles
    # the artifact store of a given server or App: Evaluate writes evaluation.json there from its job
    writes = resources["MlflowArtifactWrites"]
    assert writes["Condition"] == "HasMlflowArtifactBucket"
    assert writes["Properties"]["Roles"] == roles
    [put] = writes["Properties"]["PolicyDocument"]["Statement"]
    assert (put["Action"], put["Resource"]) == (
        "s3:PutObject",
        {"Sub": "arn:${AWS::Partition}:s3:::${MlflowArtifactBucket}/*"},
    )
    statements = [s for policy in [*mlflow[:2], writes] for s in policy["Properties"]["PolicyDocument"]["Statement"]]
    assert actions(statements) == policy_file_actions("mlflow-policy.json")
    [given] = mlflow[1]["Properties"]["PolicyDocument"]["Statement"]
    [own] = mlflow[2]["Properties"]["PolicyDocument"]["Statement"]
    assert (given["Action"], given["Resource"]) == ("sagemaker-mlflow:*", {"Ref": "MlflowResourceArn"})
    assert (own["Action"], own["Resource"]) == ("sagemaker-mlflow:*", {"GetAtt": "MlflowApp.Arn"})
    the_arn = {"If": ["WithMlflowApp", {"GetAtt": "MlflowApp.Arn"}, {"Ref": "MlflowResourceArn"}]}
    # the optional MLflow App: its artifacts under the bucket's mlflow/, its role limited to them; the build
    # forwards to it (or to MlflowResourceArn)
    app = resources["MlflowApp"]
    assert app["Condition"] == "WithMlflowApp" and resources["MlflowAppRole"]["Condition"] == "WithMlflowApp"
    assert app["Properties"]["ArtifactStoreUri"] == {"Sub": "s3://${ArtifactBucket}/mlflow"}
    app_role = resources["MlflowAppRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    assert app_role[0]["Resource"] == {"Sub": "${ArtifactBucket.Arn}/mlflow/*"}
    variables = resources["BuildProject"]["Properties"]["Environment"]["EnvironmentVariables"]
    assert {"Name": "LLPIPE_MLFLOW_ARN", "Value": the_arn} in variables
