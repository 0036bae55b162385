"""How S3 objects are divided between instances, for processing inputs and training channels alike.

``FullyReplicated``: every instance gets every object. ``ShardedByS3Key``: the objects, sorted by key, are dealt
round-robin, so instance i of n gets objects i, i+n, i+2n, ... An instance may get none when there are fewer
objects than instances; the job decides whether that is an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

DISTRIBUTIONS = ("FullyReplicated", "ShardedByS3Key")


def objects_for_instance(keys: Sequence[T], distribution: str, host_index: int, host_count: int) -> list[T]:
    """The objects instance ``host_index`` (0-based) of ``host_count`` receives."""
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"unknown S3DataDistributionType {distribution!r}; expected one of {DISTRIBUTIONS}")
    if not 0 <= host_index < host_count:
        raise ValueError(f"host index {host_index} out of range for {host_count} instances")
    ordered = sorted(keys)
    if distribution == "FullyReplicated":
        return ordered
    return ordered[host_index::host_count]
