"""Configuration: defaults that need no AWS, precedence flags > environment > file > defaults, clear errors."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

from pipeline.api._words import argument
from pipeline.cli import flag
from pipeline.cli.arguments import add_config_arguments, config_from_args
from pipeline.definition.config import (
    DEFAULT_ROLE_ARN,
    ConfigError,
    PipelineConfig,
    load_config,
)


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    return parser.parse_args(list(argv))


def test_defaults_need_no_aws_configuration() -> None:
    config = load_config(env={})
    assert config == PipelineConfig()
    assert (config.region, config.bucket, config.role_arn) == ("us-east-1", "llpipe-local", DEFAULT_ROLE_ARN)
    assert config.pipeline_name == "linear-learner-pipeline"
    assert config.model_package_group == "linear-learner-models"
    assert config.pipeline_prefix == "s3://llpipe-local/linear-learner-pipeline"
    assert config.all_tags == []


def test_flags_beat_environment_beats_file(tmp_path: Path) -> None:
    path = tmp_path / "llpipe.json"
    path.write_text(json.dumps({"region": "eu-west-1", "bucket": "file-bucket", "pipeline_name": "from-file"}))
    env = {"AWS_REGION": "eu-central-1", "ARTIFACT_BUCKET": "env-bucket"}
    config = load_config({"bucket": "flag-bucket", "region": None}, env=env, path=path)
    assert config.bucket == "flag-bucket"  # flag
    assert config.region == "eu-central-1"  # environment (the flag was not given)
    assert config.pipeline_name == "from-file"  # file


def test_codebuild_and_projects_environment() -> None:
    env = {
        "AWS_DEFAULT_REGION": "ap-southeast-2",
        "SAGEMAKER_PIPELINE_ROLE_ARN": "arn:aws:iam::123456789012:role/service-role/AmazonSageMakerServiceCatalog",
        "ARTIFACT_BUCKET": "sagemaker-project-p-abc123",
        "SAGEMAKER_PROJECT_NAME": "churn",
        "SAGEMAKER_PROJECT_ID": "p-abc123",
    }
    config = load_config(env=env)
    assert config.region == "ap-southeast-2"
    assert config.role_arn.endswith("role/service-role/AmazonSageMakerServiceCatalog")
    assert config.bucket == "sagemaker-project-p-abc123"
    assert config.pipeline_name == config.model_package_group == "churn-p-abc123"
    assert config.all_tags == [
        {"Key": "sagemaker:project-id", "Value": "p-abc123"},
        {"Key": "sagemaker:project-name", "Value": "churn"},
    ]
    # an explicit name still wins over the project convention
    assert load_config({"pipeline_name": "mine"}, env=env).pipeline_name == "mine"
    # AWS_REGION is preferred over AWS_DEFAULT_REGION, as boto3 does
    assert load_config(env={**env, "AWS_REGION": "us-west-2"}).region == "us-west-2"
    # the template's KmsKeyArn reaches the jobs; empty (no key) leaves them unencrypted by a customer key
    key = "arn:aws:kms:ap-southeast-2:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    assert load_config(env={**env, "LLPIPE_KMS_KEY_ID": key}).kms_key_id == key
    assert load_config(env={**env, "LLPIPE_KMS_KEY_ID": ""}).kms_key_id is None


def test_command_line_flags(tmp_path: Path) -> None:
    args = parse(
        "--region=us-west-2",
        "--role-arn=arn:aws:iam::123456789012:role/Pipeline",
        "--bucket=my-bucket",
        "--pipeline-name=my-pipeline",
        "--model-package-group=my-models",
        "--kms-key-id=alias/ml",
        "--subnet=subnet-0a",
        "--subnet=subnet-0b",
        "--security-group-id=sg-0c",
        "--network-isolation",
        "--no-encrypt-inter-container-traffic",
        "--tag=team=ml",
        "--tag=env=prod",
    )
    config = config_from_args(args, env={})
    assert config.subnets == ("subnet-0a", "subnet-0b")
    assert config.security_group_ids == ("sg-0c",)
    assert config.enable_network_isolation is True
    assert config.encrypt_inter_container_traffic is False
    assert config.tags == (("env", "prod"), ("team", "ml"))
    assert config.kms_key_id == "alias/ml"
    assert config_from_args(parse(), env={}) == PipelineConfig()


@pytest.mark.skipif(sys.version_info < (3, 11), reason="TOML needs tomllib (Python 3.11+)")
def test_toml_file(tmp_path: Path) -> None:
    path = tmp_path / "llpipe.toml"
    path.write_text(
        'bucket = "toml-bucket"\nsubnets = ["subnet-01"]\nsecurity_group_ids = ["sg-01"]\n'
        'enable_network_isolation = true\n[tags]\nteam = "ml"\n'
    )
    config = load_config(env={}, path=path)
    assert (config.bucket, config.subnets, config.enable_network_isolation) == ("toml-bucket", ("subnet-01",), True)
    assert config.tags == (("team", "ml"),)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"region": "us_east_1"}, "region: 'us_east_1' is not valid; expected an AWS region"),
        ({"role_arn": "PipelineRole"}, "role_arn: 'PipelineRole' is not valid; expected a full IAM role ARN"),
        ({"bucket": "s3://my-bucket"}, "bucket: 's3://my-bucket' is not valid"),
        ({"bucket": "My_Bucket"}, "bucket: 'My_Bucket' is not valid"),
        ({"pipeline_name": "my pipeline"}, "pipeline_name: 'my pipeline' is not valid"),
        ({"model_package_group": "x" * 64}, "model_package_group"),
        ({"subnets": ["subnet-0a"]}, "a VPC needs both"),
        ({"subnets": ["vpc-0a"], "security_group_ids": ["sg-0a"]}, "subnets: 'vpc-0a' is not valid"),
        ({"tags": ["aws:owner=me"]}, "not starting with aws:"),
        ({"tags": ["novalue"]}, "expected KEY=VALUE"),
        ({"enable_network_isolation": "maybe"}, "expected true or false"),
        ({"colour": "blue"}, "unknown setting 'colour'"),
    ],
)
def test_invalid_settings_are_named_with_their_source(overrides: dict, message: str) -> None:
    with pytest.raises(ConfigError, match="overrides") as error:
        load_config(overrides, env={})
    assert message in str(error.value)
    # the source as each surface calls what its caller gave
    assert "command line" in error.value.worded(flag) and "overrides" not in error.value.worded(flag)
    assert "keyword arguments" in error.value.worded(argument)


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="missing.json: cannot read it"):
        load_config(env={}, path=tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{bucket: x")
    with pytest.raises(ConfigError, match="broken.json: not valid JSON"):
        load_config(env={}, path=broken)
    unknown = tmp_path / "unknown.json"
    unknown.write_text('{"bukcet": "x"}')
    with pytest.raises(ConfigError, match="unknown.json: unknown setting 'bukcet'"):
        load_config(env={}, path=unknown)
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"bucket": "UPPER"}')
    with pytest.raises(ConfigError, match=r"bucket: 'UPPER' is not valid.*\(from config file .*wrong.json\)"):
        load_config(env={}, path=wrong)
    with pytest.raises(ConfigError, match="expected a .json or .toml file"):
        (tmp_path / "settings.yaml").write_text("bucket: x")
        load_config(env={}, path=tmp_path / "settings.yaml")


def test_environment_errors_name_the_environment() -> None:
    with pytest.raises(ConfigError, match=r"role_arn: 'not-an-arn' is not valid.*\(from environment\)"):
        load_config(env={"SAGEMAKER_PIPELINE_ROLE_ARN": "not-an-arn"})


def test_config_is_immutable() -> None:
    with pytest.raises(AttributeError):
        PipelineConfig().bucket = "other"  # type: ignore[misc]
