"""The Preprocess processing job: split, shuffle, shard and convert a raw table to RecordIO-protobuf.

Runs as a plain script on each processing instance (numpy, pandas, pyarrow and the standard library only):

    python preprocess.py --input-dir D --output-dir O --label-column NAME --predictor-type T [options]

Output, under ``--output-dir`` (default ``/opt/ml/processing/output``), in four fixed sub-folders, one
ProcessingOutput each (source ``/opt/ml/processing/output/<sub-folder>``):
- ``train/``, ``validation/``, ``test/``: RecordIO-protobuf shards named ``<split>-<host>-<nnnnn>.pbr`` (unique per
  host), dense Float32 features in ``features["values"]``, the label in ``label["values"]``. Each host writes
  ceil(``--train-shards`` / hosts) train files and one validation and one test file (none for an empty split).
- ``summary/``: ``summary-<host>.json`` from every host and, on a single host, the merged ``summary.json``. With
  several hosts the next step reads the folder with :func:`load_summary`, which applies :func:`merge_summaries`.

Rules that keep the result independent of how many instances ran and how the input files were divided:
- Split: each row goes to train/validation/test by a seeded 64-bit hash of its converted content (its float32 features
  and label) or, with ``--id-column``, of its id text. No host-dependent state enters the decision.
- Categorical columns (``--categorical-columns``) are feature-hashed: value ``v`` of column ``c`` sets one of
  ``--hash-buckets`` indicator features, bucket ``blake2b-64("c=v") mod buckets``; a stable hash (not Python's salted
  ``hash()``), so every host maps a value identically without seeing a vocabulary. Values are hashed as their text
  (CSV: as written; Parquet: Arrow's cast to string); a missing value sets no indicator.
- Labels: the mapping never depends on the data a host saw. ``--label-values V0,V1[,...]`` maps ``Vi`` to ``i``
  (matched as text, or numerically when both sides are numbers). Without it binary labels must already be 0/1,
  multiclass labels integers 0..K-1, regression labels finite numbers. Anything else is an error naming file and row.
- Missing values (``--missing``): ``error`` (default) fails on the first empty, NaN or non-finite feature or label
  (values beyond float32's range count as non-finite); ``zero`` imputes 0 for numeric features and an all-zero block
  for categorical ones (a missing label is still an error); ``drop`` drops such rows and counts them. NaN or inf never
  reaches a RecordIO file.
- Shuffle: rows are dealt in a seeded random order, round-robin, to the host's shards, kept in memory up to
  ``--shuffle-memory-mb`` and spilled to the work folder beyond; each shard is then shuffled (in memory, or through
  random buckets on disk), so memory stays bounded by the chunk and shuffle buffers, never by the data set.
- Input: every ``.csv``, ``.csv.gz``, ``.parquet`` or ``.pq`` file under ``--input-dir`` (recursively; names starting
  with ``.`` or ``_`` skipped), each with a header whose names are unique (a repeated name is an error naming it).
- Columns by name, one layout for every host, whatever files it got: the feature order is ``--feature-columns``, else
  the ``feature_columns`` of ``--schema`` (decided once by the client from a sample of the input), else every column
  but the label and id sorted by name. Each file's columns are matched to it by name, in any order; a file lacking a
  column, or (without ``--feature-columns``) holding one the layout does not have, fails naming both.
- ``--schema`` (a JSON file, or a folder holding one) also gives the categorical columns, label values, number of
  classes and id column; an argument that is given wins over it.
- Reading: CSV is parsed by Arrow's multi-threaded reader, a few MB of whole lines at a time, on a background thread
  while the previous chunk is converted, taking values as pandas' ``read_csv`` would (its missing-value strings,
  booleans, no dates; a column's integers may turn to floats, or its empty values to anything, as within a pandas
  chunk); a file Arrow cannot take that way (a malformed row, text in a number column, a date) is read from there
  on by pandas, so results and errors are always pandas'. Chunks are exactly ``--chunk-rows`` rows, so the output
  does not depend on the reader.
Row numbers in messages count data rows from 1, after the header (blank CSV lines are not rows); files are named by
``--input-source`` (the input's S3 URI) when given, so a user reads s3://bucket/in/d.csv, not the container's path.
Nothing half-written is left behind: files are built in ``O/.preprocess-work-<host>/`` and renamed into place when
complete; on failure everything this host wrote is removed.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import json
import math
import os
import queue
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

import numpy as np
import pandas as pd

from containerlib.errors import InputError
from containerlib.exit_message import EXIT_MESSAGE_FILE, write_exit_message
from containerlib.hosts import RESOURCE_CONFIG, Host, read_resource_config
from containerlib.names import (
    CSV_SUFFIXES,
    PARQUET_SUFFIXES,
    PREDICTOR_TYPES,
    SCHEMA_FORMAT,
    SHARD_SUFFIX,
    SPLITS,
    SUMMARY_FORMAT,
)
from containerlib.recordio import write_dense

MISSING_POLICIES = ("error", "zero", "drop")
DISTINCT_LIMIT = 100_000  # distinct values counted exactly per categorical column and host; beyond, "at least"
PROGRESS_ROWS = 1_000_000  # a progress line each time this many more rows have been read

_SPLIT_CODES = {name: code for code, name in enumerate(SPLITS)}
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


class PreprocessError(InputError):
    """A problem with the input or the arguments that the user must fix; printed as one line, exit status 1."""


# ---------------------------------------------------------------------------------------------------------------------
# Hosts and input files


@dataclass(frozen=True)
class InputNames:
    """How messages name the input files: by where they came from (``--input-source``, the input's S3 URI), else by
    their path here. A user knows s3://bucket/in/d.csv, not /opt/ml/processing/input/data/d.csv.

    The inverse of SageMaker's S3Prefix download: the object under the prefix lands at its key after the prefix (a
    prefix that is a whole key lands at its last part)."""

    input_dir: Path
    source: str | None = None

    def __call__(self, path: Path) -> str:
        if not self.source or not path.is_relative_to(self.input_dir):
            return str(path)
        relative = path.relative_to(self.input_dir).as_posix()
        if relative == "." or self.source.endswith("/" + relative):
            return self.source
        return self.source + ("" if self.source.endswith("/") else "/") + relative


def list_input_files(input_dir: Path, host: Host, name: str | None = None) -> list[Path]:
    """Every CSV (optionally gzip) or Parquet file under ``input_dir``, sorted; hidden and ``_``-files are skipped.
    ``name`` is the folder's name in messages (default: its path)."""
    name = name or str(input_dir)
    if not input_dir.is_dir():
        raise PreprocessError(f"input dir {input_dir} does not exist or is not a folder")
    candidates = [path for path in input_dir.rglob("*") if path.is_file() and not path.name.startswith((".", "_"))]
    files = sorted(path for path in candidates if path.name.lower().endswith(CSV_SUFFIXES + PARQUET_SUFFIXES))
    ignored = sorted(set(candidates) - set(files))
    if ignored:
        print(
            f"[{host.name}] ignoring {len(ignored)} file(s) that are not CSV or Parquet, e.g. {ignored[0]}", flush=True
        )
    if not files:
        if host.count > 1:
            raise PreprocessError(
                f"host {host.name} ({host.index + 1} of {host.count}) received no CSV or Parquet files under "
                f"{name}: there are more processing instances than input objects (with ShardedByS3Key each "
                "instance needs at least one object); use fewer instances or split the input into more files"
            )
        raise PreprocessError(f"no CSV (.csv, .csv.gz) or Parquet (.parquet, .pq) files under {name}")
    return files


def _is_parquet(path: Path) -> bool:
    return path.name.lower().endswith(PARQUET_SUFFIXES)


def read_header(path: Path, name: str | None = None) -> list[str]:
    """The column names of one input file exactly as written; a name written twice is an error naming it (as
    ``name``, default its path).

    CSV headers are read with the csv module: pandas would silently rename a second ``label`` to ``label.1``."""
    name = name or str(path)
    try:
        if _is_parquet(path):
            import pyarrow.parquet as pq

            header = [str(name) for name in pq.ParquetFile(path).schema_arrow.names]
        else:
            opener = gzip.open if path.name.lower().endswith(".gz") else open
            with opener(path, "rt", encoding="utf-8-sig", newline="") as handle:  # type: ignore[operator]
                header = next(csv.reader(handle), None)
            if not header or header == [""]:
                raise PreprocessError(f"{name}: empty file, expected a header row")
    except (OSError, ValueError, UnicodeDecodeError, EOFError, csv.Error) as error:
        raise PreprocessError(f"{name}: unreadable ({type(error).__name__}: {error})") from error
    unnamed = [number for number, column in enumerate(header, start=1) if not column.strip()]
    if unnamed:
        raise PreprocessError(f"{name}: header column(s) {unnamed} (counted from 1) have no name")
    duplicated = sorted({column for column in header if header.count(column) > 1})
    if duplicated:
        raise PreprocessError(
            f"{name}: duplicate column name(s) {duplicated} in the header; every column needs its own name"
        )
    return header


