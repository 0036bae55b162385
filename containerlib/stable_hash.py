"""A 64-bit hash that is the same in every process, host and Python version: the feature hashing of categorical
values (``blake2b-64("column=value") mod HashBuckets``) that Preprocess applies and the client's schema decision
checks for collisions, and the seeded split hash of ids."""

from __future__ import annotations

import hashlib


def stable_hash64(text: str, key: bytes = b"") -> int:
    """A 64-bit hash of ``text`` that is the same in every process and Python version (unlike ``hash()``)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8, key=key).digest(), "little")
