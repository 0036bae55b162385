"""The local stand-in for S3: ``s3://bucket/key`` is ``<root>/bucket/key`` on disk.

Every local component (jobs, registry, runner) maps URIs through ``LocalS3`` so the layout is decided in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from containerlib.s3_uri import split_s3_uri
from pipeline.core.errors import UsageError
from pipeline.core.files import write_bytes_atomically


def split_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/a/b`` -> ``("bucket", "a/b")``; anything that is not an s3:// URI, or a key with a ``.`` or
    ``..`` segment (on S3 a literal key, here a step out of the folder: the two would differ), is a UsageError
    (a ValueError) naming the URI and the form expected. The key is the text after the bucket, verbatim: ``?``, ``#``
    and ``%`` are part of it (``containerlib.s3_uri``)."""
    try:
        bucket, key = split_s3_uri(uri)
    except ValueError as error:
        raise UsageError(str(error), expected="s3://bucket/key") from None
    key = key.lstrip("/")  # a folder has no empty names: s3://b//k is the file b/k here, as it always was
    if bucket in (".", "..") or any(segment in (".", "..") for segment in key.split("/")):
        raise UsageError(
            f"{uri!r}: an S3 URI with a '.' or '..' segment (a key that escapes its prefix here, and names another "
            "object on S3); expected s3://bucket/key with no such segment",
            expected="s3://bucket/key",
        )
    return bucket, key


@dataclass(frozen=True)
class LocalS3:
    """A folder that holds one sub-folder per bucket."""

    root: Path

    def path(self, uri: str) -> Path:
        """The local path of an object or prefix."""
        bucket, key = split_uri(uri)
        path = (self.root / bucket / key).resolve()
        if not path.is_relative_to(self.root.resolve()):
            raise UsageError(f"S3 key escapes the local S3 folder: {uri!r}", expected="s3://bucket/key")
        return path

    def uri(self, path: Path) -> str:
        """The s3:// URI of a path inside the folder."""
        relative = path.resolve().relative_to(self.root.resolve())
        bucket, *key = relative.parts
        return f"s3://{bucket}/{'/'.join(key)}"

    def list_objects(self, uri: str) -> list[str]:
        """Every object whose key starts with the URI's key, as S3 lists a prefix: sorted by key. Only the folder of
        the key's last ``/`` is walked (every such key is under it), not the whole bucket, which holds every
        execution's outputs."""
        bucket, prefix = split_uri(uri)
        base = self.root / bucket
        folder, _, _ = prefix.rpartition("/")
        parts = folder.split("/") if folder else []
        start = base.joinpath(*parts)
        linked = any(base.joinpath(*parts[: depth + 1]).is_symlink() for depth in range(len(parts)))
        if linked or {"", ".", ".."} & set(parts):  # as the whole bucket's walk sees them: it enters no link
            start = base
        if not start.is_dir():
            return []
        found = []
        for path in start.rglob("*"):
            if path.is_file():
                key = path.relative_to(base).as_posix()
                if key.startswith(prefix):
                    found.append(f"s3://{bucket}/{key}")
        return sorted(found)

    def has_objects(self, uri: str) -> bool:
        """Whether the object, or at least one object under the prefix, exists."""
        path = self.path(uri)
        return path.is_file() or (path.is_dir() and any(child.is_file() for child in path.rglob("*")))

    def put_bytes(self, uri: str, data: bytes) -> Path:
        """Write one object atomically (temporary name, then rename)."""
        path = self.path(uri)
        write_bytes_atomically(path, data)
        return path
