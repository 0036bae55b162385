"""The local S3 folder mapping and the ShardedByS3Key rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.core.sharding import objects_for_instance
from pipeline.local.s3 import LocalS3, split_uri


def test_split_uri_accepts_only_s3_uris() -> None:
    assert split_uri("s3://bucket/a/b.csv") == ("bucket", "a/b.csv")
    assert split_uri("s3://bucket") == ("bucket", "")
    for bad in ("bucket/key", "https://bucket/key", "s3:///key"):
        with pytest.raises(ValueError, match="not an S3 URI"):
            split_uri(bad)


def test_objects_round_trip_and_prefix_listing(tmp_path: Path) -> None:
    s3 = LocalS3(tmp_path)
    s3.put_bytes("s3://b/data/part-2.csv", b"2")
    s3.put_bytes("s3://b/data/part-1.csv", b"1")
    s3.put_bytes("s3://b/database/other", b"x")
    s3.put_bytes("s3://c/data/part-3.csv", b"3")
    assert s3.path("s3://b/data/part-1.csv").read_bytes() == b"1"
    assert s3.uri(tmp_path / "b" / "data" / "part-2.csv") == "s3://b/data/part-2.csv"
    # S3 prefixes are string prefixes of keys, not folders: "data" also matches "database/...".
    assert s3.list_objects("s3://b/data") == [
        "s3://b/data/part-1.csv",
        "s3://b/data/part-2.csv",
        "s3://b/database/other",
    ]
    assert s3.list_objects("s3://b/data/") == ["s3://b/data/part-1.csv", "s3://b/data/part-2.csv"]
    assert s3.list_objects("s3://missing/x") == []
    assert not list(tmp_path.rglob(".*.tmp")), "atomic writes leave no temporary files"


def test_a_deep_prefix_lists_what_the_whole_bucket_s_walk_listed(tmp_path: Path) -> None:
    """A listing walks only the folder of the key's last ``/`` (the bucket holds every execution's outputs); the
    keys it finds are those a walk of the whole bucket finds: a partial last segment, a file where a folder would
    be, a folder that is a link (which the bucket's walk never entered)."""
    s3 = LocalS3(tmp_path)
    for key in ("run/a/b/c.txt", "run/a/b/cd/e.txt", "run/a/bc/x", "run/ab/c", "other/q"):
        s3.put_bytes(f"s3://b/{key}", b"x")
    (tmp_path / "b" / "run" / "link").symlink_to(tmp_path / "b" / "other")
    assert s3.list_objects("s3://b/run/a/b/c") == ["s3://b/run/a/b/c.txt", "s3://b/run/a/b/cd/e.txt"]
    assert s3.list_objects("s3://b/run/a/b") == ["s3://b/run/a/b/c.txt", "s3://b/run/a/b/cd/e.txt", "s3://b/run/a/bc/x"]
    assert s3.list_objects("s3://b/run/a/b/c.txt/x") == []
    assert s3.list_objects("s3://b/run/link/") == [] == s3.list_objects("s3://b/run/link/q")
    assert s3.list_objects("s3://b/nowhere/x") == []


def test_keys_cannot_escape_the_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="escapes"):
        LocalS3(tmp_path / "s3").path("s3://b/../../etc/passwd")


def test_sharded_by_s3_key_deals_sorted_keys_round_robin() -> None:
    keys = ["k3", "k1", "k5", "k2", "k4"]
    shares = [objects_for_instance(keys, "ShardedByS3Key", i, 2) for i in range(2)]
    assert shares == [["k1", "k3", "k5"], ["k2", "k4"]]
    assert sorted(shares[0] + shares[1]) == sorted(keys)
    assert objects_for_instance(keys, "FullyReplicated", 1, 2) == sorted(keys)
    # more instances than objects: the last instance gets nothing, and the job decides what that means
    assert objects_for_instance(["a", "b"], "ShardedByS3Key", 2, 3) == []


def test_sharding_rejects_unknown_distribution_and_bad_index() -> None:
    with pytest.raises(ValueError, match="ShardedByS3Key"):
        objects_for_instance(["a"], "Sharded", 0, 1)
    with pytest.raises(ValueError, match="out of range"):
        objects_for_instance(["a"], "FullyReplicated", 1, 1)
