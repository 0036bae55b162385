"""The local Linear Learner on folders of files, as ``llpipe linear-learner`` runs it: a training job of several
instances (``pipeline.linear_learner.launcher``) or a batch transform of a ``model.tar.gz``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pipeline.core.names import RECORDIO

__all__ = ["channel_files", "channels", "train_linear_learner", "transform_linear_learner"]


def channel_files(folder: Path) -> list[Path]:
    """A channel's files: the one file given, or every file under the folder (sorted, hidden ones left out)."""
    if folder.is_file():
        return [folder]
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a folder or a file")
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))


def channels(
    train: Path,
    validation: Path | None = None,
    test: Path | None = None,
    content_type: str = RECORDIO,
    train_distribution: str = "ShardedByS3Key",
) -> dict[str, Any]:
    """The training job's channels from folders (or single files): ``train`` divided by ``train_distribution``,
    ``validation`` and ``test`` FullyReplicated; ValueError naming a path that is neither."""
    from pipeline.linear_learner.launcher import Channel

    found = {"train": Channel(channel_files(train), train_distribution, content_type)}
    for name, folder in (("validation", validation), ("test", test)):
        if folder is not None:
            found[name] = Channel(channel_files(folder), "FullyReplicated", content_type)
    return found


def train_linear_learner(
    hyperparameters: Mapping[str, str],
    channels: Mapping[str, Any],
    output: Path,
    *,
    instance_count: int = 1,
    work_dir: Path | None = None,
    on_log: Callable[[str], None] | None = None,
) -> Any:
    """Train on :func:`channels` with ``instance_count`` processes and write the model into ``output``; the
    ``TrainingResult`` (``model_path``, ``metrics``). ``TrainingError`` when an instance fails."""
    from pipeline.linear_learner.launcher import train

    return train(hyperparameters, channels, output, instance_count=instance_count, work_dir=work_dir, on_log=on_log)


def transform_linear_learner(model: Path, input: Path, output: Path, content_type: str = RECORDIO) -> list[Path]:
    """Batch transform of the files of ``input`` (a folder or one file) with ``model``: one ``<file>.out`` each."""
    from pipeline.linear_learner.launcher import transform

    return transform(model, channel_files(input), output, content_type=content_type)
