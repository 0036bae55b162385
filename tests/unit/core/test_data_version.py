"""Data versions: fingerprints of local files, of the local S3 folder and of S3 listings (ListObjectsV2, stubbed)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from botocore.stub import Stubber
from support.aws_stubs import aws_session

from pipeline.core.data_version import DataVersionError, files_version, fingerprint, local_s3_version, s3_version
from pipeline.local.s3 import LocalS3


def later(path: Path, seconds: int = 5) -> None:
    """Move the modification time forward, as a rewrite a few seconds after the last run has it."""
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + seconds * 10**9))


def test_fingerprint_is_sha256_of_the_sorted_entries_whatever_their_order() -> None:
    entries = [("b.csv", 20, "x"), ("a.csv", 10, "y")]
    expected = hashlib.sha256(b"a.csv\x0010\x00y\nb.csv\x0020\x00x\n").hexdigest()[:16]
    assert fingerprint(entries) == fingerprint(reversed(entries)) == expected
    assert fingerprint([("a.csv", 10, "y")]) != expected


def test_files_version_changes_with_an_in_place_rewrite_of_the_same_size(tmp_path: Path) -> None:
    (tmp_path / "part").mkdir()
    first, second = tmp_path / "part" / "a.csv", tmp_path / "b.csv"
    first.write_text("x,label\n1,0\n")
    second.write_text("x,label\n2,1\n")
    files = [first, second]
    version = files_version(files, tmp_path)
    assert len(version) == 16 and files_version(files, tmp_path) == version

    first.write_text("x,label\n1,1\n")  # same size, new content
    later(first)
    changed = files_version(files, tmp_path)
    assert changed != version
    first.rename(tmp_path / "part" / "c.csv")  # a renamed file is other data: its key is part of the version
    assert files_version([tmp_path / "part" / "c.csv", second], tmp_path) != changed


def test_local_s3_version_lists_the_prefix_like_s3(tmp_path: Path) -> None:
    s3 = LocalS3(tmp_path)
    s3.put_bytes("s3://bucket/data/part-0.csv", b"x,label\n1,0\n")
    s3.put_bytes("s3://bucket/data/sub/part-1.csv", b"x,label\n2,1\n")
    s3.put_bytes("s3://bucket/other/part-0.csv", b"unrelated")
    version = local_s3_version(s3, "s3://bucket/data/")

    s3.put_bytes("s3://bucket/other/part-0.csv", b"still unrelated")
    assert local_s3_version(s3, "s3://bucket/data/") == version  # outside the prefix

    s3.path("s3://bucket/data/part-0.csv").write_bytes(b"x,label\n1,1\n")  # in place, same size
    later(s3.path("s3://bucket/data/part-0.csv"))
    changed = local_s3_version(s3, "s3://bucket/data/")
    assert changed != version
    s3.put_bytes("s3://bucket/data/part-2.csv", b"x,label\n3,0\n")  # a new object
    assert local_s3_version(s3, "s3://bucket/data/") != changed

    with pytest.raises(DataVersionError, match="no objects under s3://bucket/nothing/"):
        local_s3_version(s3, "s3://bucket/nothing/")


def listing(*objects: tuple[str, int, str], token: str | None = None) -> dict:
    page: dict = {
        "Contents": [{"Key": key, "Size": size, "ETag": etag} for key, size, etag in objects],
        "IsTruncated": token is not None,
    }
    if token:
        page["NextContinuationToken"] = token
    return page


def test_s3_version_reads_every_listobjectsv2_page_keys_sizes_and_etags() -> None:
    client = aws_session().client("s3")
    stub = Stubber(client)
    first_page = listing(("data/part-0.csv", 10, '"aaa"'), token="next-1")
    request = {"Bucket": "bucket", "Prefix": "data/"}
    for etag in ('"bbb"', '"ccc"'):
        stub.add_response("list_objects_v2", first_page, request)
        stub.add_response(
            "list_objects_v2", listing(("data/part-1.csv", 20, etag)), {**request, "ContinuationToken": "next-1"}
        )
    stub.add_response("list_objects_v2", listing(), {"Bucket": "bucket", "Prefix": "empty/"})
    with stub:
        version = s3_version(client, "s3://bucket/data/")
        assert version == fingerprint([("part-0.csv", 10, '"aaa"'), ("part-1.csv", 20, '"bbb"')])
        assert s3_version(client, "s3://bucket/data/") != version  # part-1 rewritten: same size, new ETag
        with pytest.raises(DataVersionError, match="no objects under s3://bucket/empty/"):
            s3_version(client, "s3://bucket/empty/")
    stub.assert_no_pending_responses()
