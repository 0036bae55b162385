"""Scaling: the shared-memory gradient exchange of the local hosts and the jobs' scaling records."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from pipeline.linear_learner.collective import CollectiveAborted
from pipeline.linear_learner.shared import SharedMemoryCollective


def test_shared_memory_allreduce_sums_in_host_order_for_every_host(tmp_path: Path) -> None:
    """Three hosts, interleaved lengths and many rounds (the double buffer is reused): every host gets the same
    sum, bit for bit, added in host order like the parameter server's."""
    names = ["algo-1", "algo-2", "algo-3"]
    rng = np.random.default_rng(0)
    rounds = [(rng.standard_normal((3, 7)), rng.standard_normal((3, 1))) for _ in range(25)]
    results: dict[int, list[np.ndarray]] = {}
    errors: list[BaseException] = []

    def host(rank: int) -> None:
        collective = SharedMemoryCollective(tmp_path, rank, 3, names, timeout=30)
        try:
            results[rank] = [
                part
                for big, small in rounds
                for part in (collective.allreduce(big[rank]), collective.allreduce(small[rank]))
            ]
        except BaseException as error:  # noqa: BLE001 - reported by the test
            errors.append(error)
        finally:
            collective.close()

    threads = [threading.Thread(target=host, args=(rank,)) for rank in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    expected = [(part[0] + part[1]) + part[2] for big, small in rounds for part in (big, small)]
    for rank in range(3):
        assert len(results[rank]) == len(expected)
        for got, want in zip(results[rank], expected, strict=True):
            np.testing.assert_array_equal(got, want)


def test_shared_memory_exchange_names_the_silent_host_after_the_heartbeat(tmp_path: Path) -> None:
    collective = SharedMemoryCollective(tmp_path, 0, 2, ["algo-1", "algo-2"], timeout=0.2)
    try:
        with pytest.raises(CollectiveAborted, match="algo-2 sent no update for 0.2 s"):
            collective.allreduce(np.ones(4))
    finally:
        collective.close()


def test_preflight_warns_of_idle_hosts_and_a_mini_batch_larger_than_a_host_sees(tmp_path: Path) -> None:
    """The bundled example (569 rows, 70% train) on 2 instances: about 199 train records per host, so the default
    MiniBatchSize 1000 is named; a smaller batch is not. More instances than shards: the idle hosts are counted."""
    from pipeline.core.scaling import preflight_warnings
    from pipeline.definition.config import load_config
    from pipeline.local.data import example_data
    from pipeline.local.runner import build_local_run
    from pipeline.local.workdir import Workdir

    workdir = Workdir(tmp_path)
    run = build_local_run(load_config(env={}), workdir)
    [warning] = run.prepare(example_data(workdir), {}, None).warnings
    assert "MiniBatchSize=1000 is larger than the about 199 train records one of the 2 host(s)" in warning
    assert run.prepare(example_data(workdir), {"MiniBatchSize": "100"}, None).warnings == ()
    [idle] = preflight_warnings(4, 10, train_shards=2, train_rows=1000)
    assert "TrainingInstanceCount=4 but the run will have 2 train shard(s)" in idle and "2 host(s) would get no" in idle
