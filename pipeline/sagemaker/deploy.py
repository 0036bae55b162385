"""Upsert the pipeline: upload its code bundles, then CreatePipeline, or UpdatePipeline and its tags.

The same requests the SageMaker SDK v3 sends for ``Pipeline.upsert``, with boto3 directly so that each request is
explicit and the SDK is not imported for them.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

from containerlib.s3_uri import split_s3_uri
from pipeline.definition.config import PipelineConfig
from pipeline.sagemaker import aws

INLINE_DEFINITION_LIMIT = 100 * 1024  # larger definitions go through S3 (PipelineDefinitionS3Location), as the SDK does
_ALREADY_EXISTS_CODES = ("ValidationException", "ResourceInUse")
_ALREADY_EXISTS_MESSAGES = ("already exists", "must be unique within an AWS account", "Cannot create already existing")


@dataclass(frozen=True)
class UpsertResult:
    """What ``upsert`` did."""

    pipeline_arn: str
    created: bool
    uploaded: tuple[str, ...]


def upsert(config: PipelineConfig, built: Any, session: Any = None, description: str | None = None) -> UpsertResult:
    """Upload the code bundles, then CreatePipeline, or UpdatePipeline + tags when the pipeline exists."""
    session = session or aws.session(config)
    s3 = session.client("s3")
    sagemaker = session.client("sagemaker")
    uploaded = tuple(_upload(s3, uri, content, config.kms_key_id) for uri, content in built.uploads.items())
    request: dict[str, Any] = {"PipelineName": config.pipeline_name, "RoleArn": config.role_arn}
    request.update(_definition_argument(s3, config, built.definition_json))
    if description:
        request["PipelineDescription"] = description
    tags = config.all_tags
    create = {**request, "ClientRequestToken": uuid.uuid4().hex, **({"Tags": tags} if tags else {})}
    from botocore.exceptions import ClientError

    with aws.call(f"CreatePipeline {config.pipeline_name}"):
        try:
            response = sagemaker.create_pipeline(**create)
            return UpsertResult(response["PipelineArn"], created=True, uploaded=uploaded)
        except ClientError as error:
            if not _already_exists(error):
                raise
    with aws.call(f"UpdatePipeline {config.pipeline_name}"):
        arn = sagemaker.update_pipeline(**request)["PipelineArn"]
    if tags:
        with aws.call(f"tagging {arn}"):
            existing = sagemaker.list_tags(ResourceArn=arn)["Tags"]
            merged = tags + [tag for tag in existing if tag["Key"] not in {t["Key"] for t in tags}]
            sagemaker.add_tags(ResourceArn=arn, Tags=merged)
    return UpsertResult(arn, created=False, uploaded=uploaded)


def _already_exists(error: Any) -> bool:
    info = error.response.get("Error", {})
    message = info.get("Message", "")
    return info.get("Code") in _ALREADY_EXISTS_CODES and any(text in message for text in _ALREADY_EXISTS_MESSAGES)


def _upload(s3: Any, uri: str, content: bytes, kms_key_id: str | None) -> str:
    """PutObject one code file (SSE-KMS with the configured key, if any)."""
    bucket, key = split_s3_uri(uri)
    request: dict[str, Any] = {"Bucket": bucket, "Key": key, "Body": content}
    if kms_key_id:
        request.update(ServerSideEncryption="aws:kms", SSEKMSKeyId=kms_key_id)
    with aws.call(f"uploading {uri}"):
        s3.put_object(**request)
    return uri


def put_object(config: PipelineConfig, uri: str, content: bytes, session: Any = None) -> str:
    """PutObject one object (e.g. a decided schema), encrypted with the configured key like the code bundles."""
    return _upload((session or aws.session(config)).client("s3"), uri, content, config.kms_key_id)


def _definition_argument(s3: Any, config: PipelineConfig, definition_json: str) -> dict[str, Any]:
    """Inline below 100 KB; above, upload to s3://<bucket>/<pipeline>/definitions/<sha256>.json and point at it."""
    body = definition_json.encode("utf-8")
    if len(body) < INLINE_DEFINITION_LIMIT:
        return {"PipelineDefinition": definition_json}
    key = f"{config.pipeline_name}/definitions/{hashlib.sha256(body).hexdigest()}.json"
    _upload(s3, f"s3://{config.bucket}/{key}", body, config.kms_key_id)
    return {"PipelineDefinitionS3Location": {"Bucket": config.bucket, "ObjectKey": key}}
