"""A boto3 session for the configured region, and AWS errors as one line naming the operation.

Every module of the SageMaker wing (and the API's SageMaker execution) makes its session with :func:`session`,
looked up on this module when called, so tests hand in stubbed clients by replacing it in one place.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pipeline.core.errors import AwsError
from pipeline.definition.config import PipelineConfig


def session(config: PipelineConfig) -> Any:
    """A boto3 session for the configured region (credentials from the usual chain)."""
    import boto3

    return boto3.Session(region_name=config.region)


@contextmanager
def call(what: str) -> Iterator[None]:
    """Turn botocore's errors into one-line :class:`AwsError` messages naming the operation."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    try:
        yield
    except NoCredentialsError:
        raise AwsError(f"{what}: no AWS credentials found (configure a profile, SSO or environment keys)") from None
    except ClientError as error:
        info = error.response.get("Error", {})
        raise AwsError(f"{what}: {info.get('Code', 'error')}: {info.get('Message', error)}") from None
    except BotoCoreError as error:
        raise AwsError(f"{what}: {error}") from None
