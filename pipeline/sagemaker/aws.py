"""A boto3 session for the configured region, and AWS errors as one line naming the operation.

Every module of the SageMaker wing (and the API's SageMaker execution) makes its session with :func:`session`,
looked up on this module when called, so tests hand in stubbed clients by replacing it in one place.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pipeline.core.aws_variables import check_endpoint_variables
from pipeline.core.errors import AwsError, MissingCredentialsError, UsageError
from pipeline.definition.config import PipelineConfig

CONNECT_TIMEOUT_ENV = "LLPIPE_AWS_CONNECT_TIMEOUT_SECONDS"
READ_TIMEOUT_ENV = "LLPIPE_AWS_READ_TIMEOUT_SECONDS"
DEFAULT_CONNECT_TIMEOUT = 5.0  # an endpoint that takes longer to accept a connection is not there
DEFAULT_READ_TIMEOUT = 30.0  # every call llpipe makes answers in seconds; botocore's 60 s x 3 tries looked hung
MAX_ATTEMPTS = 2


def timeouts(env: Mapping[str, str] = os.environ) -> tuple[float, float]:
    """The connect and read timeouts of every AWS client, in seconds: the defaults or the environment's."""
    found = []
    for name, default in ((CONNECT_TIMEOUT_ENV, DEFAULT_CONNECT_TIMEOUT), (READ_TIMEOUT_ENV, DEFAULT_READ_TIMEOUT)):
        text = env.get(name, "").strip()
        try:
            value = float(text) if text else default
        except ValueError:
            value = -1.0
        if not value > 0:
            raise UsageError(f"{name}={text}: expected a number of seconds above 0")
        found.append(value)
    return found[0], found[1]


def session(config: PipelineConfig) -> Any:
    """A boto3 session for the configured region (credentials from the usual chain) whose clients give up on an
    endpoint after short, named connect and read timeouts."""
    import boto3
    from botocore.config import Config

    from pipeline.core.botocore_session import new_botocore_session

    check_endpoint_variables()
    connect, read = timeouts()
    core = new_botocore_session()
    core.set_default_client_config(
        Config(connect_timeout=connect, read_timeout=read, retries={"max_attempts": MAX_ATTEMPTS, "mode": "standard"})
    )
    return boto3.Session(botocore_session=core, region_name=config.region)


@contextmanager
def call(what: str) -> Iterator[None]:
    """Turn botocore's errors into one-line :class:`AwsError` messages naming the operation."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        ConnectTimeoutError,
        NoCredentialsError,
        ReadTimeoutError,
    )

    try:
        yield
    except NoCredentialsError:
        raise MissingCredentialsError(
            f"{what}: no AWS credentials found (configure a profile, SSO or environment keys)"
        ) from None
    except ClientError as error:
        info = error.response.get("Error", {})
        raise AwsError(f"{what}: {info.get('Code', 'error')}: {info.get('Message', error)}") from None
    except (ConnectTimeoutError, ReadTimeoutError) as error:
        connect, read = timeouts()
        raise AwsError(
            f"{what}: {error} (connect timeout {connect:g} s, read timeout {read:g} s, {MAX_ATTEMPTS} attempts; "
            f"{CONNECT_TIMEOUT_ENV} and {READ_TIMEOUT_ENV} change them)"
        ) from None
    except BotoCoreError as error:
        raise AwsError(f"{what}: {error}") from None
