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


def objects_for_epoch(
    keys: Sequence[T], distribution: str, host_index: int, host_count: int, seed: int, epoch: int
) -> list[T]:
    """The objects instance ``host_index`` reads in ``epoch`` of a Pipe-mode channel with a ShuffleConfig: the
    service shuffles the objects at the start of every epoch (seeded by ``seed``) and, ShardedByS3Key, deals them in
    that order, so "the content sent to a particular node on the first epoch might be sent to a different node on
    the second epoch". Here the shuffle is numpy's permutation seeded by (seed mod 2**64, epoch); the deal is
    round-robin, as :func:`objects_for_instance`, so every host's count of objects is the same as there, only which
    ones differ."""
    import numpy as np

    ordered = objects_for_instance(keys, "FullyReplicated", host_index, host_count)
    shuffled = [ordered[int(i)] for i in np.random.default_rng([seed % 2**64, epoch]).permutation(len(ordered))]
    return shuffled if distribution == "FullyReplicated" else shuffled[host_index::host_count]
