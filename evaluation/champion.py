"""The champion: the newest approved model version of a model package group, and its model artifact.

Evaluate scores the champion on this execution's test split, so the gate compares two models on the same records.
The registry and S3 are reached through boto3 (ListModelPackages, DescribeModelPackage, GetObject), wherever the
standard AWS configuration points it: the service on SageMaker, the local backend's stand-in endpoint
(``AWS_ENDPOINT_URL``) on a laptop. The scikit-learn image ships boto3 (1.28.57 on branch 1.2-1); it is imported only
when a lookup is made. Python 3.9, standard library and boto3 only.
"""

from __future__ import annotations

import functools
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

APPROVED = "Approved"
COMPLETED = "Completed"
PAGE_SIZE = 100
ALGORITHM_IMAGE = "linear-learner"  # the built-in algorithm's image repository, as pipeline/core/images.py names it
DOWNLOAD_CHUNK_BYTES = 1 << 20


class ChampionError(Exception):
    """The champion cannot be looked up or fetched; the message names the group, package or object and why."""


@dataclass(frozen=True)
class Champion:
    """The approved model version the challenger is compared with."""

    model_package_arn: str
    model_package_group: str
    version: int | None
    model_data_url: str

    def to_dict(self) -> dict:
        return {
            "model_package_arn": self.model_package_arn,
            "model_package_group": self.model_package_group,
            "version": self.version,
            "model_data_url": self.model_data_url,
        }


def aws_clients(region: str | None = None) -> tuple[Any, Any]:
    """(SageMaker client, S3 client) from boto3's standard configuration chain; ``region`` when given. Made once per
    region in this process: the job asks up to three times, and each new session loads the services' models again
    (the SageMaker one is about 1 MB of JSON). The ``AWS_*`` variables are part of the key: changed, new clients."""
    return _clients(region or None, tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_"))))


@functools.cache
def _clients(region: str | None, variables: tuple[tuple[str, str], ...]) -> tuple[Any, Any]:
    import boto3  # the image has it; Evaluate without a model package group never imports it

    session = boto3.session.Session(region_name=region)
    return session.client("sagemaker"), session.client("s3")


def _errors() -> tuple[type, ...]:
    from botocore.exceptions import BotoCoreError, ClientError

    return (BotoCoreError, ClientError)


def _error_code(error: Exception) -> str:
    response = getattr(error, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def find_champion(sagemaker: Any, group: str) -> Champion | None:
    """The newest Approved and Completed package of ``group`` (None when there is none, or no such group yet).

    ListModelPackages sorts ascending unless told otherwise: the request asks for CreationTime descending, so the
    first Completed summary is the champion; later pages are read only while none is Completed.
    """
    request = {
        "ModelPackageGroupName": group,
        "ModelApprovalStatus": APPROVED,
        "SortBy": "CreationTime",
        "SortOrder": "Descending",
        "MaxResults": PAGE_SIZE,
    }
    try:
        while True:
            page = sagemaker.list_model_packages(**request)
            for summary in page.get("ModelPackageSummaryList", []):
                if summary.get("ModelPackageStatus") == COMPLETED:
                    return describe_champion(sagemaker, group, summary["ModelPackageArn"])
            token = page.get("NextToken")
            if not token:
                return None
            request["NextToken"] = token
    except _errors() as error:
        if _error_code(error) == "ResourceNotFound":  # the group does not exist yet: nothing was ever registered
            return None
        raise ChampionError(f"model package group {group}: cannot list approved model packages: {error}") from None


def describe_champion(sagemaker: Any, group: str, arn: str) -> Champion:
    """The champion's model artifact, from DescribeModelPackage."""
    try:
        description = sagemaker.describe_model_package(ModelPackageName=arn)
    except _errors() as error:
        raise ChampionError(f"champion {arn}: DescribeModelPackage failed: {error}") from None
    containers = (description.get("InferenceSpecification") or {}).get("Containers") or []
    # the Linear Learner container: the middle one of llpipe's inference pipeline (featurizer, algorithm, labels)
    index = next((i for i, c in enumerate(containers) if ALGORITHM_IMAGE in str(c.get("Image", ""))), 0)
    url = containers[index].get("ModelDataUrl") if containers else None
    if not url or not str(url).startswith("s3://"):
        raise ChampionError(
            f"champion {arn}: InferenceSpecification.Containers[{index}].ModelDataUrl is {url!r}, expected an s3:// URI"
        )
    version = description.get("ModelPackageVersion")
    return Champion(arn, description.get("ModelPackageGroupName") or group, version, str(url))


def split_s3_url(url: str) -> tuple[str, str]:
    """``s3://bucket/key`` -> (bucket, key), the key verbatim as ``containerlib.s3_uri`` splits it (this module imports
    the standard library only)."""
    bucket, _, key = url[len("s3://") :].partition("/")
    if not url.startswith("s3://") or not bucket or not key:
        raise ChampionError(f"{url!r} is not an s3://bucket/key URI")
    return bucket, key


def download_model(s3: Any, champion: Champion, folder: Path) -> Path:
    """GetObject of the champion's model.tar.gz into ``folder``; written under a temporary name, then renamed."""
    folder.mkdir(parents=True, exist_ok=True)
    what = f"champion {champion.model_package_arn}"
    return download_object(s3, champion.model_data_url, folder / "champion-model.tar.gz", what)


def download_object(s3: Any, url: str, target: Path, what: str) -> Path:
    """GetObject of ``url`` into ``target`` (its folder exists), under a temporary name, then renamed; a failure is a
    ChampionError naming ``what`` and the URI."""
    bucket, key = split_s3_url(url)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            try:
                body = s3.get_object(Bucket=bucket, Key=key)["Body"]
                for chunk in iter(lambda: body.read(DOWNLOAD_CHUNK_BYTES), b""):
                    stream.write(chunk)
            except _errors() as error:
                raise ChampionError(f"{what}: cannot download {url}: {error}") from None
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target
