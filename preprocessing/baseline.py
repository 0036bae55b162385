"""The data-quality baseline's rows: a seeded uniform sample of the raw feature values a host read.

The pipeline's data-quality check (a QualityCheck step: Model Monitor's analyzer) describes the columns a served
request carries, the raw feature columns in the schema's order (no label, no id), as they were in the input: text
columns as text, numbers as numbers, missing values missing (before ``--missing`` imputes or drops them). Each host
keeps at most ``ceil(--baseline-rows / hosts)`` of its rows, chosen by seeded random keys (the smallest ones), and
writes them in input order to ``baseline/baseline-<host>.csv`` with a header: CSV the analyzer reads with
``DatasetFormat.csv(header=True)``. A column read as integers is written as integers, any other number keeps a
fraction (``28.0``), so a whole value of a float column stays Fractional to the analyzer; non-finite numbers are
written missing.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from containerlib.hosts import Host
from containerlib.tables.chunks import Chunk
from preprocessing.hashing import rng_entropy
from preprocessing.layout import Schema

BASELINE = "baseline"  # the output folder
DEFAULT_BASELINE_ROWS = 10_000
_SEED_SALT = 0x62617365  # "base": the sample's keys never repeat the split's or the shuffle's random numbers


class BaselineSample:
    """At most ``limit`` rows (this host's share) of the raw feature columns, uniformly chosen."""

    def __init__(self, schema: Schema, limit: int, seed: int, host: Host) -> None:
        self.schema = schema
        self.limit = math.ceil(limit / host.count) if limit > 0 else 0
        self._random = np.random.default_rng([rng_entropy(seed), host.index, _SEED_SALT])
        self._keys = np.empty(0)
        self._order = np.empty(0, dtype=np.int64)
        self._values: dict[str, list[np.ndarray]] = {column: [] for column in schema.feature_columns}
        times = {column for column, _ in schema.times}
        self._integers = {column: True for column in schema.numeric_columns if column not in times}  # integers so far
        self._rows = 0

    def add(self, chunk: Chunk) -> None:
        """Offer every row of ``chunk`` (called once per chunk, in input order)."""
        n = len(chunk)
        first, self._rows = self._rows, self._rows + n
        if not self.limit or not n:
            return
        keys = self._random.random(n)
        chosen = np.arange(n)
        if len(self._keys) + n > self.limit:  # only rows that can still be among the smallest keys: few per chunk
            threshold = np.partition(np.concatenate([self._keys, keys]), self.limit - 1)[self.limit - 1]
            chosen = np.flatnonzero(keys <= threshold)
        times = {column for column, _ in self.schema.times}  # date and time text: a request sends the text
        numeric_index = {column: i for i, column in enumerate(self.schema.numeric_columns) if column not in times}
        centres = dict(self.schema.centres)
        integers = _integer_columns(chunk)
        # the reader's features, the chosen rows whole (a column at a time is numpy's slow fancy-index path)
        block = chunk.numeric[chosen] if chunk.numeric is not None else None
        for column in self.schema.feature_columns:
            if column in numeric_index:
                self._integers[column] &= column in integers
                if block is not None:  # centred columns get their centre back
                    values = block[:, numeric_index[column]].astype(np.float64) + centres.get(column, 0.0)
                else:
                    numbers = pd.to_numeric(chunk.frame[column].iloc[chosen], errors="coerce")  # bool: 0/1
                    values = numbers.to_numpy(dtype=np.float64, na_value=np.nan)
            else:
                values = chunk.frame[column].to_numpy(dtype=object)[chosen]
            self._values[column].append(values)
        self._keys = np.concatenate([self._keys, keys[chosen]])
        self._order = np.concatenate([self._order, first + chosen])
        if len(self._keys) > 2 * self.limit:
            self._keep(np.argpartition(self._keys, self.limit - 1)[: self.limit])

    def _keep(self, rows: np.ndarray) -> None:
        for column, parts in self._values.items():
            self._values[column] = [np.concatenate(parts)[rows]] if parts else []
        self._keys, self._order = self._keys[rows], self._order[rows]

    def write(self, path: Path) -> bool:
        """The sample as CSV at ``path``, in input order; False (nothing written) when the sample is off."""
        import pyarrow as pa
        import pyarrow.csv as csv

        if not self.limit:
            return False
        if len(self._keys) > self.limit:
            self._keep(np.argpartition(self._keys, self.limit - 1)[: self.limit])
        self._keep(np.argsort(self._order, kind="stable"))
        columns = {
            column: _as_csv_column(np.concatenate(parts) if parts else np.empty(0), self._integers.get(column))
            for column, parts in self._values.items()
        }  # a text column has no entry in _integers
        csv.write_csv(pa.table(columns), str(path))
        return True


def _as_csv_column(values: np.ndarray, integers: bool | None) -> Any:
    """One column of the sample as the Arrow array written to the CSV file: text as it was (missing stays missing),
    a column read as integers as integers, other numbers as float32's shortest text with a fraction (``28.0``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if integers is None:  # text: missing values (NaN, None) stay missing
        return pa.array([value if isinstance(value, str) else None for value in values.tolist()])
    finite = np.isfinite(values)
    if integers and np.all(values[finite] == np.round(values[finite])):
        return pa.array(np.where(finite, values, 0).astype(np.int64), mask=~finite)
    as_float32 = values.astype(np.float32)
    text = pc.cast(pa.array(as_float32, mask=~finite), pa.string())
    whole = np.flatnonzero(finite & (as_float32 == np.round(as_float32)))  # only these can print as digits alone
    if whole.size:  # the pattern tried on them alone: on every value it cost a third again as much as the cast
        whole_text = pc.take(text, pa.array(whole))
        digits = pc.match_substring_regex(whole_text, r"^-?\d+$").to_numpy(zero_copy_only=False)
        mask = np.zeros(len(text), dtype=bool)
        mask[whole[digits]] = True
        suffixed = pc.binary_join_element_wise(pc.filter(whole_text, pa.array(digits)), ".0", "")
        text = pc.replace_with_mask(text, pa.array(mask), suffixed)
    return text


def _integer_columns(chunk: Chunk) -> set[str]:
    """The columns the reader took as integers in this chunk (Arrow's integers or nulls, or pandas' integer dtype)."""
    import pyarrow as pa

    found = set()
    if chunk.table is not None:
        found = {
            field.name
            for field in chunk.table.schema
            if pa.types.is_integer(field.type) or pa.types.is_null(field.type)
        }
    return found | {str(column) for column, dtype in chunk.frame.dtypes.items() if pd.api.types.is_integer_dtype(dtype)}
