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
