"""Data versions: a short fingerprint of the input data, passed to the pipeline as its ``DataVersion`` parameter.

SageMaker's step cache compares a step's arguments, never the data an S3 URI points to. Preprocess receives
DataVersion as an argument, so new data means a new Preprocess cache key; Preprocess then writes under the new
execution's prefix, which changes the inputs, hence the cache keys, of every step downstream. Unchanged data gives
the same version and every step can come from the cache.

One fingerprint function over ``(key relative to the prefix, size, change stamp)`` entries, with three sources:
local files (``llpipe run --data``), objects of the local S3 folder (``llpipe run --param InputDataUrl=...``), and
S3 objects listed with ListObjectsV2 (``llpipe start``). The change stamp is the modification time locally (a
rewrite in place changes it even when the size stays the same; hashing gigabytes on every run would not be cheap)
and the ETag on S3 (a digest of the content that S3 computes on every write).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from containerlib.s3_uri import split_s3_uri
from pipeline.core.errors import UsageError
from pipeline.core.s3_listing import list_objects

PARAMETER = "DataVersion"
SCHEDULED_TIME = "<aws.scheduler.scheduled-time>"  # EventBridge Scheduler replaces it in the target's Input
VERSION_LENGTH = 16  # hex digits of SHA-256: 64 bits, no collision in any realistic history of data sets


class DataVersionError(UsageError):
    """No data to version: the input prefix is not an S3 URI or holds no object (the pipeline would fail on it)."""


def fingerprint(entries: Iterable[tuple[str, int, str]]) -> str:
    """The version of ``(relative key, size, change stamp)`` entries; their order does not matter."""
    digest = hashlib.sha256()
    for key, size, stamp in sorted(entries):
        digest.update(f"{key}\0{size}\0{stamp}\n".encode())
    return digest.hexdigest()[:VERSION_LENGTH]


def files_version(files: Iterable[Path], base: Path) -> str:
    """The version of local files: names relative to ``base``, sizes, modification times (nanoseconds)."""
    entries = []
    for path in files:
        stat = path.stat()
        entries.append((path.relative_to(base).as_posix(), stat.st_size, str(stat.st_mtime_ns)))
    return fingerprint(entries)


def local_s3_version(s3: Any, uri: str) -> str:
    """The version of the objects under ``uri`` in the local S3 folder (a ``LocalS3``), listed as S3 lists them."""
    objects = s3.list_objects(uri)
    if not objects:
        raise DataVersionError(f"no objects under {uri} in the local S3 folder {s3.root}")
    entries = []
    for object_uri in objects:
        stat = s3.path(object_uri).stat()
        entries.append((object_uri[len(uri) :], stat.st_size, str(stat.st_mtime_ns)))
    return fingerprint(entries)


def s3_version(s3_client: Any, uri: str) -> str:
    """The version of the objects under ``uri`` on S3: every ListObjectsV2 page's keys, sizes and ETags."""
    return fingerprint(s3_listing(s3_client, uri))


def s3_listing(s3_client: Any, uri: str) -> list[tuple[str, int, str]]:
    """``(key relative to the prefix, size, ETag)`` of every object under ``uri``, from every ListObjectsV2 page: what
    the version is a fingerprint of, and what the jobs are sized from (``pipeline.core.sizing``)."""
    try:
        bucket, prefix = split_s3_uri(uri)
    except ValueError:
        raise DataVersionError(f"InputDataUrl {uri!r} is not an S3 URI (expected s3://bucket/prefix/)") from None
    entries = [
        (item["Key"][len(prefix) :], item["Size"], item["ETag"]) for item in list_objects(s3_client, bucket, prefix)
    ]
    if not entries:
        raise DataVersionError(f"no objects under {uri}")
    return entries
