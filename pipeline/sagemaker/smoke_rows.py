"""The smoke test's rows on SageMaker: the test shards the execution's batch transform read, and its answers.

ListPipelineExecutionSteps gives the Transform step's job (also when the step was a cache hit: the job is the one
whose outputs the execution used), DescribeTransformJob its input prefix and output path; the shards are listed in
key order and read with their ``.out`` files (``<S3OutputPath>/<key below the input prefix>.out``, as the service
names them) only until the case has its rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from containerlib.s3_uri import split_s3_uri
from pipeline.core.deployment import Version
from pipeline.core.errors import AwsError
from pipeline.core.names import RECORDIO, TRANSFORM
from pipeline.core.s3_listing import list_objects
from pipeline.core.smoke import SmokeCase, SmokeError, case_from_shards
from pipeline.sagemaker import aws
from pipeline.sagemaker.wait import execution_steps


def transform_job(sagemaker: Any, execution_arn: str) -> dict[str, Any]:
    """DescribeTransformJob of the execution's Transform step."""
    arns = [
        step.get("Metadata", {}).get("TransformJob", {}).get("Arn")
        for step in execution_steps(sagemaker, execution_arn)
        if step.get("StepName") == TRANSFORM
    ]
    if not arns or not arns[0]:
        raise AwsError(f"execution {execution_arn} has no {TRANSFORM} step with a transform job to compare with")
    name = arns[0].rsplit("/", 1)[-1]
    with aws.call(f"DescribeTransformJob {name}"):
        return sagemaker.describe_transform_job(TransformJobName=name)


def _split(uri: str) -> tuple[str, str]:
    return split_s3_uri(uri)


def read_object(s3: Any, uri: str) -> bytes:
    """GetObject ``uri``'s bytes."""
    bucket, key = _split(uri)
    with aws.call(f"GetObject {uri}"):
        return s3.get_object(Bucket=bucket, Key=key)["Body"].read()


def _keys(s3: Any, prefix_uri: str) -> Iterator[str]:
    """The objects under the prefix in key order, a page at a time (folders' marker objects skipped)."""
    bucket, prefix = _split(prefix_uri)
    with aws.call(f"ListObjectsV2 {prefix_uri}"):
        keys = [item["Key"] for item in list_objects(s3, bucket, prefix) if not item["Key"].endswith("/")]
    yield from keys


def shard_pairs(s3: Any, job: dict[str, Any]) -> Iterator[tuple[str, bytes, str, bytes]]:
    """(shard URI, its bytes, .out URI, its bytes) for each test shard, read when asked for."""
    source = job["TransformInput"]["DataSource"]["S3DataSource"]
    if source.get("S3DataType", "S3Prefix") != "S3Prefix" or job["TransformInput"].get("ContentType") != RECORDIO:
        raise SmokeError(f"transform job {job['TransformJobName']} did not read an S3 prefix of {RECORDIO} records")
    prefix_uri, output = source["S3Uri"], job["TransformOutput"]["S3OutputPath"].rstrip("/")
    bucket, prefix = _split(prefix_uri)
    for key in _keys(s3, prefix_uri):
        relative = key[len(prefix) :].lstrip("/") or key.rsplit("/", 1)[-1]
        shard_uri, out_uri = f"s3://{bucket}/{key}", f"{output}/{relative}.out"
        yield shard_uri, read_object(s3, shard_uri), out_uri, read_object(s3, out_uri)


def smoke_case(session: Any, version: Version, rows: int) -> SmokeCase:
    """The case of ``version``: rows of its execution's test split and its batch transform's answers."""
    if not version.execution_arn:
        raise AwsError(
            f"model package {version.package_arn} names no pipeline execution (MetadataProperties.GeneratedBy): "
            "there are no batch-transform answers to smoke-test its endpoint against"
        )
    job = transform_job(session.client("sagemaker"), version.execution_arn)
    try:
        return case_from_shards(shard_pairs(session.client("s3"), job), rows)
    except SmokeError as error:
        raise AwsError(f"smoke test rows of execution {version.execution_arn}: {error}") from None
