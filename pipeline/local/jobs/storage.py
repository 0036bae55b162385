"""Moving objects between the local S3 folder and a job's sandbox, as SageMaker's agents do around a container."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pipeline.core.files import atomic_path
from pipeline.core.sharding import objects_for_instance
from pipeline.local.jobs.contract import StepFailed
from pipeline.local.s3 import LocalS3, split_uri


def list_prefix(s3: LocalS3, uri: str, what: str) -> list[str]:
    """Every object under an S3Prefix URI; an empty prefix fails the job, as SageMaker does."""
    objects = s3.list_objects(uri)
    if not objects:
        raise StepFailed(f"{what}: no S3 objects found under {uri}")
    return objects


def relative_key(prefix_uri: str, object_uri: str) -> str:
    """Where an object lands below the local path: its key after the prefix (or its name if the prefix is the key)."""
    _, prefix = split_uri(prefix_uri)
    _, key = split_uri(object_uri)
    relative = key[len(prefix) :].lstrip("/")
    return relative or key.rsplit("/", 1)[-1]


def link_or_copy(source: Path, target: Path) -> None:
    """Hard-link a file (instant, no extra space) or copy it when the file systems differ."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def download(
    s3: LocalS3, uri: str, destination: Path, distribution: str, index: int, count: int, what: str
) -> list[Path]:
    """Materialise an instance's share of an S3Prefix under ``destination``, keeping the keys' sub-folders."""
    objects = list_prefix(s3, uri, what)
    try:
        share = objects_for_instance(objects, distribution, index, count)
    except ValueError as error:
        raise StepFailed(f"{what}: {error}") from None
    destination.mkdir(parents=True, exist_ok=True)
    placed = []
    for obj in share:
        target = destination / relative_key(uri, obj)
        link_or_copy(s3.path(obj), target)
        placed.append(target)
    return placed


def upload_folder(s3: LocalS3, folder: Path, uri: str) -> list[str]:
    """Every file under ``folder`` to ``uri/<relative path>``: written under a temporary name, then renamed."""
    uploaded = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        target_uri = f"{uri.rstrip('/')}/{path.relative_to(folder).as_posix()}"
        upload_file(s3, path, target_uri)
        uploaded.append(target_uri)
    return uploaded


def upload_file(s3: LocalS3, path: Path, uri: str) -> Path:
    """One file to one object, atomically (a temporary name, then a rename)."""
    target = s3.path(uri)
    with atomic_path(target) as temporary:
        link_or_copy(path, temporary)  # the job's files are final once it ended: sharing them costs nothing
    return target