def load_decided(path: Path | None) -> dict[str, Any]:
    """The schema the client decided (``--schema``: the JSON file, or a folder holding exactly one); {} without.

    Keys used: ``feature_columns``, ``categorical_columns``, ``label_column``, ``label_values``, ``num_classes``,
    ``id_column``; a missing or null key means "not decided" (the built-in default schema decides nothing)."""
    if path is None:
        return {}
    if path.is_dir():
        found = sorted(p for p in path.rglob("*.json") if p.is_file())
        if len(found) != 1:
            raise PreprocessError(
                f"--schema {path}: expected exactly one .json file in this folder, found {len(found)}"
            )
        path = found[0]
    try:
        decided = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise PreprocessError(f"--schema {path}: not a readable JSON file ({error})") from error
    if not isinstance(decided, dict) or decided.get("format") != SCHEMA_FORMAT:
        raise PreprocessError(f"--schema {path}: not an llpipe schema (expected format {SCHEMA_FORMAT!r})")
    for key in ("feature_columns", "categorical_columns", "label_values"):
        value = decided.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(item, str) for item in value)):
            raise PreprocessError(f"--schema {path}: {key} must be a list of strings, got {value!r}")
    return decided


# ---------------------------------------------------------------------------------------------------------------------
# Schema: which columns are features, label and id, and how they become float32 columns


@dataclass(frozen=True)
class Schema:
    """The columns read from every file and the feature layout they produce (identical on every host)."""

    label_column: str
    id_column: str | None
    numeric_columns: tuple[str, ...]
    categorical_columns: tuple[str, ...]
    hash_buckets: int
    feature_columns: tuple[str, ...]  # in output order: numeric ones as one feature, categorical ones as a block
    label_as_text: bool  # with --label-values, labels are matched as the text in the file
    expected_columns: frozenset[str] | None  # every file has exactly these columns; None: extra columns are ignored
    layout_source: str  # where the feature order comes from, for messages

    @property
    def feature_names(self) -> list[str]:
        names: list[str] = []
        for column in self.feature_columns:
            if column in self.categorical_columns:
                names.extend(f"{column}#{bucket}" for bucket in range(self.hash_buckets))
            else:
                names.append(column)
        return names

    @property
    def feature_offsets(self) -> dict[str, int]:
        """Index of each feature column's first feature."""
        offsets, offset = {}, 0
        for column in self.feature_columns:
            offsets[column] = offset
            offset += self.hash_buckets if column in self.categorical_columns else 1
        return offsets

    @property
    def feature_dim(self) -> int:
        return len(self.numeric_columns) + len(self.categorical_columns) * self.hash_buckets

    @property
    def text_columns(self) -> list[str]:
        """Columns read as text: categorical features and the id."""
        return list(self.categorical_columns) + ([self.id_column] if self.id_column else [])

    @property
    def used_columns(self) -> list[str]:
        return [self.label_column, *self.feature_columns] + ([self.id_column] if self.id_column else [])


def _split_list(text: str | None) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()] if text else []


def _given_or_decided(given: str | None, decided: dict[str, Any], key: str) -> list[str]:
    """An argument the user gave wins over the schema's decision (the client never decides what the user set)."""
    return _split_list(given) if _split_list(given) else list(decided.get(key) or [])


def resolve_schema(args: argparse.Namespace, decided: dict[str, Any], name: str, header: Sequence[str]) -> Schema:
    """The feature layout every host shares, from the arguments, the decided schema and (last) a fixed rule;
    ``header`` is that of the first file, named ``name`` in messages.

    Feature order: ``--feature-columns``, else the schema's ``feature_columns``, else every column but the label
    and the id sorted by name (a rule needing no coordination: hosts that see the same columns agree)."""
    decided_label = decided.get("label_column")
    if decided_label is not None and decided_label != args.label_column:
        raise PreprocessError(
            f"the schema was decided for label column {decided_label!r} but --label-column is {args.label_column!r}; "
            "infer the schema again (drop --param SchemaUrl) or pass the matching label column"
        )
    id_column = args.id_column or decided.get("id_column") or None
    categorical = _given_or_decided(args.categorical_columns, decided, "categorical_columns")
    excluded = {args.label_column, id_column}
    if _split_list(args.feature_columns):
        features, expected, source = _split_list(args.feature_columns), None, "--feature-columns"
    elif decided.get("feature_columns"):
        features = list(decided["feature_columns"])
        expected = frozenset([args.label_column, *features] + ([id_column] if id_column else []))
        source = "the schema"
    else:
        check_header(name, header, [args.label_column] + ([id_column] if id_column else []))
        features = sorted(column for column in header if column not in excluded)
        expected, source = frozenset(header), f"the columns of {PurePosixPath(name).name} sorted by name"
    clash = excluded.intersection(features)
    if clash:
        raise PreprocessError(f"feature columns must not include the label or id column: {sorted(clash)}")
    duplicated = sorted({column for column in features if features.count(column) > 1})
    if duplicated:
        raise PreprocessError(f"feature columns listed twice: {duplicated}")
    unknown = [column for column in categorical if column not in features]
    if unknown:
        raise PreprocessError(
            f"categorical columns {unknown} are not feature columns {features} (check --param CategoricalColumns)"
        )
    if not features:
        raise PreprocessError(f"{name}: no feature columns besides the label {args.label_column!r}")
    return Schema(
        label_column=args.label_column,
        id_column=id_column,
        numeric_columns=tuple(column for column in features if column not in categorical),
        categorical_columns=tuple(column for column in features if column in categorical),
        hash_buckets=args.hash_buckets,
        feature_columns=tuple(features),
        label_as_text=bool(args.label_values or decided.get("label_values")),
        expected_columns=expected,
        layout_source=source,
    )


def check_header(name: str, header: Sequence[str], required: Sequence[str]) -> None:
    missing = [column for column in required if column not in header]
    if missing:
        raise PreprocessError(f"{name}: missing column(s) {missing}; the header has {list(header)}")


def check_columns(name: str, header: Sequence[str], schema: Schema) -> None:
    """A file's columns, matched by name against the shared layout: missing or unexpected ones fail naming both."""
    required = schema.used_columns
    missing = [column for column in required if column not in header]
    unexpected = [] if schema.expected_columns is None else [c for c in header if c not in schema.expected_columns]
    if missing or unexpected:
        raise PreprocessError(
            f"{name}: columns differ from the layout every host uses ({schema.layout_source}): "
            f"missing {missing}, unexpected {unexpected}; every file needs the same column names (in any order)"
        )


