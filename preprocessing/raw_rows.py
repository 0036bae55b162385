"""The raw rows Evaluate's raw-column baseline is fitted and scored on: a seeded uniform sample of each split's rows
(train and test) as they were read, before any encoding, with each row's label as the model is trained on it.

A scikit-learn model fitted on the encoded (hashed, imputed) features cannot see what the encoding lost; one fitted
on the raw columns can (``evaluation/raw_baseline.py``). Each host keeps at most ``ceil(--raw-rows / hosts)`` rows of
each split, chosen by seeded random keys (the smallest ones, a bottom-k sample: memory bounded whatever the input's
size), and writes them to ``rows/<split>-<host>.parquet``: the feature columns in the schema's order (numeric ones as
float64, NaN where missing, holding the float32 value the table reader gives, as the shards do; text ones as text,
null where missing), then the label column as the float the model
learns (0/1, the class index, or the value). Rows ``--missing drop`` removed are in no split, so in no sample. When a
split holds at most that many rows, its sample is the whole split: the raw-column baseline is then scored on exactly
the model's test records.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from containerlib.hosts import Host
from containerlib.tables.chunks import Chunk
from preprocessing.hashing import rng_entropy
from preprocessing.layout import Schema

ROWS = "rows"  # the output folder
DEFAULT_RAW_ROWS = 50_000  # per split, over all hosts (Evaluate's encoded baseline samples as many train records)
SAMPLED_SPLITS = ("train", "test")
_SEED_SALT = 0x726F7773  # "rows": the keys never repeat the split's, the shuffle's or the data-quality sample's


class SplitSample:
    """At most ``limit`` rows of one split: their keys, their raw feature values and their labels. The numeric
    columns' values are kept as row blocks (float32 as the Arrow reader gives them, float64 from pandas' frames),
    widened to float64 once, for the rows written."""

    def __init__(self, schema: Schema, limit: int) -> None:
        self.schema, self.limit = schema, limit
        self.keys = np.empty(0)
        self.labels = np.empty(0, dtype=np.float64)
        self.numbers: list[np.ndarray] = []  # (rows, numeric columns) blocks, in the schema's numeric order
        numeric = set(schema.numeric_columns)
        self.texts: dict[str, list[np.ndarray]] = {c: [] for c in schema.feature_columns if c not in numeric}

    def candidates(self, keys: np.ndarray) -> np.ndarray:
        """The offered rows that can still be among the smallest keys (few per chunk once the sample is full), so
        only their values are taken out of the chunk."""
        if len(self.keys) + len(keys) <= self.limit:
            return np.arange(len(keys))
        threshold = np.partition(np.concatenate([self.keys, keys]), self.limit - 1)[self.limit - 1]
        return np.flatnonzero(keys <= threshold)

    def add(self, keys: np.ndarray, numbers: np.ndarray, texts: dict[str, np.ndarray], labels: np.ndarray) -> None:
        """Rows already chosen by :meth:`candidates`: their keys, numeric values (one row each), text values and
        labels."""
        if not len(keys):
            return
        self.numbers.append(numbers)
        for column, values in texts.items():
            self.texts[column].append(values)
        self.keys = np.concatenate([self.keys, keys])
        self.labels = np.concatenate([self.labels, labels])
        if len(self.keys) > 2 * self.limit:
            self._keep(np.argpartition(self.keys, self.limit - 1)[: self.limit])

    def _keep(self, rows: np.ndarray) -> None:
        if self.numbers:  # float64 when any block is (float32 values widen exactly)
            self.numbers = [np.concatenate(self.numbers)[rows]]
        for column, parts in self.texts.items():
            self.texts[column] = [np.concatenate(parts)[rows]] if parts else []
        self.keys, self.labels = self.keys[rows], self.labels[rows]

    def table(self) -> Any:
        """The sample as an Arrow table, in key order (itself random: no order of the input shows through)."""
        import pyarrow as pa

        chosen = np.arange(len(self.keys))
        if len(self.keys) > self.limit:
            chosen = np.argpartition(self.keys, self.limit - 1)[: self.limit]
        self._keep(chosen[np.argsort(self.keys[chosen], kind="stable")])  # the rows written, in key order: one gather
        numbers = self.numbers[0] if self.numbers else np.empty((0, len(self.schema.numeric_columns)))
        numeric_index = {column: i for i, column in enumerate(self.schema.numeric_columns)}
        arrays = {}
        for column in self.schema.feature_columns:
            if column in numeric_index:
                arrays[column] = pa.array(numbers[:, numeric_index[column]].astype(np.float64))
                continue
            parts = self.texts[column]
            values = parts[0] if parts else np.empty(0, dtype=object)
            arrays[column] = pa.array([value if isinstance(value, str) else None for value in values.tolist()])
        arrays[self.schema.label_column] = pa.array(self.labels.astype(np.float64))
        return pa.table(arrays)


class RawRowSample:
    """This host's bounded sample of the raw train and test rows (see the module docstring)."""

    def __init__(self, schema: Schema, limit: int, seed: int, host: Host) -> None:
        self.schema = schema
        self.limit = math.ceil(limit / host.count) if limit > 0 else 0
        self._random = np.random.default_rng([rng_entropy(seed), host.index, _SEED_SALT])
        self.splits = {split: SplitSample(schema, self.limit) for split in SAMPLED_SPLITS}

    def add(self, chunk: Chunk, kept: np.ndarray | None, split: np.ndarray, labels: np.ndarray, codes: dict) -> None:
        """Offer the rows of ``chunk``: ``kept`` marks the rows not dropped (None: all), ``split`` and ``labels``
        are per kept row, ``codes`` maps a split's name to its code."""
        if not self.limit or not len(chunk):
            return
        rows = np.arange(len(chunk)) if kept is None else np.flatnonzero(kept)
        keys = self._random.random(len(rows))  # drawn for every kept row, whatever its split: one stream
        for name, sample in self.splits.items():
            mine = np.flatnonzero(split == codes[name])
            if not len(mine):
                continue
            mine = mine[sample.candidates(keys[mine])]
            picked = rows[mine]
            texts = {column: chunk.frame[column].iloc[picked].to_numpy(dtype=object) for column in sample.texts}
            numbers = _numbers(chunk, self.schema.numeric_columns, picked)
            sample.add(keys[mine], numbers, texts, labels[mine].astype(np.float64))  # the rows' labels alone widened

    def writes(self, folder: Path, host_name: str) -> list[Callable[[], Path]]:
        """One call per split that writes its sample as ``<split>-<host>.parquet`` in ``folder`` and returns the
        path; none when the sample is off. Each writes only its own split, so they may run at once (the Parquet
        writer releases the GIL), alongside the shards."""
        if not self.limit:
            return []
        folder.mkdir(parents=True, exist_ok=True)
        return [
            partial(_write_table, sample, folder / f"{name}-{host_name}.parquet")
            for name, sample in self.splits.items()
        ]


def _write_table(sample: SplitSample, path: Path) -> Path:
    """The sample as Parquet; dictionary encoding only for the text columns: on float columns of distinct values the
    writer tried it and fell back, a third of the job's CPU on a 300,000-row Parquet input (the values are the same)."""
    import pyarrow.parquet as pq

    pq.write_table(sample.table(), str(path), use_dictionary=list(sample.texts))
    return path


def _numbers(chunk: Chunk, columns: list[str], rows: np.ndarray) -> np.ndarray:
    """The numeric columns' raw values at ``rows``, one row each: the reader's float32 matrix's rows (NaN where
    missing), or from a pandas frame as float64."""
    if chunk.numeric is not None:
        return chunk.numeric[rows]  # whole rows at once: a third of the time of a column at a time
    numbers = np.empty((len(rows), len(columns)), dtype=np.float64)
    for index, column in enumerate(columns):
        values = pd.to_numeric(chunk.frame[column].iloc[rows], errors="coerce")  # bool: 0/1
        numbers[:, index] = values.to_numpy(dtype=np.float64, na_value=np.nan)
    return numbers
