"""Preprocess in bounded memory (issue 39): past a fixed budget the dealt frames spill to disk and every shard is
shuffled from there a block at a time, with the same output byte for byte as when everything fits in memory."""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from test_preprocess_pinned import CASES, output_digest, write_inputs

from containerlib.hosts import Host
from containerlib.prefetch import InFlight
from containerlib.stop_signals import no_stop
from containerlib.tables import chunks, csv_reader
from containerlib.tables.chunks import Chunk
from preprocessing import job, shards
from preprocessing.preprocess import main
from preprocessing.shards import ShardBuffer

# Computed with the code before the budget (every frame in memory up to --shuffle-memory-mb, whole buckets
# shuffled in memory) on the pinned inputs with --shuffle-memory-mb 0.01: several on-disk buckets per shard. Taken
# again with the raw-row split and the test split shuffled a chunk at a time (issue 40), the same with whole
# blocks as with 700 bytes.
BUCKETED = {
    "multiclass, categorical, missing zero": "60fd53ff3235b758f8e254e7023529dba32189ca3b84e88e52cc57f43f2ff751",
    "binary by label values, id split, missing drop": (
        "fa5ea043f3744fc7d20f6f1dd192f1cfd0e8a2b4409fd569e2f27504e885fd47"
    ),
}


def run_pinned(root: Path, case: str, *extra: str) -> str:
    write_inputs(root / "in")
    code = main(
        ["--input-dir", str(root / "in"), "--output-dir", str(root / "out"), "--resource-config",
         str(root / "absent.json"), "--chunk-rows", "300", "--train-shards", "3", "--seed", "5", *CASES[case][0],
         *extra]
    )  # fmt: skip
    assert code == 0
    return output_digest(root / "out")


@pytest.mark.parametrize("case", list(CASES))
def test_spilled_at_once_the_output_is_what_memory_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    monkeypatch.setattr(shards, "MEMORY_BUDGET", 1)  # the first chunk spills already
    monkeypatch.setattr(shards, "BLOCK_BYTES", 700)  # a few rows a block: every shard is put in order in parts
    assert run_pinned(tmp_path, case) == CASES[case][1]


@pytest.mark.parametrize("case", list(BUCKETED))
def test_shards_of_several_buckets_keep_their_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    monkeypatch.setattr(shards, "BLOCK_BYTES", 700)
    assert run_pinned(tmp_path, case, "--shuffle-memory-mb", "0.01") == BUCKETED[case]


def frames(count: int, width: int, first: int) -> np.ndarray:
    """``count`` distinct rows of ``width`` bytes: each starts with its number."""
    rows = np.zeros((count, width), dtype=np.uint8)
    rows[:, :8] = np.arange(first, first + count, dtype=np.int64)[:, None].view(np.uint8)
    return rows


def fill(buffer: ShardBuffer, rows: int, step: int) -> None:
    """Deal ``rows`` distinct frames, ``step`` a chunk, all to the train split (its one shard)."""
    none = np.empty(0, dtype=np.int64)
    for first in range(0, rows, step):
        buffer.add(frames(step, buffer.width, first), {"train": np.arange(step), "validation": none, "test": none})
    buffer.close()


def test_past_the_budget_rows_are_on_disk_and_read_back_a_block_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host, counts = Host("algo-1", 0, ("algo-1",)), {"train": 1, "validation": 1, "test": 1}
    (tmp_path / "memory").mkdir()
    (tmp_path / "disk").mkdir()
    in_memory = ShardBuffer(tmp_path / "memory", 3, counts, 0, host, 10**9, 10**9)
    fill(in_memory, 1_000, 100)
    assert in_memory.in_memory
    dealt, order = in_memory.shuffled_in_memory("train", 0, np.random.default_rng(3))
    expected = dealt.take(order)
    spilled = ShardBuffer(tmp_path / "disk", 3, counts, 0, host, 10**9, 250 * in_memory.width)
    fill(spilled, 1_000, 100)
    assert not spilled.in_memory and not spilled.chunks  # spilled at the third chunk: nothing held any more
    assert spilled.spill_path("train", 0).stat().st_size == 1_000 * spilled.width
    monkeypatch.setattr(shards, "BLOCK_BYTES", 64 * spilled.width)
    plan = spilled.plan_spilled("train", 0, np.random.default_rng(3))
    placed = list(spilled._permuted(plan.spill, plan.orders[0], no_stop))  # 16 parts, each put in order in memory
    assert [len(block) for block in placed] == [64] * 15 + [40]
    assert np.array_equal(np.concatenate(placed), expected)
    again = ShardBuffer(tmp_path / "disk", 3, counts, 0, host, 10**9, 0)  # spilled from the first chunk
    fill(again, 1_000, 100)
    again.write_spilled(again.plan_spilled("train", 0, np.random.default_rng(3)), tmp_path / "shard")
    assert (tmp_path / "shard").read_bytes() == expected.tobytes()
    assert not list((tmp_path / "disk").glob("spill-train-*"))  # the shard's spill and part files, once read


