"""A Pipe-mode channel with a ShuffleConfig, read the way the service streams it: at the start of every epoch the
channel's objects are shuffled (seeded by the ShuffleConfig's Seed and the epoch) and, ShardedByS3Key, dealt to the
hosts afresh (``pipeline.core.sharding.objects_for_epoch``), so a host reads other objects from one epoch to the next.

Each object is decoded and checked once, into its own blocks (``blocks.py``) in a cache folder that the local hosts
share; an epoch then reads its objects' blocks one at a time, so memory stays bounded by a block, as for a channel
read whole. An object is decoded by the first host that needs it (every object is in some host's first-epoch share,
and every host reads that share before the first exchange, so later epochs find them all decoded).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from pipeline.core.errors import AlgorithmInputError
from pipeline.core.sharding import objects_for_epoch
from pipeline.linear_learner.blocks import BlockChannel
from pipeline.linear_learner.trainer import Dataset

METADATA = "channel.json"  # an object's decoded blocks: sizes, width, kind, label counts (written last)


@dataclass(frozen=True)
class DealtChannel:
    """The objects ``rank`` of ``hosts`` reads in ``epoch`` (see the module's note); :meth:`for_epoch` moves on."""

    name: str
    objects: tuple[Path, ...]  # every object of the channel, in key order
    distribution: str
    seed: int
    rank: int
    hosts: int
    cache: Path  # one folder per object, shared by the hosts
    decode: Callable[[Path, Path], BlockChannel]  # (object, folder) -> its blocks, checked
    epoch: int = 0
    opened: dict[Path, BlockChannel] = field(default_factory=dict, compare=False)

    def for_epoch(self, epoch: int) -> DealtChannel:
        return replace(self, epoch=epoch)

    def share(self) -> list[Path]:
        """This host's objects in this epoch, in the order they are streamed."""
        return objects_for_epoch(self.objects, self.distribution, self.rank, self.hosts, self.seed, self.epoch)

    def channels(self) -> list[BlockChannel]:
        return [self._open(path) for path in self.share()]

    @property
    def rows(self) -> int:
        return sum(channel.rows for channel in self.channels())

    @property
    def dim(self) -> int:
        return self.channels()[0].dim

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(size for channel in self.channels() for size in channel.sizes)

    def blocks(self, rng: np.random.Generator | None = None) -> Iterator[Dataset]:
        """The share's objects in the dealt order, each object's blocks shuffled by ``rng`` when given."""
        for channel in self.channels():
            yield from channel.blocks(rng)

    def head(self, count: int) -> Dataset:
        parts: list[Dataset] = []
        for channel in self.channels():
            if sum(part.rows for part in parts) >= count:
                break
            parts.append(channel.head(count - sum(part.rows for part in parts)))
        if not parts:
            return self.channels()[0].head(0)
        if len(parts) == 1:
            return parts[0]
        stack = sp.vstack if sp.issparse(parts[0].features) else np.concatenate
        return Dataset(stack([part.features for part in parts]), np.concatenate([part.labels for part in parts]))

    def label_histogram(self, classes: int) -> np.ndarray:
        return sum((channel.label_histogram(classes) for channel in self.channels()), np.zeros(classes))

    def _open(self, path: Path) -> BlockChannel:
        channel = self.opened.get(path)
        if channel is None:
            folder = self.cache / f"{self.objects.index(path):06d}"
            channel = _load(folder) or _decode_once(path, folder, self.decode)
            first = next(iter(self.opened.values()), channel)
            if channel.dim != first.dim:
                raise AlgorithmInputError(
                    f"{path}: records have {channel.dim} features; expected {first.dim} (from the other objects of "
                    f"channel {self.name!r})"
                )
            self.opened[path] = channel
        return channel


def _load(folder: Path) -> BlockChannel | None:
    try:
        data = json.loads((folder / METADATA).read_text())
    except FileNotFoundError:
        return None
    return BlockChannel(folder, tuple(data["sizes"]), data["dim"], data["sparse"], np.array(data["label_counts"]))


def _decode_once(path: Path, folder: Path, decode: Callable[[Path, Path], BlockChannel]) -> BlockChannel:
    """Decode ``path`` into a temporary folder, then rename it to ``folder``; another host that got there first wins."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    temporary = folder.with_name(f".{folder.name}-{os.getpid()}")
    shutil.rmtree(temporary, ignore_errors=True)
    channel = decode(path, temporary)
    metadata = {
        "sizes": list(channel.sizes),
        "dim": channel.dim,
        "sparse": channel.sparse,
        "label_counts": channel.label_counts.tolist(),
    }
    (temporary / METADATA).write_text(json.dumps(metadata))
    try:
        temporary.rename(folder)
    except OSError:  # decoded meanwhile by another host: use theirs
        shutil.rmtree(temporary, ignore_errors=True)
    return _load(folder) or replace(channel, folder=folder)
