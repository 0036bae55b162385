"""Build with the SageMaker SDK v3 offline: no network call, no credentials, no log noise.

The SDK reaches for AWS in five places while a pipeline is being defined, each closed here:

* at import, modules create boto3 clients, which need a region: ``AWS_DEFAULT_REGION`` (the variable botocore
  reads) is set to the configured region when it is not set (boto3's default session keeps that region for the
  SDK's own module-level clients; our AWS calls use sessions of their own);
* ModelTrainer / ModelBuilder validate the role over IAM: ``SAGEMAKER_VALIDATE_ROLE=false`` while building (with a
  full role ARN nothing else is looked up);
* botocore may probe the EC2 instance metadata service for credentials: ``AWS_EC2_METADATA_DISABLED=true`` while
  building;
* the session checks (ListBuckets / CreateBucket) its default bucket and uploads code: :class:`OfflinePipelineSession`
  returns the configured bucket unchecked and refuses every upload (our code bundles are uploaded by ``upsert``);
* telemetry: the session's SDK config opts out (``TelemetryOptOut``).

Each variable is set only when the user has not set it (a user's explicit ``SAGEMAKER_VALIDATE_ROLE=true`` wins),
and removed again when the ``with`` block ends. The SDK
re-validates its config dict against a JSON schema on every lookup (seconds per build), so the validation is
memoised (for the process: a config valid once stays valid) while a block runs, then the SDK's own is restored; and
its Processing and Transform steps build a local-mode client, with its own boto3 session, only to read a method's
name: while building they get one without a session. Loggers the SDK makes chatty are quietened the same way.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import warnings
from collections.abc import Iterator
from typing import Any

from pipeline.core.aws_variables import check_endpoint_variables

SDK_CONFIG: dict[str, Any] = {
    "SchemaVersion": "1.0",
    "SageMaker": {"PythonSDK": {"Modules": {"TelemetryOptOut": True}}},
}

# Variables set while building, unless the user set them already. The region is added by offline_sdk().
BUILD_ENVIRONMENT = {
    "SAGEMAKER_VALIDATE_ROLE": "false",
    "AWS_EC2_METADATA_DISABLED": "true",
}

# The SDK logs INFO/DEBUG chatter and warnings about fields it drops on purpose (and calls logging.basicConfig
# at import); while building, only errors get through.
NOISY_LOGGERS = ("sagemaker", "botocore", "boto3", "urllib3")


@contextlib.contextmanager
def offline_sdk(region: str) -> Iterator[None]:
    """Everything needed to import the SDK and build a pipeline with it offline; restored on exit."""
    check_endpoint_variables()  # the SDK makes clients on import: a bad AWS_ENDPOINT_URL is named, not a traceback
    # botocore reads AWS_DEFAULT_REGION (not AWS_REGION, which CodeBuild and Lambda also set)
    overrides = {**BUILD_ENVIRONMENT, "AWS_DEFAULT_REGION": region}
    with _environment(overrides), warnings.catch_warnings():
        # "Running within a PipelineSession, there will be No Wait, No Logs...", deprecation shims the SDK imports
        # itself: expected while building a definition, and nothing the user can act on
        warnings.filterwarnings("ignore", module=r"sagemaker(\.|$)")
        # a parameter where a shape types a plain int (VolumeSizeInGB, InstanceCount): the request takes it as is
        warnings.filterwarnings("ignore", message="Pydantic serializer warnings", category=UserWarning)
        with _quiet_loggers():
            _import_sdk()
            with memoised_config_validation(), _name_only_local_clients():
                yield


@contextlib.contextmanager
def _environment(defaults: dict[str, str]) -> Iterator[None]:
    """Set each variable the user has not set; on exit remove exactly the ones set here."""
    added = [name for name in defaults if name not in os.environ]
    for name in added:
        os.environ[name] = defaults[name]
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


@contextlib.contextmanager
def _quiet_loggers() -> Iterator[None]:
    """Raise the SDK's loggers to ERROR and drop the root handler its import adds; restore levels after."""
    root = logging.getLogger()
    root_handlers = list(root.handlers)
    root_level = root.level
    saved = {name: logging.getLogger(name).level for name in NOISY_LOGGERS}
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        yield
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)
        # the SDK's import-time logging.basicConfig() adds a root handler: remove what was not there before
        for handler in list(root.handlers):
            if handler not in root_handlers:
                root.removeHandler(handler)
        root.setLevel(root_level)


