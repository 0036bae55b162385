"""This host's shards: rows, already encoded as RecordIO-protobuf frames, dealt in a seeded random order to each
split's shards, kept in memory or spilled to disk beyond a bound, then each shard shuffled and written."""

from __future__ import annotations

import math
import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from containerlib.hosts import Host
from containerlib.names import SHARD_SUFFIX, SPLIT_CODES, SPLITS
from containerlib.recordio.writer import dense_layout
from containerlib.stop_signals import no_stop
from preprocessing.hashing import rng_entropy

MEMORY_BUDGET = 32 * 1024 * 1024  # bytes of frames held in memory before rows spill to disk
BLOCK_BYTES = 8 * 1024 * 1024  # bytes of frames read, dealt or put in order at a time once spilled
MAX_PARTS = 1024  # part files at most while a spilled bucket is put in order (beyond, blocks grow instead)


class _DealtRows:
    """One shard's rows in memory, as dealt: row numbers into the chunks of frames they came from, gathered a block
    at a time in any order, straight from the chunks (one copy per row, no shard-sized array)."""

    def __init__(self, chunks: list[np.ndarray], pieces: list[tuple[int, np.ndarray]], width: int) -> None:
        self.chunks = chunks
        self.width = width
        self.rows = np.concatenate([piece for _, piece in pieces]) if pieces else np.empty(0, dtype=np.int64)
        numbers = np.array([chunk for chunk, _ in pieces], dtype=np.int64)
        self.chunk_of = np.repeat(numbers.astype(_smallest_int(len(chunks))), [len(piece) for _, piece in pieces])

    def __len__(self) -> int:
        return len(self.rows)

    def take(self, positions: np.ndarray) -> np.ndarray:
        """The frames at ``positions`` of the dealt order, as one [rows, frame bytes] uint8 block."""
        chunk_of, rows = self.chunk_of[positions], self.rows[positions]
        if len(self.chunks) == 1:
            return np.take(self.chunks[0], rows, axis=0)
        block = np.empty((len(positions), self.width), dtype=np.uint8)
        by_chunk = np.argsort(chunk_of, kind="stable")  # a radix sort of small integers
        bounds = np.concatenate([[0], np.cumsum(np.bincount(chunk_of, minlength=len(self.chunks)))]).tolist()
        for chunk, (first, last) in enumerate(zip(bounds[:-1], bounds[1:])):
            if last > first:  # np.take: numpy's fast path for whole rows (about twice indexing's speed)
                chosen = by_chunk[first:last]
                block[chosen] = np.take(self.chunks[chunk], rows[chosen], axis=0)
        return block


def _smallest_int(count: int) -> type:
    return np.int16 if count <= np.iinfo(np.int16).max else np.int32