def stable_hash64(text: str, key: bytes = b"") -> int:
    """A 64-bit hash of ``text`` that is the same in every process and Python version (unlike ``hash()``)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8, key=key).digest(), "little")


# ---------------------------------------------------------------------------------------------------------------------
# Labels


@dataclass(frozen=True)
class LabelSpec:
    """How label values become Linear Learner labels, fixed by the arguments only (never by the data a host saw)."""

    predictor_type: str
    values: tuple[str, ...] | None  # --label-values: values[i] -> i
    num_classes: int | None  # --num-classes, multiclass only

    def mapping(self) -> dict[str, int] | None:
        return {value: index for index, value in enumerate(self.values)} if self.values else None

    def numeric_mapping(self) -> dict[float, int]:
        """``--label-values`` that are numbers, so a numeric label column matches "1" against 1.0."""
        result: dict[float, int] = {}
        for index, value in enumerate(self.values or ()):
            try:
                result.setdefault(float(value), index)
            except ValueError:
                continue
        return result


def make_label_spec(args: argparse.Namespace, decided: dict[str, Any] | None = None) -> LabelSpec:
    """Label handling from ``--label-values`` / ``--num-classes``, else from the decided schema."""
    decided = decided or {}
    values = tuple(_given_or_decided(args.label_values, decided, "label_values")) or None
    num_classes = args.num_classes if args.num_classes is not None else decided.get("num_classes")
    if num_classes is not None and args.predictor_type != "multiclass_classifier" and args.num_classes is None:
        num_classes = None  # a schema decided for another predictor type does not constrain this one
    if values is not None:
        if len(set(values)) != len(values):
            raise PreprocessError(f"--label-values has duplicates: {list(values)}")
        if args.predictor_type == "regressor":
            raise PreprocessError("--label-values applies to classifiers only, not to regressor")
        if args.predictor_type == "binary_classifier" and len(values) != 2:
            raise PreprocessError(f"binary_classifier needs 2 --label-values (NEGATIVE,POSITIVE), got {values}")
        if args.predictor_type == "multiclass_classifier" and len(values) < 3:
            raise PreprocessError(f"multiclass_classifier needs >= 3 --label-values (num_classes >= 3), got {values}")
    if num_classes is not None:
        if args.predictor_type != "multiclass_classifier":
            raise PreprocessError("--num-classes applies to multiclass_classifier only")
        if num_classes < 3:
            raise PreprocessError(f"--num-classes must be at least 3 (Linear Learner's range), got {num_classes}")
        if values is not None and len(values) != num_classes:
            raise PreprocessError(
                f"NumClasses {num_classes} but {len(values)} label values {list(values)}: "
                f"pass --param NumClasses={len(values)}"
            )
    return LabelSpec(args.predictor_type, values, num_classes)


def encode_labels(raw: pd.Series, spec: LabelSpec, where: RowLocator) -> tuple[np.ndarray, np.ndarray]:
    """Labels as float32 plus a mask of missing ones; an impossible value is an error naming file and row."""
    missing = raw.isna().to_numpy()
    if spec.values is not None:
        text = raw.astype(str).str.strip()
        index = text.map(spec.mapping()).astype("float64")
        unmatched = index.isna().to_numpy() & ~missing
        numeric = spec.numeric_mapping()
        if unmatched.any() and numeric:
            as_number = pd.to_numeric(text[unmatched], errors="coerce")
            index[unmatched] = as_number.map(numeric).astype("float64").to_numpy()
            unmatched = index.isna().to_numpy() & ~missing
        if unmatched.any():
            row = int(np.flatnonzero(unmatched)[0])
            raise PreprocessError(
                f"{where.at(row)}: label {_show(raw.iloc[row])} is not one of the label values {list(spec.values)}; "
                f"{_labels_seen(raw)}"
            )
        return index.to_numpy(dtype=np.float32, na_value=np.nan), missing

    numbers = _to_float64(raw, where, f"label column {raw.name!r}", hint=lambda: _labels_seen(raw))
    with np.errstate(over="ignore", invalid="ignore"):
        labels = numbers.astype(np.float32)
    missing = missing | ~np.isfinite(labels)
    present = ~missing
    if spec.predictor_type == "binary_classifier":
        bad = present & (labels != 0) & (labels != 1)
        expected = "0 or 1 for binary_classifier"
    elif spec.predictor_type == "multiclass_classifier":
        bad = present & ((labels < 0) | (labels != np.floor(labels)))
        if spec.num_classes is not None:
            bad |= present & (labels >= spec.num_classes)
        limit = f"0..{spec.num_classes - 1}" if spec.num_classes else "0..K-1"
        expected = f"an integer class in {limit} for multiclass_classifier"
    else:
        bad = np.zeros_like(present)
        expected = ""
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise PreprocessError(f"{where.at(row)}: label {_show(raw.iloc[row])} is not {expected}; {_labels_seen(raw)}")
    return labels, missing


def _labels_seen(raw: pd.Series, limit: int = 20) -> str:
    """The distinct labels of a chunk and the parameter that maps them, for an error message."""
    seen = sorted({str(value).strip() for value in raw.dropna().unique()})
    shown = ", ".join(seen[:limit]) + (f", ... ({len(seen)} in all)" if len(seen) > limit else "")
    return (
        f"labels seen in this chunk: {shown}; map them to classes in order with --param LabelValues={','.join(seen)} "
        "(preprocess.py: --label-values)"
    )


# ---------------------------------------------------------------------------------------------------------------------
# Reading and converting chunks


@dataclass(frozen=True)
class RowLocator:
    """Turns a row index within a chunk into 'file row N' for messages."""

    name: str  # the file's name in messages (InputNames)
    first_row: int  # 1-based data row number of the chunk's first row

    def at(self, index: int) -> str:
        return f"{self.name} row {self.first_row + index}"


@dataclass
class Chunk:
    """Consecutive rows of one file: the used columns as pandas' reader gives them, except the numeric features when
    an Arrow reader gave those straight as one float32 matrix (no float64 pandas block in between)."""

    frame: pd.DataFrame
    numeric: np.ndarray | None = None  # float32 (rows, schema.numeric_columns), column-major, NaN where missing
    table: Any = None  # the Arrow table ``numeric`` came from, for a value shown in a message

    def __len__(self) -> int:
        return len(self.frame)

    def value(self, column: str, row: int) -> Any:
        """The cell as pandas would hold it (NaN for missing), for a message."""
        if column in self.frame:
            return self.frame[column].iloc[row]
        value = self.table.column(column)[row].as_py()
        return float("nan") if value is None else value


def iter_chunks(
    path: Path, schema: Schema, chunk_rows: int, name: str | None = None
) -> Iterator[tuple[RowLocator, Chunk]]:
    """The used columns of one file, ``chunk_rows`` rows at a time; errors name the file as ``name`` (default: its
    path)."""
    name = name or str(path)
    header = read_header(path, name)
    check_columns(name, header, schema)
    first_row = 1
    try:
        text = schema.text_columns + ([schema.label_column] if schema.label_as_text else [])
        numeric = schema.numeric_columns
        if _is_parquet(path):
            pieces = _parquet_pieces(path, schema.used_columns, text, chunk_rows)
        else:
            pieces = _csv_pieces(path, header, schema.used_columns, text, chunk_rows)
        # read on a thread of its own, which goes straight on to the next piece; made chunks on the caller's
        for chunk in _as_chunks(_prefetched(pieces), text, numeric):
            yield RowLocator(name, first_row), chunk
            first_row += len(chunk)
    except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as error:
        after = f" after data row {first_row - 1}" if first_row > 1 else ""
        raise PreprocessError(f"{name}: unreadable{after} ({type(error).__name__}: {error})") from error


def _pandas_na_values() -> list[str]:
    """pandas' default missing-value strings, so Arrow reads NaN where this pandas does (2.0 added "None")."""
    try:
        from pandas._libs.parsers import STR_NA_VALUES

        return sorted(STR_NA_VALUES)
    except ImportError:  # a pandas that moved it: 1.x's list
        return ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>",
                "N/A", "NA", "NULL", "NaN", "n/a", "nan", "null"]  # fmt: skip


ARROW_RANGE_BYTES = 8 << 20  # whole lines parsed at once by Arrow's multi-threaded reader (8 MB measured best)
ARROW_TYPES = ("int64", "double", "bool", "string", "null")  # as pandas infers them; others go to pandas


class _ArrowCannot(Exception):
    """Arrow cannot read (the rest of) a CSV file the way pandas would; pandas takes over."""


def _as_chunks(pieces: Iterator[Any], text: list[str], numeric: Sequence[str]) -> Iterator[Chunk]:
    """Pieces read (Arrow tables, or pandas' frames where pandas took over) as chunks."""
    first = 0
    for piece in pieces:
        yield Chunk(piece) if isinstance(piece, pd.DataFrame) else _arrow_chunk(piece, text, numeric, first)
        first += len(piece)


def _csv_pieces(path: Path, header: list[str], columns: list[str], text: list[str], chunk_rows: int) -> Iterator[Any]:
    """The CSV file in pieces of exactly ``chunk_rows`` rows (the last may be shorter), Arrow tables; from the first
    block Arrow cannot take as pandas would, pandas reads the rest (DataFrames), so values and errors are pandas'."""
    done = 0
    try:
        for table in _arrow_csv_pieces(path, header, columns, text, chunk_rows):
            yield table
            done += table.num_rows
        return
    except _ArrowCannot:
        pass
    # All columns are parsed (no usecols): with usecols pandas silently ignores a row's extra fields.
    for frame in pd.read_csv(path, dtype=dict.fromkeys(text, str), chunksize=chunk_rows):
        if done:  # rows Arrow already gave, whole chunks of the same size
            done -= len(frame)
            continue
        yield frame


def _arrow_csv_pieces(
    path: Path, header: list[str], columns: list[str], text: list[str], chunk_rows: int
) -> Iterator[Any]:

    pending: list[Any] = []
    pending_rows = 0
    for table in _arrow_csv_tables(path, header, columns, text):
        pending.append(table)
        pending_rows += table.num_rows
        while pending_rows >= chunk_rows:
            combined = _concatenated(pending)
            yield combined.slice(0, chunk_rows)
            pending, pending_rows = [combined.slice(chunk_rows)], combined.num_rows - chunk_rows
    if pending_rows:
        yield _concatenated(pending)


def _concatenated(tables: list[Any]) -> Any:
    """Tables as one, a widened column's earlier values cast to its type (exact: integers beyond 2**53 refuse)."""
    import pyarrow as pa

    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except pa.ArrowException as error:
        raise _ArrowCannot(str(error)) from error


