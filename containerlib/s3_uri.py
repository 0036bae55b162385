"""``s3://bucket/key`` split into its bucket and key, the one way every part of llpipe does it.

An S3 URI is not a URL: a key is any text, and ``?``, ``#``, ``%``, spaces and non-ASCII letters are part of it, as
the AWS CLI and SageMaker read ``s3://`` URIs. ``urllib.parse`` would take what follows ``?`` as a query and what
follows ``#`` as a fragment (a file ``a?b.csv`` became the object ``a``), so nothing here parses URLs: the text after
``s3://`` up to the first ``/`` is the bucket, the rest is the key, verbatim.
"""

from __future__ import annotations

SCHEME = "s3://"


def split_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/a/b?c#d`` -> ``("bucket", "a/b?c#d")``; the key may be empty (``s3://bucket``, a bucket's
    root). Raises ValueError naming the URI when it does not start with ``s3://`` or names no bucket."""
    text = str(uri)
    if not text.startswith(SCHEME):
        raise ValueError(f"not an S3 URI: {text!r} (expected s3://bucket/key)")
    bucket, _, key = text[len(SCHEME) :].partition("/")
    if not bucket:
        raise ValueError(f"not an S3 URI: {text!r} names no bucket (expected s3://bucket/key)")
    return bucket, key