def test_planning_a_shard_of_several_buckets_holds_no_draw_per_row(tmp_path: Path) -> None:
    """A spilled shard's plan keeps the generator's states, not a bucket per row and every bucket's permutation
    (6 bytes a row, past an instance's memory on a shard of a hundred million rows): planning it allocates less
    than a byte a row of the shard, and its draws move the split's generator exactly as before."""
    import tracemalloc

    host, counts = Host("algo-1", 0, ("algo-1",)), {"train": 1, "validation": 1, "test": 1}
    rows = 4_000_000
    buffer = ShardBuffer(tmp_path, 3, counts, 0, host, rows, 0)  # 16 bytes of numbers a row in rows bytes: 16 buckets
    with open(buffer.spill_path("train", 0), "wb") as spill:
        spill.truncate(rows * buffer.width)  # a sparse file: planning reads only its size
    rng = np.random.default_rng(5)
    tracemalloc.start()
    try:
        plan = buffer.plan_spilled("train", 0, rng)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert plan.orders is None and len(plan.counts) == 16 and sum(plan.counts) == rows
    assert peak < rows, f"planning allocated {peak:,} bytes for {rows:,} rows"
    expected = np.random.default_rng(5)  # the draws as they were made: every bucket, then each bucket's permutation
    buckets = expected.integers(0, 16, size=rows)
    for count in np.bincount(buckets, minlength=16).tolist():
        expected.permutation(count)
    assert rng.bit_generator.state == expected.bit_generator.state


@pytest.mark.parametrize("size", [1, 7, 64, 5_000])
def test_a_csv_file_is_read_a_range_of_whole_lines_at_a_time(tmp_path: Path, size: int) -> None:
    lines = [b"a,b", b"", b"1," + b"9" * 300, *(b"%d,%d" % (i, i * i) for i in range(200)), b"x" * 70_000, b"1,2"]
    path = tmp_path / "lines.csv"
    path.write_bytes(b"\n".join(lines))  # no line end after the last line
    ranges = [buffer.to_pybytes() for buffer in csv_reader._line_ranges(path, size)]
    assert b"".join(ranges) == path.read_bytes()
    for piece in ranges[:-1]:  # each ends at the first line end at or after `size` bytes
        assert piece.endswith(b"\n") and len(piece) > size and b"\n" not in piece[size:-1]
    assert ranges[-1] == b"1,2" or len(ranges[-1]) > size


@pytest.mark.parametrize(
    "case", ["multiclass, categorical, missing zero", "binary by label values, id split, missing drop"]
)
def test_no_more_chunks_exist_at_once_than_the_in_flight_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """The job's pipeline (a reading thread, converting threads, the dealing one) holds at most its in-flight bound of
    chunks at once, whatever the queues between its stages and the file's size: every chunk made is counted while
    it is alive (a weak reference), and when each is made, the chunks alive are at most that file's bound. No stage
    keeps a chunk it is done with while it waits for the next. The output is the pinned one."""
    live: set[int] = set()  # the chunks alive, by id: each removed when it is freed
    seen: list[tuple[int, int]] = []  # (the file's in-flight limit, chunks alive) as each chunk is made
    pipelines: list[InFlight] = []

    class Recorded(InFlight):
        def __init__(self, limit: int) -> None:
            super().__init__(limit)
            pipelines.append(self)

    made = chunks.as_chunks

    def counted(*args: object, **kwargs: object) -> Iterator[Chunk]:
        for chunk in made(*args, **kwargs):
            live.add(id(chunk))
            weakref.finalize(chunk, live.discard, id(chunk))
            seen.append((pipelines[-1].limit, len(live)))
            yield chunk
            del chunk

    monkeypatch.setattr(chunks, "as_chunks", counted)
    monkeypatch.setattr(job, "InFlight", Recorded)
    monkeypatch.setattr(csv_reader, "ARROW_RANGE_BYTES", 2_000)  # ranges across chunks
    assert run_pinned(tmp_path, case) == CASES[case][1]
    assert len(seen) >= 9 and len(pipelines) == 3  # 4 + 4 chunks of CSV, 2 of Parquet, a pipeline per file
    assert all(alive <= limit for limit, alive in seen), seen
    assert max(alive for _, alive in seen) > 1  # the stages do overlap