class ShardBuffer:
    """This host's shards: each split's rows dealt in a seeded random order, round-robin, to its shards.

    Rows come as their RecordIO frames (:class:`~containerlib.recordio.writer.DenseLayout`), so writing a shard
    is only gathering them. In memory a shard is only a list of row numbers into the chunks it was dealt from (the
    chunks are kept whole), so rows are copied once, when the shard is written. Once the chunks held exceed
    ``budget`` bytes (MEMORY_BUDGET), or the dealt rows ``memory_bytes`` (``--shuffle-memory-mb``), everything goes
    to spill files of frames in the work folder, in the order dealt, and each shard is shuffled from disk a block at
    a time: memory stays bounded whatever the size of the data set.

    The shuffle does not depend on where rows are held: ``memory_bytes`` alone decides into how many buckets a
    shard is dealt (counting 4 bytes a number, features and label, as before rows were kept encoded), and a shard of
    one bucket gets the permutation it gets in memory, so the output is byte for byte what it was.
    """

    def __init__(
        self,
        work_dir: Path,
        n_features: int,
        shard_counts: dict[str, int],
        seed: int,
        host: Host,
        memory: int,
        budget: int | None = None,
    ):
        self.work_dir = work_dir
        self.width = dense_layout(n_features, labelled=True).length  # bytes of a row's frame
        self.row_bytes = 4 * (n_features + 1)  # a row's numbers: what memory_bytes counts
        self.memory_bytes = memory
        self.budget = MEMORY_BUDGET if budget is None else budget  # bytes of chunks held before spilling
        self.shard_counts = shard_counts
        self.rngs = {
            split: np.random.default_rng([rng_entropy(seed), host.index, code]) for split, code in SPLIT_CODES.items()
        }
        self.dealt = dict.fromkeys(SPLITS, 0)
        self.chunks: list[np.ndarray] = []  # the chunks rows were dealt from, while in memory
        self.pending: dict[tuple[str, int], list[tuple[int, np.ndarray]]] = {
            (split, shard): [] for split, count in shard_counts.items() for shard in range(count)
        }  # (chunk number, row numbers in it) in the order dealt
        self.pending_bytes = 0
        self.held_bytes = 0  # the chunks' frames kept in memory
        self.spill_files: dict[tuple[str, int], BinaryIO] | None = None  # set once rows no longer fit in memory

    def spill_path(self, split: str, shard: int) -> Path:
        return self.work_dir / f"spill-{split}-{shard:05d}.frames"

    def add(self, rows: np.ndarray, chosen: dict[str, np.ndarray]) -> None:
        """Deal ``rows[chosen[split]]`` (frames) of each split in a random order to its shards."""
        if self.spill_files is None:
            self.chunks.append(rows)
            self.held_bytes += rows.nbytes
        for split, indices in chosen.items():
            shuffled = indices[self.rngs[split].permutation(len(indices))]
            count = self.shard_counts[split]
            for shard in range(count):  # round-robin continued from the last chunk: shards differ by one row at most
                piece = shuffled[(shard - self.dealt[split]) % count :: count]
                if self.spill_files is not None:  # np.take: numpy's fast path for whole rows
                    self.spill_files[split, shard].write(np.take(rows, piece, axis=0).data)
                else:
                    self.pending[split, shard].append((len(self.chunks) - 1, piece))
                    self.pending_bytes += len(piece) * self.row_bytes
            self.dealt[split] += len(indices)
        if self.spill_files is None and (self.pending_bytes > self.memory_bytes or self.held_bytes > self.budget):
            self.spill_files = {key: open(self.spill_path(*key), "wb") for key in self.pending}  # noqa: SIM115
            for key, pieces in self.pending.items():
                for chunk, piece in pieces:
                    self.spill_files[key].write(np.take(self.chunks[chunk], piece, axis=0).data)
                pieces.clear()
            self.chunks.clear()
            self.pending_bytes = self.held_bytes = 0

    def close(self) -> None:
        for handle in (self.spill_files or {}).values():
            handle.close()

    @property
    def in_memory(self) -> bool:
        return self.spill_files is None

    def shuffled_in_memory(self, split: str, shard: int, rng: np.random.Generator) -> tuple[_DealtRows, np.ndarray]:
        """The shard's rows as dealt (copied only when written) and their shuffled order."""
        pieces = self.pending.pop((split, shard))
        return _DealtRows(self.chunks, pieces, self.width), rng.permutation(sum(len(piece) for _, piece in pieces))

    def plan_spilled(self, split: str, shard: int, rng: np.random.Generator) -> SpillPlan:
        """Every random draw of shuffling a spilled shard, in the order the shuffle has always drawn them: the bucket
        of each row when the shard is larger than ``memory_bytes`` of numbers, then each bucket's permutation.

        Dealing rows to random buckets and shuffling each is a uniformly random permutation, like shuffling in
        memory; a shard of one bucket gets the very permutation it gets in memory. Drawn here, on one thread and in
        order, the shuffles are the same whichever thread then moves the rows. A shard of several buckets keeps no
        draw per row: the plan holds the generator's state before the bucket draws and before the permutations (the
        draws are made here once to count the buckets' rows and move ``rng`` past them, and made again from those
        states while the rows are moved, a block and a bucket at a time), so its memory is that of one bucket
        whatever the shard's size."""
        spill = self.spill_path(split, shard)
        count = spill.stat().st_size // self.width
        buckets = max(1, math.ceil(count * self.row_bytes / self.memory_bytes))
        if buckets == 1:
            return SpillPlan(spill, [count], orders=[_permutation(count, rng)])
        bucket_draws = rng.bit_generator.state
        counts = np.zeros(buckets, dtype=np.int64)
        for block in self._bucket_blocks(rng, count, buckets):
            counts += np.bincount(block, minlength=buckets)
        order_draws = rng.bit_generator.state
        for rows in counts.tolist():  # drawn to move rng past them, as the shuffle has always drawn them
            _permutation(rows, rng)
        return SpillPlan(spill, counts.tolist(), bucket_draws=bucket_draws, order_draws=order_draws)

    def _bucket_blocks(self, rng: np.random.Generator, count: int, buckets: int) -> Iterator[np.ndarray]:
        """Each row's bucket, a block of rows at a time: drawn row after row, the same draws whatever the block."""
        step = self._block_rows()
        kind = _smallest_int(buckets)
        for first in range(0, count, step):
            yield rng.integers(0, buckets, size=min(step, count - first)).astype(kind)

    def write_spilled(self, plan: SpillPlan, target: Path, check_stop: Callable[[], None] = no_stop) -> None:
        """Write the planned shard to ``target`` a block at a time, deleting the spill and bucket files once read;
        ``check_stop`` is called before each block read or written (a stop signal raised there ends the shard's
        thread early)."""
        if plan.orders is not None:
            paths, orders = [plan.spill], iter(plan.orders)
        else:
            paths = self._deal_to_buckets(plan, check_stop)
            draws = _generator(plan.order_draws)
            orders = (_permutation(rows, draws) for rows in plan.counts)  # one bucket's at a time, in order
        with open(target, "wb") as out:
            for path, order in zip(paths, orders):
                for block in self._permuted(path, order, check_stop):
                    check_stop()
                    out.write(block.data)

    def _deal_to_buckets(self, plan: SpillPlan, check_stop: Callable[[], None]) -> list[Path]:
        """Move a spill file's rows to the files of their planned buckets."""
        buckets = len(plan.counts)
        paths = [plan.spill.with_name(f"{plan.spill.name}.bucket-{index:05d}") for index in range(buckets)]
        blocks = self._bucket_blocks(_generator(plan.bucket_draws), sum(plan.counts), buckets)
        _deal(plan.spill, self.width, self._block_rows(), blocks, paths, check_stop)
        return paths

    def _block_rows(self) -> int:
        return max(1, BLOCK_BYTES // self.width)

    def _permuted(self, path: Path, order: np.ndarray, check_stop: Callable[[], None]) -> Iterator[np.ndarray]:
        """The rows of ``path`` (deleted once read) in ``order``, in blocks of at most ``_block_rows`` rows (more when
        there would be more than MAX_PARTS blocks): rows are first dealt, in file order, to one part file per output
        block, then each part is read back and put in its block's order."""
        count = len(order)
        step = max(self._block_rows(), math.ceil(count / MAX_PARTS))
        if count <= step:
            rows = np.fromfile(path, dtype=np.uint8).reshape(-1, self.width)
            path.unlink()
            yield np.take(rows, order, axis=0)
            return
        parts = math.ceil(count / step)
        part_of_row = np.empty(count, dtype=_smallest_int(parts))
        part_of_row[order] = np.arange(count, dtype=order.dtype) // step  # the output block each row goes to
        part_paths = [path.with_name(f"{path.name}.part-{index:05d}") for index in range(parts)]
        _deal(
            path,
            self.width,
            step,
            (part_of_row[first : first + step] for first in range(0, count, step)),
            part_paths,
            check_stop,
        )
        del part_of_row
        for index, part in enumerate(part_paths):
            rows = np.fromfile(part, dtype=np.uint8).reshape(-1, self.width)
            part.unlink()
            # a part holds its block's rows in file order, i.e. sorted by their row number in the file
            placed = np.empty_like(rows)
            as_rows = f"V{self.width}"  # a row one item: numpy copies items faster than rows of bytes
            placed.view(as_rows)[np.argsort(order[index * step : (index + 1) * step]), 0] = rows.view(as_rows)[:, 0]
            yield placed


@dataclass(frozen=True)
class SpillPlan:
    """A spilled shard's shuffle, drawn: its spill file, the rows of each bucket, and either its one bucket's order
    (``orders``) or the generator's states before the bucket draws and before the buckets' permutations."""

    spill: Path
    counts: list[int]
    orders: list[np.ndarray] | None = None
    bucket_draws: dict | None = None
    order_draws: dict | None = None


def _generator(state: dict | None) -> np.random.Generator:
    """A generator that draws what one in ``state`` drew next."""
    assert state is not None
    bits = getattr(np.random, state["bit_generator"])()
    bits.state = state
    return np.random.Generator(bits)


def _permutation(count: int, rng: np.random.Generator) -> np.ndarray:
    """What ``rng.permutation(count)`` draws and returns, in 4 bytes a row."""
    order = np.arange(count, dtype=np.int32 if count < 2**31 else np.int64)
    rng.shuffle(order)
    return order


def _deal(
    source: Path,
    width: int,
    block_rows: int,
    groups: Iterator[np.ndarray],
    paths: list[Path],
    check_stop: Callable[[], None],
) -> None:
    """Move the rows of ``source`` (deleted after) to the files of their groups, ``block_rows`` at a time; ``groups``
    gives each block's group per row. ``check_stop`` is called before each block."""
    handles = [open(path, "wb") for path in paths]  # noqa: SIM115
    try:
        with open(source, "rb") as rows_in:
            while block := rows_in.read(block_rows * width):
                check_stop()
                rows = np.frombuffer(block, dtype=np.uint8).reshape(-1, width)
                group_of_row = next(groups)
                if len(group_of_row) != len(rows):  # the plan and the spill file disagree: a bug
                    raise ValueError(f"{source}: a block of {len(rows)} rows but {len(group_of_row)} groups drawn")
                _write_grouped(rows, group_of_row, handles)
    finally:
        for handle in handles:
            handle.close()
    source.unlink()


def _write_grouped(rows: np.ndarray, group_of_row: np.ndarray, handles: list[BinaryIO]) -> None:
    """Append each row to the file of its group, keeping their order within each group."""
    by_group = np.argsort(group_of_row, kind="stable")  # a radix sort of small integers
    grouped = np.take(rows, by_group, axis=0)
    bounds = np.concatenate([[0], np.cumsum(np.bincount(group_of_row, minlength=len(handles)))]).tolist()
    for handle, first, last in zip(handles, bounds[:-1], bounds[1:]):
        if last > first:
            handle.write(grouped[first:last].data)


WRITE_ROWS = 16_384  # rows gathered and written at a time while writing a shard (a few MB, kept in cache)
SPILLED_WRITERS = 2  # spilled shards written at once


def write_shards(
    shards: ShardBuffer,
    splits: list[str],
    shard_counts: dict[str, int],
    seed: int,
    host: Host,
    work_dir: Path,
    check_stop: Callable[[], None] = no_stop,
) -> list[tuple[Path, str]]:
    """Shuffle each shard of the splits that have rows and write its frames; returns (file, split) in order. The
    shuffles are drawn in a fixed order on this thread; the shards are then gathered and written by a few threads
    (numpy's copies and file writes release the GIL): from memory all at once, spilled ones SPILLED_WRITERS at a
    time (each holds its shuffle's plan and a few blocks). ``check_stop`` is called before each shard here and each
    block on the writing threads: a stop signal raised there ends the writing within a block."""
    built = []
    pool = ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1), thread_name_prefix="write")
    writing: deque[Future[None]] = deque()
    try:
        for split in splits:
            rng = np.random.default_rng([rng_entropy(seed), host.index, SPLIT_CODES[split], 1])
            for shard in range(shard_counts[split]):
                check_stop()
                target = work_dir / f"{split}-{host.name}-{shard:05d}{SHARD_SUFFIX}"
                built.append((target, split))
                if shards.in_memory:
                    shuffled = shards.shuffled_in_memory(split, shard, rng)
                    writing.append(pool.submit(_write_shard, target, *shuffled, check_stop))
                    del shuffled  # held by its task only: freed once written
                    continue
                writing.append(
                    pool.submit(shards.write_spilled, shards.plan_spilled(split, shard, rng), target, check_stop)
                )
                while len(writing) >= SPILLED_WRITERS:
                    writing.popleft().result()
        while writing:
            writing.popleft().result()
    finally:  # on an error or a stop, shards not yet begun are not written at all
        pool.shutdown(wait=True, cancel_futures=True)
    return built


def _write_shard(target: Path, rows: _DealtRows, order: np.ndarray, check_stop: Callable[[], None]) -> None:
    with open(target, "wb") as out:
        for start in range(0, len(order), WRITE_ROWS):
            check_stop()
            out.write(rows.take(order[start : start + WRITE_ROWS]).data)
