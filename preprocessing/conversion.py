"""Chunks of a file, read through the container library's table reader, converted to Linear Learner rows: float32
features (categorical columns feature-hashed into indicator blocks) then the label, with each row's split and the
missing-value policy applied."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from containerlib.encoding import BadNumber, Encoded, encode_features, impute, numeric_block
from containerlib.names import SPLIT_CODES
from containerlib.prefetch import InFlight
from containerlib.recordio.writer import dense_layout
from containerlib.row_ids import RowIds
from containerlib.tables.chunks import Chunk, read_chunks
from containerlib.tables.header import read_header
from preprocessing import PreprocessError
from preprocessing.hashing import assign_splits, hash_texts, raw_row_hashes
from preprocessing.labels import LabelSpec, encode_labels
from preprocessing.layout import Schema, check_columns
from preprocessing.values import RowLocator, describe_missing, show


def iter_chunks(
    path: Path,
    schema: Schema,
    chunk_rows: int,
    name: str | None = None,
    source: str | None = None,
    in_flight: InFlight | None = None,
) -> Iterator[tuple[RowLocator, Chunk]]:
    """The used columns of one file (with every column's raw text unless the id column decides the split),
    ``chunk_rows`` rows at a time; errors name the file as ``name`` (default: its path), row ids as ``source``
    (default: its file name). ``in_flight`` bounds the chunks read but not yet done with (see ``read_chunks``)."""
    name = name or str(path)
    header = read_header(path, name)
    check_columns(name, header, schema)
    first_row = 1
    try:
        text = schema.text_columns + ([schema.label_column] if schema.label_as_text else [])
        centres = schema.layout.numeric_centres(schema.numeric_columns)
        raw = not schema.id_column  # without an id, a row's split is decided from its raw cells
        used, numeric = schema.used_columns, schema.numeric_columns
        for chunk in read_chunks(path, header, used, text, numeric, chunk_rows, centres, raw, in_flight):
            rows = len(chunk)
            yield RowLocator(name, first_row, path, source or path.name), chunk
            del chunk  # not held while the next is read
            first_row += rows
    except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as error:
        after = f" after data row {first_row - 1}" if first_row > 1 else ""
        raise PreprocessError(f"{name}: unreadable{after} ({type(error).__name__}: {error})") from error


@dataclass
class Converted:
    """One chunk as Linear Learner input records and the split of each row."""

    frames: np.ndarray  # uint8 (n, frame bytes): each row's RecordIO-protobuf frame (features and label), as written
    labels: np.ndarray  # float32 label per row
    split: np.ndarray  # uint8 split code per row
    dropped: int
    category_hashes: dict[str, np.ndarray] = field(default_factory=dict)  # column -> hashes of its distinct values
    unseen: dict[str, int] = field(default_factory=dict)  # one-hot column -> rows whose value was not in its vocabulary
    imputed: dict[str, int] = field(default_factory=dict)  # column -> missing values imputed (MissingValues=impute)
    test_ids: RowIds = field(default_factory=RowIds)  # the row id of each test row, in order
    kept: np.ndarray | None = None  # per chunk row: not dropped by --missing drop (None: every row kept)


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
    encoded = encode_features(frame, schema.layout, _bad_number(where), chunk.numeric)
    features, absent, category_hashes = encoded.features, encoded.absent, encoded.category_hashes
    missing_feature = absent.any(axis=1)

    label_values, missing_label = encode_labels(frame[schema.label_column], labels, where)
    bad = missing_label if missing_policy == "impute" else missing_feature | missing_label
    if (missing_policy == "error" and bad.any()) or (missing_policy == "zero" and missing_label.any()):
        row = int(np.flatnonzero(missing_label if missing_policy == "zero" else bad)[0])
        if missing_label[row]:
            name, what = schema.label_column, f"label column {schema.label_column!r}"
        else:
            name = schema.feature_columns[int(absent[row].argmax())]
            what = f"column {name!r}"
        what += " " + describe_missing(where, name, row, chunk.value(name, row))
        hint = (
            "impute or drop (rows without a label are dropped)"
            if missing_policy == "zero"
            else "impute (the training median, a missing category and indicator), zero (features) or drop (rows)"
        )
        raise PreprocessError(
            f"{where.at(row)}: {what}; a value is needed: set --missing (pipeline parameter MissingValues) to {hint}"
        )
    keep = ~bad if missing_policy in ("drop", "impute") else np.ones(n, dtype=bool)
    if not keep.all():
        features, label_values, absent = features[keep], label_values[keep], absent[keep]
    if schema.id_column:
        ids = frame[schema.id_column][keep]
        if ids.isna().any():
            row = int(np.flatnonzero(frame[schema.id_column].isna().to_numpy() & keep)[0])
            raise PreprocessError(
                f"{where.at(row)}: id column {schema.id_column!r} is empty; every row needs an id to be split by "
                "(MissingValues does not apply to the id)"
            )
        hashes = hash_texts(ids, seed)
    else:  # from the raw cells: the split is the same whatever the encoding and the missing-value policy
        hashes = raw_row_hashes(chunk.raw, seed)[keep]
    imputed: dict[str, int] = {}
    if missing_policy == "impute" and absent.any():
        counts = absent.sum(axis=0)
        imputed = {column: int(counts[i]) for i, column in enumerate(schema.feature_columns) if counts[i]}
        unfilled = impute(Encoded(features, absent), schema.layout)
        if unfilled:
            row = int(np.flatnonzero(keep)[np.flatnonzero(absent[:, schema.feature_columns.index(unfilled[0])])[0]])
            raise PreprocessError(
                f"{where.at(row)}: column {unfilled[0]!r} is missing and the schema holds no value to impute it with "
                "(schema inference decides the training medians: leave pipeline parameter SchemaUrl unset to infer "
                "it); or set --missing (pipeline parameter MissingValues) to zero or drop"
            )
    unseen = {column: int(mask[keep].sum()) for column, mask in encoded.unseen.items() if mask[keep].any()}
    split = assign_splits(hashes, fractions)
    test = split == SPLIT_CODES["test"]
    if schema.id_column:
        test_ids = RowIds(ids[test].astype(str).tolist())
    else:
        test_ids = RowIds(file=where.source, rows=where.first_row + np.flatnonzero(keep)[test])
    # encoded here, once: the shards then only gather and write whole frames (rows are never copied twice); every
    # value is finite by now (non-finite features and labels were missing, handled above), so no check is needed
    frames = dense_layout(schema.feature_dim, labelled=True).frames(features, label_values, check=False)
    dropped = int(n - keep.sum())
    return Converted(
        frames,
        label_values,
        split,
        dropped,
        category_hashes,
        unseen=unseen,
        imputed=imputed,
        test_ids=test_ids,
        kept=None if not dropped else keep,
    )


def _bad_number(where: RowLocator) -> BadNumber:
    """Text in a numeric column: an error naming file, row and column, and how to declare it categorical."""

    def error(row: int, column: str, value: object) -> Exception:
        return PreprocessError(
            f"{where.at(row)}: column {column!r} has non-numeric value {show(value)}; declare text columns as "
            "categorical (feature-hashed) with --categorical-columns (pipeline parameter CategoricalColumns), "
            f"adding {column} to the columns already declared"
        )

    return error


def _numeric_block(frame: pd.DataFrame, columns: Sequence[str], where: RowLocator) -> np.ndarray:
    """The numeric feature columns as a float32 matrix; non-finite values (and float32 overflow) kept as such."""
    return numeric_block(frame, columns, _bad_number(where))