def _import_sdk() -> None:
    """Import the SDK modules the definition uses (slow, ~2 s, once per process) inside the quiet environment."""
    import sagemaker.core.processing  # noqa: F401
    import sagemaker.mlops.workflow  # noqa: F401
    import sagemaker.serve  # noqa: F401
    import sagemaker.train  # noqa: F401

    # some SDK modules set their own logger levels at import (ModelBuilder: DEBUG); the parent's level does not
    # override those, so raise them too (kept: a quiet SDK logger outside builds is no loss)
    for name in [n for n in logging.root.manager.loggerDict if n.startswith("sagemaker.")]:
        logger = logging.getLogger(name)
        if logger.level and logger.level < logging.WARNING:
            logger.setLevel(logging.WARNING)


_VALIDATED_CONFIGS: list[Any] = []  # SDK configs found valid in this process (the schema never changes within it)


@contextlib.contextmanager
def memoised_config_validation() -> Iterator[None]:
    """Validate each distinct SDK config once per process instead of on every lookup and every session (the SDK
    re-runs jsonschema each time, ~0.2 s: its config manager's and its session's own copy of the function)."""
    from sagemaker.core.config.config_manager import SageMakerConfig
    from sagemaker.core.helper import session_helper

    original = SageMakerConfig.__dict__["validate_sagemaker_config"]
    original_session = session_helper.validate_sagemaker_config

    def validate_once(sagemaker_config: dict | None = None) -> None:
        if any(seen == sagemaker_config for seen in _VALIDATED_CONFIGS):
            return
        original.__func__(sagemaker_config)
        _VALIDATED_CONFIGS.append(copy.deepcopy(sagemaker_config))

    SageMakerConfig.validate_sagemaker_config = staticmethod(validate_once)
    session_helper.validate_sagemaker_config = validate_once
    try:
        yield
    finally:
        SageMakerConfig.validate_sagemaker_config = original
        session_helper.validate_sagemaker_config = original_session


@contextlib.contextmanager
def _name_only_local_clients() -> Iterator[None]:
    """The SDK's Processing and Transform steps make a local-mode client only to read one of its method's names; that
    client makes a LocalSession, whose new boto3 session parses service models again (~0.2 s a step). While
    building, the steps get a client without a session: the same class and method names."""
    from sagemaker.core.local.local_session import LocalSagemakerClient
    from sagemaker.mlops.workflow import steps

    class NameOnlyLocalClient(LocalSagemakerClient):
        def __init__(self, sagemaker_session: Any = None) -> None:
            self.sagemaker_session = sagemaker_session

    original = steps.LocalSagemakerClient
    steps.LocalSagemakerClient = NameOnlyLocalClient
    try:
        yield
    finally:
        steps.LocalSagemakerClient = original


def offline_session(region: str, bucket: str) -> Any:
    """A PipelineSession that needs no network: call inside :func:`offline_sdk`."""
    import boto3
    from sagemaker.core.workflow.pipeline_context import PipelineSession

    from pipeline.core.botocore_session import new_botocore_session

    class OfflinePipelineSession(PipelineSession):
        """Returns the configured bucket without checking it, and refuses uploads (upsert uploads our code)."""

        def default_bucket(self) -> str:
            return bucket

        def upload_data(self, path: str, *args: Any, **kwargs: Any) -> str:
            raise RuntimeError(f"the pipeline definition must not upload {path}: add it to a code bundle instead")

        def upload_string_as_file_body(self, body: str, bucket: str, key: str, kms_key: str | None = None) -> str:
            raise RuntimeError(f"the pipeline definition must not upload s3://{bucket}/{key}")

    # a session of our own (its region is ours; no credentials are needed because no request is ever signed),
    # sharing the process's parsed service models
    core = new_botocore_session()
    boto_session = boto3.Session(botocore_session=core, region_name=region)
    return OfflinePipelineSession(boto_session=boto_session, default_bucket=bucket, sagemaker_config=SDK_CONFIG)