def _arrow_csv_tables(path: Path, header: list[str], columns: list[str], text: list[str]) -> Iterator[Any]:
    """The file as Arrow tables, one per range of whole lines, each parsed by Arrow's multi-threaded reader (its
    streaming reader parses on one thread). A column's type may widen from range to range as pandas' would within a
    chunk: empty so far, then whatever a range finds; integers, then floats. Any other change (text in a number
    column, a date) is one pandas takes over from."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    in_file_order = [name for name in header if name in set(columns)]  # Arrow keeps include_columns' order
    convert = pacsv.ConvertOptions(
        include_columns=in_file_order,
        column_types={column: pa.string() for column in text},
        null_values=_pandas_na_values(),
        strings_can_be_null=True,
        true_values=["True", "TRUE", "true"],
        false_values=["False", "FALSE", "false"],
        timestamp_parsers=[],
    )
    read = pacsv.ReadOptions()
    schema = None
    for lines in _line_ranges(path, ARROW_RANGE_BYTES):
        try:
            table = pacsv.read_csv(lines, read_options=read, convert_options=convert)
        except pa.ArrowException as error:  # e.g. ArrowInvalid, or ArrowKeyError for a name Arrow reads otherwise
            raise _ArrowCannot(str(error)) from error
        if schema is None:  # the first range, with the header line
            if table.schema.names != in_file_order:
                raise _ArrowCannot("column names differ from pandas' (duplicates or a byte-order mark)")
            read = pacsv.ReadOptions(column_names=header)
        odd = [field.name for field in table.schema if str(field.type) not in ARROW_TYPES]
        if odd:
            raise _ArrowCannot(f"columns {odd} have types pandas would not infer")
        schema = table.schema if schema is None else _widened(schema, table.schema)
        # types that cannot widen further are fixed; integer and empty columns are inferred again in every range
        convert.column_types = {field.name: field.type for field in schema if str(field.type) in _FINAL_TYPES}
        yield table


_FINAL_TYPES = ("double", "string", "bool")


def _widened(known: Any, found: Any) -> Any:
    """Each column's type so far widened by the one a new range found (null < int64 < double); _ArrowCannot for
    any other pair."""
    import pyarrow as pa

    fields = []
    for before, now in zip(known, found):
        kinds = {str(before.type), str(now.type)} - {"null"}
        if len(kinds) > 1 and kinds != {"int64", "double"}:
            raise _ArrowCannot(f"column {before.name!r} changes from {before.type} to {now.type} after the first range")
        fields.append(before if str(now.type) in ("null", "int64") and str(before.type) != "null" else now)
    return pa.schema(fields)


def _line_ranges(path: Path, size: int) -> Iterator[Any]:
    """The file's bytes as Arrow buffers of about ``size`` bytes, each ending at the end of a line: slices of the
    memory-mapped file (no copy), or for a .gz file of its text decompressed a block at a time."""
    import pyarrow as pa

    if path.name.endswith(".gz"):
        yield from _decompressed_line_ranges(path, size)
        return
    with pa.memory_map(str(path)) as source:
        whole = source.read_buffer()
        view = memoryview(whole)
        start, end = 0, len(whole)
        while start < end:
            stop = min(start + size, end)
            while stop < end:  # on to the end of the line
                found = bytes(view[stop : stop + 65536]).find(b"\n")
                if found >= 0:
                    stop += found + 1
                    break
                stop = min(stop + 65536, end)
            yield whole.slice(start, stop - start)
            start = stop


def _decompressed_line_ranges(path: Path, size: int) -> Iterator[Any]:
    import pyarrow as pa

    with pa.input_stream(str(path)) as stream:  # gunzips
        rest = b""
        while True:
            block = stream.read(size)
            if not block:
                if rest:
                    yield pa.py_buffer(rest)
                return
            cut = block.rfind(b"\n") + 1
            if cut == 0:  # no line ends in this block
                rest += block
                continue
            yield pa.py_buffer(rest + block[:cut])
            rest = block[cut:]


def _prefetched(items: Iterator[Any], ahead: int = 2) -> Iterator[Any]:
    """``items`` produced on a background thread, up to ``ahead`` in advance, so stages overlap: the next chunk is
    parsed (Arrow and pandas' parser release the GIL) while one is converted (numpy does too) and another dealt to
    shards. Errors reach the caller in order."""
    produced: queue.Queue[Any] = queue.Queue(maxsize=ahead)
    stop = threading.Event()
    end = object()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                produced.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((item, None)):
                    return
            put((end, None))
        except BaseException as error:  # noqa: BLE001 - handed to the consuming thread
            put((None, error))
        finally:
            close = getattr(items, "close", None)
            if close:  # a generator that is itself prefetched stops its own thread now, on this one
                close()

    worker = threading.Thread(target=produce, name="prefetch", daemon=True)
    worker.start()
    try:
        while True:
            item, error = produced.get()
            if error is not None:
                raise error
            if item is end:
                return
            yield item
    finally:
        stop.set()
        worker.join()


def _arrow_frame(table: Any, text: list[str], first: int) -> pd.DataFrame:
    """An Arrow table as the DataFrame pandas' reader would give: NaN (not None) for missing text, a running index."""
    frame = table.to_pandas()
    for column in text:
        if table.column(column).null_count:
            frame[column] = frame[column].where(frame[column].notna(), np.nan)
    frame.index = pd.RangeIndex(first, first + len(frame))
    return frame


PARQUET_PRE_BUFFER_BYTES = 512 << 20  # row groups up to this size (uncompressed) are read in large requests


def _parquet_pieces(path: Path, columns: list[str], text: list[str], chunk_rows: int) -> Iterator[Any]:
    """Parquet record batches as Arrow tables; ``text`` columns cast to strings by Arrow, the same in every batch
    (pandas would make an integer column float in a batch with nulls, so 5 would read "5.0" there)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    # pre_buffer: a row group's column chunks are read in a few large requests rather than page by page, which about
    # halves the time to decode; it holds the row group's bytes meanwhile, so only for row groups of moderate size
    metadata = pq.read_metadata(path)
    largest = max((metadata.row_group(index).total_byte_size for index in range(metadata.num_row_groups)), default=0)
    parquet = pq.ParquetFile(
        path, metadata=metadata, pre_buffer=largest <= PARQUET_PRE_BUFFER_BYTES
    )  # footer read once
    for batch in parquet.iter_batches(batch_size=chunk_rows, columns=columns):
        table = pa.Table.from_batches([batch])
        for column in text:
            index = table.schema.get_field_index(column)
            table = table.set_column(index, column, table.column(index).cast(pa.string()))
        yield table


def _arrow_chunk(table: Any, text: list[str], numeric: Sequence[str], first: int) -> Chunk:
    """An Arrow table as a chunk: its numeric feature columns, when all are Arrow numbers, cast to float32 column by
    column as pandas would (integers directly, missing as NaN), the other columns as a DataFrame."""
    import pyarrow as pa

    types = [table.schema.field(column).type for column in numeric]
    if not types or not all(pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_null(kind)
                            for kind in types):  # fmt: skip
        return Chunk(_arrow_frame(table, text, first))
    matrix = np.empty((table.num_rows, len(numeric)), dtype=np.float32, order="F")
    with np.errstate(over="ignore", invalid="ignore"):  # beyond float32's range becomes inf, as in pandas
        for index, column in enumerate(numeric):
            if pa.types.is_null(types[index]):  # every value missing, as pandas' all-NaN float column
                matrix[:, index] = np.nan
                continue
            start = 0
            for piece in table.column(column).chunks:
                matrix[start : start + len(piece), index] = piece.to_numpy(zero_copy_only=False)
                start += len(piece)
    wanted = set(numeric)
    rest = table.select([name for name in table.column_names if name not in wanted])
    return Chunk(_arrow_frame(rest, text, first), matrix, table)


def _show(value: Any) -> str:
    """A cell value for a message: numpy scalars shown as plain Python values."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _to_float64(column: pd.Series, where: RowLocator, what: str, hint: Callable[[], str] | None = None) -> np.ndarray:
    """A column as float64 (NaN for missing); text that is not a number is an error naming file, row and column."""
    if pd.api.types.is_numeric_dtype(column.dtype) or pd.api.types.is_bool_dtype(column.dtype):
        return column.to_numpy(dtype=np.float64, na_value=np.nan)
    numbers = pd.to_numeric(column, errors="coerce")
    bad = numbers.isna().to_numpy() & column.notna().to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        fix = (
            hint()
            if hint
            else f"declare text columns as categorical (feature-hashed) with --param CategoricalColumns={column.name} "
            "(added to the columns already declared; preprocess.py: --categorical-columns)"
        )
        raise PreprocessError(f"{where.at(row)}: {what} has non-numeric value {_show(column.iloc[row])}; {fix}")
    return numbers.to_numpy(dtype=np.float64, na_value=np.nan)


@dataclass
class Converted:
    """One chunk as Linear Learner input rows and the split of each row."""

    rows: np.ndarray  # C-ordered float32 (n, feature_dim + 1): the features, then the label
    split: np.ndarray  # uint8 split code per row
    dropped: int
    category_hashes: dict[str, np.ndarray] = field(default_factory=dict)  # column -> hashes of its distinct values


def convert_chunk(
    chunk: Chunk,
    where: RowLocator,
    schema: Schema,
    labels: LabelSpec,
    missing_policy: str,
    seed: int,
    fractions: tuple[float, float, float],
) -> Converted:
    """Features, labels and the split of every row of one chunk, applying the missing-value policy."""
    frame, n = chunk.frame, len(chunk)
    numeric = chunk.numeric if chunk.numeric is not None else _numeric_block(frame, schema.numeric_columns, where)
    absent_numeric = ~np.isfinite(numeric)
    category_hashes: dict[str, np.ndarray] = {}
    if absent_numeric.any():
        numeric = numeric.copy(order="F")  # to_numpy may return pandas' own read-only block; keep the chunk's
        numeric[absent_numeric] = 0.0
    if schema.categorical_columns:
        features = np.zeros((n, schema.feature_dim), dtype=np.float32, order="F")
        absent = np.zeros((n, len(schema.feature_columns)), dtype=bool)
        offsets = schema.feature_offsets
        numeric_positions = [schema.feature_columns.index(column) for column in schema.numeric_columns]
        features[:, [offsets[column] for column in schema.numeric_columns]] = numeric
        absent[:, numeric_positions] = absent_numeric
        for column in schema.categorical_columns:
            absent[:, schema.feature_columns.index(column)], category_hashes[column] = _hash_categorical(
                frame[column], column, schema.hash_buckets, features, offsets[column]
            )
    else:
        features, absent = numeric, absent_numeric  # numeric columns are the feature columns, in order
    missing_feature = absent.any(axis=1)

    label_values, missing_label = encode_labels(frame[schema.label_column], labels, where)
    bad = missing_feature | missing_label
    if bad.any():
        if missing_policy == "error" or (missing_policy == "zero" and missing_label.any()):
            row = int(np.flatnonzero(missing_label if missing_policy == "zero" else bad)[0])
            if missing_label[row]:
                what = f"label column {schema.label_column!r} value {_show(chunk.value(schema.label_column, row))}"
            else:
                name = schema.feature_columns[int(absent[row].argmax())]
                what = f"column {name!r} value {_show(chunk.value(name, row))}"
            hint = "=drop" if missing_policy == "zero" else "=zero (features) or =drop (rows)"
            raise PreprocessError(
                f"{where.at(row)}: {what} is missing or not a finite float32 (use --param MissingValues{hint}; "
                "preprocess.py: --missing)"
            )
    keep = ~bad if missing_policy == "drop" else np.ones(n, dtype=bool)
    if not keep.all():
        features, label_values = features[keep], label_values[keep]
    if schema.id_column:
        ids = frame[schema.id_column][keep]
        if ids.isna().any():
            row = int(np.flatnonzero(frame[schema.id_column].isna().to_numpy() & keep)[0])
            raise PreprocessError(f"{where.at(row)}: id column {schema.id_column!r} is empty")
        hashes = _hash_texts(ids, seed)
    else:
        hashes = row_hashes(features, label_values, seed)
    rows = np.empty((len(label_values), schema.feature_dim + 1), dtype=np.float32)
    rows[:, :-1] = features
    rows[:, -1] = label_values
    return Converted(rows, assign_splits(hashes, fractions), int(n - keep.sum()), category_hashes)


def _numeric_block(frame: pd.DataFrame, columns: Sequence[str], where: RowLocator) -> np.ndarray:
    """The numeric feature columns as a float32 matrix; non-finite values (and float32 overflow) kept as such."""
    with np.errstate(over="ignore", invalid="ignore"):
        block = frame[list(columns)]
        if all(pd.api.types.is_numeric_dtype(dtype) for dtype in block.dtypes):
            values = block.to_numpy(dtype=np.float32, na_value=np.nan)
        else:
            values = np.empty((len(frame), len(columns)), dtype=np.float32, order="F")
            for index, column in enumerate(columns):
                values[:, index] = _to_float64(frame[column], where, f"column {column!r}")
        return values  # column-major as pandas stores it: row_hashes reads it column by column


def _hash_categorical(
    column: pd.Series, name: str, buckets: int, features: np.ndarray, offset: int
) -> tuple[np.ndarray, np.ndarray]:
    """Set one indicator per row in ``features[:, offset:offset+buckets]``; return the mask of missing values and
    the 64-bit hashes of the distinct values (for the summary's distinct-value and bucket counts)."""
    codes, uniques = pd.factorize(column.astype("object"))  # missing -> code -1
    hashes = np.array([stable_hash64(f"{name}={str(value).strip()}") for value in uniques], dtype=np.uint64)
    bucket_of_unique = (hashes % np.uint64(buckets)).astype(np.int64)
    present = codes >= 0
    rows = np.flatnonzero(present)
    features[rows, offset + bucket_of_unique[codes[present]]] = 1.0
    return ~present, hashes


def _hash_texts(values: pd.Series, seed: int) -> np.ndarray:
    key = seed.to_bytes(8, "little", signed=True)
    codes, uniques = pd.factorize(values.astype(str).str.strip())
    hashed = np.array([stable_hash64(str(value), key) for value in uniques], dtype=np.uint64)
    return _mix(hashed[codes])


def _mix(h: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, element-wise on uint64 (wrapping arithmetic)."""
    h = h ^ (h >> np.uint64(30))
    h = h * _M1
    h = h ^ (h >> np.uint64(27))
    h = h * _M2
    return h ^ (h >> np.uint64(31))


def row_hashes(features: np.ndarray, labels: np.ndarray, seed: int) -> np.ndarray:
    """A seeded 64-bit hash of each row's float32 features and label, independent of host, file and position."""
    h = _mix(np.full(len(labels), np.uint64(seed & 0xFFFFFFFFFFFFFFFF), dtype=np.uint64))
    for column in (*features.T, labels):
        bits = (column + np.float32(0.0)).view(np.uint32)  # + 0.0 turns -0.0 into 0.0, so equal numbers hash equally
        h = _mix(h ^ bits)
    return h


def assign_splits(hashes: np.ndarray, fractions: tuple[float, float, float]) -> np.ndarray:
    """Split code per row from the top 53 bits of its hash: a uniform number compared with the fractions."""
    uniform = (hashes >> np.uint64(11)).astype(np.float64) * 2.0**-53
    train, validation, _ = fractions
    return np.where(uniform < train, 0, np.where(uniform < train + validation, 1, 2)).astype(np.uint8)


# ---------------------------------------------------------------------------------------------------------------------
# Spilling rows to shards and writing shuffled RecordIO files


@dataclass
class SplitStats:
    """What one host wrote for one split: rows and label counts or label moments."""

    rows: int = 0
    label_counts: dict[int, int] = field(default_factory=dict)
    label_sum: float = 0.0
    label_sum_sq: float = 0.0
    label_min: float = math.inf
    label_max: float = -math.inf
    files: list[str] = field(default_factory=list)

    def add(self, labels: np.ndarray, classification: bool) -> None:
        self.rows += len(labels)
        if not len(labels):
            return
        if classification:
            values, counts = np.unique(labels.astype(np.int64), return_counts=True)
            for label, count in np.column_stack([values, counts]).tolist():
                self.label_counts[label] = self.label_counts.get(label, 0) + count
        as_double = labels.astype(np.float64)
        self.label_sum += float(as_double.sum())
        self.label_sum_sq += float((as_double * as_double).sum())
        self.label_min = min(self.label_min, float(as_double.min()))
        self.label_max = max(self.label_max, float(as_double.max()))


class CategoryStats:
    """Distinct values of one categorical column (exact up to DISTINCT_LIMIT) and the hash buckets they use."""

    def __init__(self, buckets: int):
        self.buckets = buckets
        self.values: set[int] = set()
        self.capped = False
        self.used = np.zeros(buckets, dtype=bool)

    def add(self, hashes: np.ndarray) -> None:
        self.used[(hashes % np.uint64(self.buckets)).astype(np.int64)] = True
        if not self.capped:
            self.values.update(hashes.tolist())
            if len(self.values) > DISTINCT_LIMIT:
                self.capped = True
                self.values = set(list(self.values)[:DISTINCT_LIMIT])

    def summary(self) -> dict[str, Any]:
        distinct, used = len(self.values), int(self.used.sum())
        return {
            "distinct_values": distinct,
            "distinct_values_capped": self.capped,
            "buckets_used": used,
            # values that share a bucket with another value of the column: their indicators are indistinguishable
            "values_in_shared_buckets": _values_in_shared_buckets(self.values, self.buckets),
            "used_buckets_bitmap": np.packbits(self.used).tobytes().hex(),
        }


def _values_in_shared_buckets(values: set[int], buckets: int) -> int:
    if not values:
        return 0
    _, counts = np.unique(np.array(sorted(values), dtype=np.uint64) % np.uint64(buckets), return_counts=True)
    return int(counts[counts > 1].sum())


class ShardBuffer:
    """This host's shards: each split's rows dealt in a seeded random order, round-robin, to its shards.

    Rows stay in memory while they fit in ``memory_bytes``; beyond that everything goes to raw float32 spill files in
    the work folder, so memory stays bounded whatever the size of the data set.
    """

    def __init__(self, work_dir: Path, width: int, shard_counts: dict[str, int], seed: int, host: Host, memory: int):
        self.work_dir = work_dir
        self.width = width  # features + label
        self.memory_bytes = memory
        self.shard_counts = shard_counts
        self.rngs = {split: np.random.default_rng([seed, host.index, code]) for split, code in _SPLIT_CODES.items()}
        self.dealt = dict.fromkeys(SPLITS, 0)
        self.pending: dict[tuple[str, int], list[np.ndarray]] = {
            (split, shard): [] for split, count in shard_counts.items() for shard in range(count)
        }
        self.pending_bytes = 0
        self.spill_files: dict[tuple[str, int], BinaryIO] | None = None  # set once rows no longer fit in memory

    def spill_path(self, split: str, shard: int) -> Path:
        return self.work_dir / f"spill-{split}-{shard:05d}.f32"

    def add(self, split: str, rows: np.ndarray, chosen: np.ndarray) -> None:
        """Deal ``rows[chosen]`` (features then label) in a random order to the split's shards."""
        shuffled = chosen[self.rngs[split].permutation(len(chosen))]
        count = self.shard_counts[split]
        for shard in range(count):  # round-robin continued from the previous chunk: shards differ by one row at most
            piece = rows[shuffled[(shard - self.dealt[split]) % count :: count]]
            if self.spill_files is not None:
                self.spill_files[split, shard].write(piece.data)
            else:
                self.pending[split, shard].append(piece)
                self.pending_bytes += piece.nbytes
        self.dealt[split] += len(chosen)
        if self.spill_files is None and self.pending_bytes > self.memory_bytes:
            self.spill_files = {key: open(self.spill_path(*key), "wb") for key in self.pending}  # noqa: SIM115
            for key, pieces in self.pending.items():
                for piece in pieces:
                    self.spill_files[key].write(piece.data)
                pieces.clear()
            self.pending_bytes = 0

    def close(self) -> None:
        for handle in (self.spill_files or {}).values():
            handle.close()

    @property
    def in_memory(self) -> bool:
        return self.spill_files is None

    def shuffled_in_memory(
        self, split: str, shard: int, rng: np.random.Generator
    ) -> tuple[Callable[[], np.ndarray], np.ndarray]:
        """The shard's rows (gathered when called, so shards are built one at a time) and their shuffled order."""
        pieces = self.pending.pop((split, shard))
        order = rng.permutation(sum(len(piece) for piece in pieces))

        def rows() -> np.ndarray:
            gathered = np.concatenate(pieces) if pieces else np.empty((0, self.width), dtype=np.float32)
            pieces.clear()
            return gathered

        return rows, order

    def shuffled_spilled(self, split: str, shard: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
        """The spilled shard's rows in a uniformly random order, in blocks of at most about ``memory_bytes``.

        Rows are dealt to random buckets on disk first; shuffling each bucket and concatenating the buckets is a
        uniformly random permutation, like shuffling in memory.
        """
        spill = self.spill_path(split, shard)
        buckets = max(1, math.ceil(spill.stat().st_size / self.memory_bytes))
        paths = [spill] if buckets == 1 else self._deal_to_buckets(spill, buckets, rng)
        for path in paths:
            rows = np.fromfile(path, dtype=np.float32).reshape(-1, self.width)
            path.unlink()
            yield rows[rng.permutation(len(rows))]

    def _deal_to_buckets(self, spill: Path, buckets: int, rng: np.random.Generator) -> list[Path]:
        """Move a spill file's rows to ``buckets`` files, each row to a random one."""
        paths = [self.work_dir / f"bucket-{index:05d}.f32" for index in range(buckets)]
        handles = [open(path, "wb") for path in paths]  # noqa: SIM115
        row_bytes = self.width * 4
        try:
            with open(spill, "rb") as source:
                while block := source.read(max(1, self.memory_bytes // row_bytes) * row_bytes):
                    rows = np.frombuffer(block, dtype=np.float32).reshape(-1, self.width)
                    bucket_of_row = rng.integers(0, buckets, size=len(rows))
                    for index, handle in enumerate(handles):
                        handle.write(rows[bucket_of_row == index].data)
        finally:
            for handle in handles:
                handle.close()
        spill.unlink()
        return paths


# ---------------------------------------------------------------------------------------------------------------------
# Summaries


def build_summary(
    args: argparse.Namespace,
    host: Host,
    schema: Schema,
    labels: LabelSpec,
    stats: dict[str, SplitStats],
    input_files: list[str],
    rows_read: int,
    rows_dropped: int,
    fractions: tuple[float, float, float],
) -> dict[str, Any]:
    """This host's summary part."""
    classification = labels.predictor_type != "regressor"
    return {
        "format": SUMMARY_FORMAT,
        "host": host.name,
        "hosts": list(host.hosts),
        "predictor_type": labels.predictor_type,
        "label_column": schema.label_column,
        "id_column": schema.id_column,
        "feature_dim": schema.feature_dim,
        "feature_names": schema.feature_names,
        "categorical": {
            "columns": list(schema.categorical_columns),
            "hash_buckets": schema.hash_buckets,
            "hash": "blake2b(digest_size=8, little-endian) of 'column=value' mod hash_buckets",
        },
        "label_values": list(labels.values) if labels.values else None,
        "label_mapping": _label_mapping(labels, stats) if classification else None,
        "num_classes": _num_classes(labels, stats) if labels.predictor_type == "multiclass_classifier" else None,
        "missing_policy": args.missing,
        "seed": args.seed,
        "data_version": args.data_version or None,
        "fractions": {split: fractions[code] for split, code in _SPLIT_CODES.items()},
        "rows": {split: stats[split].rows for split in SPLITS},
        "rows_read": rows_read,
        "rows_dropped": rows_dropped,
        "label_counts": (
            {split: {str(k): v for k, v in sorted(stats[split].label_counts.items())} for split in SPLITS}
            if classification
            else None
        ),
        "label_stats": {split: _label_stats(stats[split]) for split in SPLITS},
        "files": {split: stats[split].files for split in SPLITS},
        "input_files": input_files,
    }


def _label_stats(stats: SplitStats) -> dict[str, float | int | None]:
    return {
        "count": stats.rows,
        "sum": stats.label_sum,
        "sum_sq": stats.label_sum_sq,
        "min": stats.label_min if stats.rows else None,
        "max": stats.label_max if stats.rows else None,
    }


def _num_classes(labels: LabelSpec, stats: dict[str, SplitStats]) -> int:
    if labels.values:
        return len(labels.values)
    if labels.num_classes:
        return labels.num_classes
    seen = [label for split in SPLITS for label in stats[split].label_counts]
    return max(seen) + 1 if seen else 0


def _label_mapping(labels: LabelSpec, stats: dict[str, SplitStats]) -> dict[str, int]:
    """Original label text -> index; identity when labels are already numeric."""
    if labels.values:
        return labels.mapping() or {}
    count = 2 if labels.predictor_type == "binary_classifier" else _num_classes(labels, stats)
    return {str(index): index for index in range(count)}


_MUST_AGREE = (
    "format",
    "hosts",
    "predictor_type",
    "label_column",
    "id_column",
    "feature_dim",
    "feature_names",
    "categorical",
    "label_values",
    "missing_policy",
    "seed",
    "data_version",
    "fractions",
)


def merge_summaries(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One summary from every host's part.

    Rule: the parts must come from exactly the hosts they name, once each, and agree on everything that defines the
    data layout (feature_dim, feature names, categorical hashing, predictor type, label values, seed, fractions,
    missing policy); no input file may appear in two parts (that would duplicate rows, e.g. FullyReplicated input);
    a split with a positive fraction must have rows somewhere.
    Rows, label counts and label moments are summed, min/max combined, file lists concatenated in sorted order;
    multiclass num_classes without declared label values is the largest over the parts.
    """
    if not parts:
        raise ValueError("no summary parts to merge")
    first = parts[0]
    for part in parts[1:]:
        for key in _MUST_AGREE:
            if part.get(key) != first.get(key):
                raise ValueError(
                    f"summary parts disagree on {key}: {first.get('host')} has {first.get(key)!r}, "
                    f"{part.get('host')} has {part.get(key)!r}"
                )
    hosts = [part["host"] for part in parts]
    if sorted(hosts) != sorted(first["hosts"]):
        missing = sorted(set(first["hosts"]) - set(hosts))
        extra = sorted({h for h in hosts if hosts.count(h) > 1} | (set(hosts) - set(first["hosts"])))
        raise ValueError(f"summary parts cover hosts {sorted(hosts)}; missing {missing}, duplicated or unknown {extra}")
    seen_by: dict[str, str] = {}
    for part in parts:
        for name in part["input_files"]:
            if name in seen_by:
                raise ValueError(
                    f"input file {name} was processed by both {seen_by[name]} and {part['host']}: "
                    "each input object must reach one host (use ShardedByS3Key)"
                )
            seen_by[name] = part["host"]

    merged = {key: first[key] for key in _MUST_AGREE}
    merged["parts"] = sorted(hosts)
    merged["rows"] = {split: sum(part["rows"][split] for part in parts) for split in SPLITS}
    empty = [split for split in SPLITS if first["fractions"][split] > 0 and merged["rows"][split] == 0]
    if empty:
        raise ValueError(f"the {' and '.join(empty)} split(s) are empty over all hosts despite a positive fraction")
    merged["rows_read"] = sum(part["rows_read"] for part in parts)
    merged["rows_dropped"] = sum(part["rows_dropped"] for part in parts)
    merged["files"] = {split: sorted(name for part in parts for name in part["files"][split]) for split in SPLITS}
    merged["input_files"] = sorted(seen_by)
    merged["label_stats"] = {
        split: _merge_label_stats([part["label_stats"][split] for part in parts]) for split in SPLITS
    }
    if first["label_counts"] is None:
        merged["label_counts"] = None
    else:
        merged["label_counts"] = {}
        for split in SPLITS:
            counts: dict[int, int] = {}
            for part in parts:
                for label, count in part["label_counts"][split].items():
                    counts[int(label)] = counts.get(int(label), 0) + count
            merged["label_counts"][split] = {str(label): counts[label] for label in sorted(counts)}
    merged["num_classes"] = None
    if first["predictor_type"] == "multiclass_classifier":
        merged["num_classes"] = max(part["num_classes"] for part in parts)
    merged["label_mapping"] = first["label_mapping"]
    if first["predictor_type"] == "multiclass_classifier" and not first["label_values"]:
        merged["label_mapping"] = {str(index): index for index in range(merged["num_classes"])}
    merged["categorical_stats"] = _merge_category_stats([part.get("categorical_stats") or {} for part in parts])
    return merged


def _merge_category_stats(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Per categorical column: buckets used over all hosts (union of the bitmaps); distinct values and values in
    shared buckets as the largest count of one host (a lower bound: hosts do not share their value sets)."""
    merged: dict[str, Any] = {}
    for column in sorted({name for part in parts for name in part}):
        seen = [part[column] for part in parts if column in part]
        bitmaps = [np.frombuffer(bytes.fromhex(item["used_buckets_bitmap"]), np.uint8) for item in seen]
        bitmap = np.bitwise_or.reduce(bitmaps)
        merged[column] = {
            "distinct_values": max(item["distinct_values"] for item in seen),
            "distinct_values_capped": any(item["distinct_values_capped"] for item in seen),
            "buckets_used": int(np.unpackbits(bitmap).sum()),
            "values_in_shared_buckets": max(item["values_in_shared_buckets"] for item in seen),
            "used_buckets_bitmap": bitmap.tobytes().hex(),
        }
    return merged


def _merge_label_stats(parts: list[dict[str, Any]]) -> dict[str, Any]:
    count = sum(part["count"] for part in parts)
    total = sum(part["sum"] for part in parts)
    total_sq = sum(part["sum_sq"] for part in parts)
    mins = [part["min"] for part in parts if part["min"] is not None]
    maxes = [part["max"] for part in parts if part["max"] is not None]
    mean = total / count if count else None
    variance = max(total_sq / count - mean * mean, 0.0) if count else None
    return {
        "count": count,
        "sum": total,
        "sum_sq": total_sq,
        "min": min(mins) if mins else None,
        "max": max(maxes) if maxes else None,
        "mean": mean,
        "std": math.sqrt(variance) if variance is not None else None,
    }


def load_summary(summary_dir: Path) -> dict[str, Any]:
    """The merged summary of a Preprocess output: ``summary.json`` if present, else the merge of every part."""
    merged = summary_dir / "summary.json"
    if merged.exists():
        return json.loads(merged.read_text())
    parts = sorted(summary_dir.glob("summary-*.json"))
    if not parts:
        raise FileNotFoundError(f"no summary.json or summary-<host>.json under {summary_dir}")
    return merge_summaries([json.loads(path.read_text()) for path in parts])


# ---------------------------------------------------------------------------------------------------------------------
# The job


def parse_feature_dim(text: str) -> int | None:
    if text.strip().lower() == "auto":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'auto', got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"feature dim must be positive, got {value}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The job's arguments; paths default to SageMaker's container layout."""
    parser = argparse.ArgumentParser(prog="preprocess.py", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--input-dir",
        type=Path,
        default=Path("/opt/ml/processing/input/data"),
        help="folder of CSV/Parquet input files (default: %(default)s)",
    )
    parser.add_argument(
        "--input-source",
        metavar="URI",
        help="where --input-dir's files came from, e.g. the input's S3 prefix: messages name files by it "
        "(s3://bucket/in/d.csv row 7), not by their path here",
    )
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=Path("/opt/ml/processing/output"),
        help="root of the train/, validation/, test/ and summary/ sub-folders (default: %(default)s)",
    )
    parser.add_argument(
        "--resource-config",
        type=Path,
        default=Path(RESOURCE_CONFIG),
        help="SageMaker's host list; absent means a single host algo-1 (default: %(default)s)",
    )
    parser.add_argument(
        "--exit-message-file",
        type=Path,
        default=Path(EXIT_MESSAGE_FILE),
        help="on failure the reason is also written here, if its folder exists: SageMaker shows the file as the "
        "job's ExitMessage (default: %(default)s)",
    )
    parser.add_argument(
        "--schema",
        type=Path,
        help="the schema the client decided: a JSON file or a folder holding one (arguments given win over it)",
    )
    parser.add_argument("--label-column", required=True, help="name of the label column")
    parser.add_argument("--predictor-type", required=True, choices=PREDICTOR_TYPES, help="Linear Learner's")
    parser.add_argument("--feature-columns", help="comma-separated feature columns (default: all but label and id)")
    parser.add_argument("--id-column", help="split by a hash of this column instead of the row content; not a feature")
    parser.add_argument("--categorical-columns", help="comma-separated feature columns to feature-hash")
    parser.add_argument(
        "--hash-buckets", type=_positive_int, default=16, help="features per categorical column (default: %(default)s)"
    )
    parser.add_argument("--label-values", help="comma-separated label values mapped to 0, 1, ... in this order")
    parser.add_argument("--num-classes", type=int, help="multiclass: labels must be below this")
    parser.add_argument(
        "--data-version",
        default="",
        help="the pipeline's DataVersion: recorded in the summary; on SageMaker it makes new data a new cache key",
    )
    parser.add_argument(
        "--feature-dim",
        type=parse_feature_dim,
        default="auto",
        metavar="N|auto",
        help="fail unless the data has exactly N features (default: auto, any)",
    )
    parser.add_argument(
        "--train-shards",
        type=_positive_int,
        default=1,
        help="minimum number of train files overall; each host writes ceil(N / hosts) (default: %(default)s)",
    )
    parser.add_argument("--validation-fraction", type=float, default=0.15, help="(default: %(default)s)")
    parser.add_argument("--test-fraction", type=float, default=0.15, help="(default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the split hash and the shuffles (default: 0)")
    parser.add_argument(
        "--missing",
        choices=MISSING_POLICIES,
        default="error",
        help="empty/NaN/inf values: fail, impute zero (features only), or drop the row (default: %(default)s)",
    )
    parser.add_argument(
        "--chunk-rows", type=_positive_int, default=100_000, help="rows read at a time (default: %(default)s)"
    )
    parser.add_argument(
        "--shuffle-memory-mb",
        type=float,
        default=512.0,
        help="rows kept in memory before spilling to disk, and the largest block shuffled at once (default: 512)",
    )
    return parser


def _fractions(args: argparse.Namespace) -> tuple[float, float, float]:
    validation, test = args.validation_fraction, args.test_fraction
    if not (0 <= validation < 1 and 0 <= test < 1 and validation + test < 1):
        raise PreprocessError(
            f"--validation-fraction {validation} and --test-fraction {test} must be in [0, 1) and leave a train share"
        )
    return (1.0 - validation - test, validation, test)


class OutputTransaction:
    """Builds files in a private work folder and renames them into place; on failure removes all of them."""

    def __init__(self, output_dir: Path, host: Host):
        self.output_dir = output_dir
        self.host = host
        self.work_dir = output_dir / f".preprocess-work-{host.name}"
        self.committed: list[Path] = []

    def begin(self) -> None:
        for sub in (*SPLITS, "summary"):
            folder = self.output_dir / sub
            folder.mkdir(parents=True, exist_ok=True)
            clash = sorted(p.name for p in folder.glob(f"*-{self.host.name}[-.]*"))
            if sub == "summary" and self.host.count == 1 and (folder / "summary.json").exists():
                clash.append("summary.json")
            if clash:
                raise PreprocessError(
                    f"{folder} already holds output of host {self.host.name}: {clash[:3]}; use an empty output dir"
                )
        shutil.rmtree(self.work_dir, ignore_errors=True)
        self.work_dir.mkdir(parents=True)

    def commit(self, built: Path, sub: str) -> str:
        """Move one complete file into ``<output>/<sub>/``; returns its path relative to the output dir."""
        target = self.output_dir / sub / built.name
        os.replace(built, target)
        self.committed.append(target)
        return f"{sub}/{built.name}"

    def cleanup(self, failed: bool) -> None:
        shutil.rmtree(self.work_dir, ignore_errors=True)
        if failed:
            for path in self.committed:
                path.unlink(missing_ok=True)


def preprocess(args: argparse.Namespace) -> dict[str, Any]:
    """Run the job for this host; returns its summary part. Raises PreprocessError on bad input."""
    started = time.monotonic()
    host = read_resource_config(args.resource_config)
    fractions = _fractions(args)
    decided = load_decided(args.schema)
    if decided.get("predictor_type") not in (None, args.predictor_type):
        raise PreprocessError(
            f"the schema was decided for {decided['predictor_type']} but --predictor-type is {args.predictor_type}; "
            "infer the schema again (drop --param SchemaUrl)"
        )
    labels = make_label_spec(args, decided)
    names = InputNames(args.input_dir, args.input_source)
    files = list_input_files(args.input_dir, host, names(args.input_dir))
    schema = resolve_schema(args, decided, names(files[0]), read_header(files[0], names(files[0])))
    print(
        f"[{host.name}] feature order from {schema.layout_source}: {len(schema.feature_columns)} column(s), "
        f"categorical {list(schema.categorical_columns)}, label values {list(labels.values or []) or 'numeric'}",
        flush=True,
    )
    if args.feature_dim is not None and args.feature_dim != schema.feature_dim:
        raise PreprocessError(
            f"the data has {schema.feature_dim} features ({len(schema.numeric_columns)} numeric + "
            f"{len(schema.categorical_columns)} categorical x {schema.hash_buckets} buckets) but --feature-dim is "
            f"{args.feature_dim}; first file {names(files[0])}"
        )
    train_shards = math.ceil(args.train_shards / host.count)
    shard_counts = {"train": train_shards, "validation": 1, "test": 1}
    transaction = OutputTransaction(args.output_dir, host)
    transaction.begin()
    failed = True
    try:
        summary = _convert_all(args, host, schema, labels, files, fractions, shard_counts, transaction, names)
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
    args: argparse.Namespace,
    host: Host,
    schema: Schema,
    labels: LabelSpec,
    files: list[Path],
    fractions: tuple[float, float, float],
    shard_counts: dict[str, int],
    transaction: OutputTransaction,
    names: InputNames,
) -> dict[str, Any]:
    classification = labels.predictor_type != "regressor"
    stats = {split: SplitStats() for split in SPLITS}
    categories = {column: CategoryStats(schema.hash_buckets) for column in schema.categorical_columns}
    rows_read = rows_dropped = 0
    memory_bytes = max(1, int(args.shuffle_memory_mb * 1024 * 1024))
    shards = ShardBuffer(transaction.work_dir, schema.feature_dim + 1, shard_counts, args.seed, host, memory_bytes)
    started = time.monotonic()
    try:
        for number, path in enumerate(files, start=1):
            file_rows = 0
            converting = (
                convert_chunk(chunk, where, schema, labels, args.missing, args.seed, fractions)
                for where, chunk in iter_chunks(path, schema, args.chunk_rows, names(path))
            )
            for converted in _prefetched(converting):  # converted on a thread of its own while this one deals
                chunk_rows = len(converted.rows) + converted.dropped
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
                for split, code in _SPLIT_CODES.items():
                    chosen = np.flatnonzero(converted.split == code)
                    stats[split].add(converted.rows[chosen, -1], classification)
                    shards.add(split, converted.rows, chosen)
            print(f"[{host.name}] read file {number}/{len(files)} {names(path)} ({file_rows:,} rows)", flush=True)
    finally:
        shards.close()

    kept = sum(stats[split].rows for split in SPLITS)
    where = f"{len(files)} input file(s) of host {host.name}"
    if rows_read == 0:
        raise PreprocessError(f"no data rows in {where} (only headers)")
    if kept == 0:
        raise PreprocessError(f"all {rows_read} rows of {where} were dropped by --missing drop")
    if stats["train"].rows < shard_counts["train"]:
        raise PreprocessError(
            f"the train split of {where} has {stats['train'].rows} rows, fewer than the {shard_counts['train']} "
            f"train shards this host must write (--train-shards {args.train_shards} over {host.count} host(s))"
        )
    if host.count == 1:
        for split in ("validation", "test"):
            fraction = fractions[_SPLIT_CODES[split]]
            if fraction > 0 and stats[split].rows == 0:
                raise PreprocessError(f"the {split} split is empty ({kept} rows, --{split}-fraction {fraction})")

    built = _write_shards(
        shards, [split for split in SPLITS if stats[split].rows], shard_counts, args.seed, host, transaction.work_dir
    )
    input_names = [path.relative_to(args.input_dir).as_posix() for path in files]
    for target, split in built:
        stats[split].files.append(transaction.commit(target, split))
    summary = build_summary(args, host, schema, labels, stats, input_names, rows_read, rows_dropped, fractions)
    summary["categorical_stats"] = {column: categories[column].summary() for column in schema.categorical_columns}
    for column, seen in summary["categorical_stats"].items():
        count = seen["values_in_shared_buckets"]
        shared = f", {count} of them sharing a bucket" if count else ""
        print(
            f"[{host.name}] categorical {column!r}: {seen['distinct_values']}"
            f"{'+' if seen['distinct_values_capped'] else ''} distinct value(s) in {seen['buckets_used']} of "
            f"{schema.hash_buckets} buckets{shared}",
            flush=True,
        )
    _write_json(transaction, f"summary-{host.name}.json", summary)
    if host.count == 1:
        _write_json(transaction, "summary.json", merge_summaries([summary]))
    return summary


WRITE_ROWS = 16_384  # rows gathered and encoded at a time while writing a shard (a few MB, kept in cache)


def _write_shards(
    shards: ShardBuffer, splits: list[str], shard_counts: dict[str, int], seed: int, host: Host, work_dir: Path
) -> list[tuple[Path, str]]:
    """Shuffle each shard of the splits that have rows and write it as RecordIO-protobuf; returns (file, split) in
    order. The shuffles are drawn in a fixed order; in memory, shards are then gathered and written by a few threads
    (numpy's copies and file writes release the GIL), spilled ones one after another."""
    built, writes = [], []
    for split in splits:
        rng = np.random.default_rng([seed, host.index, _SPLIT_CODES[split], 1])
        for shard in range(shard_counts[split]):
            target = work_dir / f"{split}-{host.name}-{shard:05d}{SHARD_SUFFIX}"
            built.append((target, split))
            if shards.in_memory:
                writes.append((target, *shards.shuffled_in_memory(split, shard, rng)))
                continue
            with open(target, "wb") as out:
                for block in shards.shuffled_spilled(split, shard, rng):
                    _write_rows(out, block)
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1), thread_name_prefix="write") as pool:
        for done in [pool.submit(_write_shard, *write) for write in writes]:
            done.result()
    return built


def _write_shard(target: Path, rows: Callable[[], np.ndarray], order: np.ndarray) -> None:
    with open(target, "wb") as out:
        _write_rows(out, rows(), order)


def _write_rows(out: BinaryIO, rows: np.ndarray, order: np.ndarray | None = None) -> None:
    """``rows[order]`` (or ``rows``; features, then the label) as RecordIO-protobuf records, a batch at a time."""
    for start in range(0, len(rows), WRITE_ROWS):
        block = rows[start : start + WRITE_ROWS] if order is None else rows[order[start : start + WRITE_ROWS]]
        write_dense(out, block[:, :-1], block[:, -1])


def _write_json(transaction: OutputTransaction, name: str, content: dict[str, Any]) -> None:
    built = transaction.work_dir / name
    built.write_text(json.dumps(content, indent=2, sort_keys=True) + "\n")
    transaction.commit(built, "summary")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        preprocess(args)
    except InputError as error:
        message = f"preprocess: error: {' '.join(str(error).split())}"
        print(message, file=sys.stderr)
        write_exit_message(args.exit_message_file, message, args.resource_config)
        return 1
    except Exception as error:  # a defect, not bad input: the traceback goes to the log, its last line to ExitMessage
        message = (
            f"preprocess: unexpected {type(error).__name__}: {' '.join(str(error).split())} (traceback in the log)"
        )
        write_exit_message(args.exit_message_file, message, args.resource_config)
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
