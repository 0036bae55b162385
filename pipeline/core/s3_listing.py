"""Every object under an S3 prefix, a ListObjectsV2 page at a time: the one pagination loop of the project.

Callers listing data (the data version, sizing, schema inference, the capacity plan, the smoke test, the scaling
study, a given SchemaUrl) iterate it and stop when they have what they need; the next page is only requested when
the iteration gets there. Errors of the client propagate from the iteration, so a caller's ``aws.call`` block
around its loop words them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def list_pages(s3_client: Any, bucket: str, prefix: str) -> Iterator[list[dict[str, Any]]]:
    """Each ListObjectsV2 page's ``Contents`` items (``Key``, ``Size``, ``ETag``, ...) under ``bucket``/``prefix``, in
    key order, following ``NextContinuationToken`` until a page is not truncated: for a caller that stops at a page's
    end once it has enough."""
    request: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
    while True:
        page = s3_client.list_objects_v2(**request)
        yield page.get("Contents", [])
        if not page.get("IsTruncated"):
            return
        request = {**request, "ContinuationToken": page["NextContinuationToken"]}


def list_objects(s3_client: Any, bucket: str, prefix: str) -> Iterator[dict[str, Any]]:
    """Every object's ``Contents`` item under ``bucket``/``prefix``, in key order, over every page."""
    for page in list_pages(s3_client, bucket, prefix):
        yield from page
