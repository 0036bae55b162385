"""What ``offline_sdk`` changes in the SDK while a definition is built is restored after it, and changes nothing the
SDK checks: an invalid SDK config is still refused (validation memoised, not skipped), and the local-mode client the
Processing and Transform steps make only to read a method's name is the same class, without a boto3 session."""

from __future__ import annotations

import pytest

from pipeline.definition.offline import offline_sdk, offline_session

REGION = "eu-west-1"


def test_the_sdk_is_as_it_was_after_a_build_block() -> None:
    with offline_sdk(REGION):
        from sagemaker.core.config.config_manager import SageMakerConfig
        from sagemaker.core.helper import session_helper
        from sagemaker.core.local.local_session import LocalSagemakerClient
        from sagemaker.mlops.workflow import steps

        inside = steps.LocalSagemakerClient
        client = inside()
        assert isinstance(client, LocalSagemakerClient) and client.sagemaker_session is None
        assert client.create_processing_job.__name__ == "create_processing_job"  # what the steps read of it
    assert steps.LocalSagemakerClient is LocalSagemakerClient and inside is not LocalSagemakerClient
    assert SageMakerConfig.__dict__["validate_sagemaker_config"].__func__.__module__.startswith("sagemaker.")
    assert session_helper.validate_sagemaker_config.__module__.startswith("sagemaker.")


def test_an_invalid_sdk_config_is_refused_inside_the_block_every_time() -> None:
    invalid = {"SchemaVersion": "1.0", "SageMaker": {"NoSuchSection": {}}}
    with offline_sdk(REGION):
        from sagemaker.core.helper import session_helper

        offline_session(REGION, "bucket-one")  # the project's own config, validated (once per process)
        for _ in range(2):
            with pytest.raises(Exception, match="NoSuchSection"):
                session_helper.validate_sagemaker_config(invalid)
