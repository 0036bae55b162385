"""A Pipe-mode train channel with a ShuffleConfig: as on the service, its objects are shuffled every epoch (seeded by
the ShuffleConfig's Seed) and, ShardedByS3Key, dealt to the hosts afresh, so a host reads other objects each epoch."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from containerlib.recordio import write_dense
from pipeline.core.sharding import objects_for_epoch, objects_for_instance
from pipeline.linear_learner.launcher import Channel, train

KEYS = [f"part-{index:02d}" for index in range(7)]


def test_every_epoch_deals_every_object_once_in_a_seeded_order():
    for epoch in range(6):
        shares = [objects_for_epoch(KEYS, "ShardedByS3Key", host, 3, 11, epoch) for host in range(3)]
        assert sorted(key for share in shares for key in share) == KEYS
        # as many objects per host as the fixed deal gives, whichever they are
        assert [len(share) for share in shares] == [
            len(objects_for_instance(KEYS, "ShardedByS3Key", h, 3)) for h in range(3)
        ]
        assert shares == [objects_for_epoch(KEYS[::-1], "ShardedByS3Key", host, 3, 11, epoch) for host in range(3)]
    firsts = {tuple(objects_for_epoch(KEYS, "ShardedByS3Key", 0, 3, 11, epoch)) for epoch in range(6)}
    assert len(firsts) > 1  # host 0 reads other objects in other epochs
    assert objects_for_epoch(KEYS, "ShardedByS3Key", 0, 3, 11, 0) != objects_for_epoch(
        KEYS, "ShardedByS3Key", 0, 3, 12, 0
    )
    replicated = objects_for_epoch(KEYS, "FullyReplicated", 1, 3, 11, 2)
    assert sorted(replicated) == KEYS and replicated != KEYS  # every object, in the epoch's shuffled order


def _objects(folder: Path, sizes: list[int]) -> list[Path]:
    """One RecordIO object per size, with a separable binary label."""
    paths = []
    rng = np.random.default_rng(0)
    for index, rows in enumerate(sizes):
        features = rng.standard_normal((rows, 3)).astype(np.float32)
        labels = (features[:, 0] > 0).astype(np.float32)
        path = folder / f"train-{index:02d}.pbr"
        with path.open("wb") as stream:
            write_dense(stream, features, labels)
        paths.append(path)
    return paths


@pytest.mark.parametrize("seed", [1, 5])
def test_local_hosts_read_the_objects_dealt_to_them_each_epoch(tmp_path: Path, seed: int):
    """Objects of distinct sizes: each host's records in each epoch (its scaling record) are the sizes of the objects
    the deal gives it in that epoch, and they change from epoch to epoch."""
    sizes = [100, 200, 300, 400, 500]
    objects = _objects(tmp_path, sizes)
    hyperparameters = {
        "predictor_type": "binary_classifier",
        "epochs": "4",
        "mini_batch_size": "50",
        "early_stopping_patience": "10",
        "num_models": "2",
    }
    channel = Channel(objects, "ShardedByS3Key", input_mode="Pipe", shuffle_seed=seed)
    result = train(hyperparameters, {"train": channel}, tmp_path / "out", instance_count=2, work_dir=tmp_path / "work")
    by_name = dict(zip([path.name for path in objects], sizes, strict=True))
    seen = []
    for host_index, host in enumerate(result.scaling["hosts"]):
        records = [epoch["records"] for epoch in host["epochs"]]
        expected = [
            sum(by_name[path.name] for path in objects_for_epoch(objects, "ShardedByS3Key", host_index, 2, seed, epoch))
            for epoch in range(4)
        ]
        assert records == expected
        seen.append(records)
    assert len(set(seen[0])) > 1  # a host's share changed between epochs
    config = json.loads((tmp_path / "work" / "algo-2" / "input" / "config" / "inputdataconfig.json").read_text())
    assert config["train"]["ShuffleConfig"] == {"Seed": seed}


def test_without_a_shuffle_config_each_host_keeps_its_share(tmp_path: Path):
    sizes = [100, 200, 300, 400, 500]
    objects = _objects(tmp_path, sizes)
    hyperparameters = {"predictor_type": "binary_classifier", "epochs": "3", "mini_batch_size": "50", "num_models": "2"}
    channel = Channel(objects, "ShardedByS3Key", input_mode="Pipe")
    result = train(hyperparameters, {"train": channel}, tmp_path / "out", instance_count=2, work_dir=tmp_path / "work")
    records = [[epoch["records"] for epoch in host["epochs"]] for host in result.scaling["hosts"]]
    assert records == [[100 + 300 + 500] * 3, [200 + 400] * 3]


def test_a_dealt_channel_reads_its_epochs_objects_in_the_dealt_order(tmp_path: Path):
    """In-process: each epoch's records are its objects' in the dealt order (blocks in file order without a
    generator), head() spans objects, and every object is decoded once into the shared cache."""
    from pipeline.linear_learner.data import open_channel
    from pipeline.linear_learner.dealt import DealtChannel

    sizes = [100, 200, 300]
    objects = _objects(tmp_path, sizes)
    decoded: list[Path] = []

    def decode(path: Path, folder: Path):
        decoded.append(path)
        return open_channel("train", [path], "application/x-recordio-protobuf", folder, feature_dim=3,
                            predictor_type="binary_classifier", num_classes=2)  # fmt: skip

    channel = DealtChannel("train", tuple(objects), "FullyReplicated", 7, 0, 1, tmp_path / "cache", decode)
    whole = {path: open_channel("train", [path], "application/x-recordio-protobuf", tmp_path / path.stem,
                                feature_dim=3, predictor_type="binary_classifier", num_classes=2).head(1000)
             for path in objects}  # fmt: skip
    for epoch in range(3):
        dealt = channel.for_epoch(epoch)
        order = objects_for_epoch(objects, "FullyReplicated", 0, 1, 7, epoch)
        labels = np.concatenate([block.labels for block in dealt.blocks()])
        np.testing.assert_array_equal(labels, np.concatenate([whole[path].labels for path in order]))
        head = dealt.head(sizes[objects.index(order[0])] + 50)
        expected = np.concatenate([whole[order[0]].features, whole[order[1]].features[:50]])
        np.testing.assert_array_equal(head.features, expected)
        assert dealt.rows == sum(sizes) and dealt.head(0).rows == 0
    assert sorted(decoded) == objects  # once each
