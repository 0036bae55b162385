"""Which rows of the schema inference sample Preprocess will put in the train split, so the imputation's medians are
learnt from training rows only (``encodings.py``).

Preprocess decides a row's split from a seeded hash of the row's raw cells (``preprocessing.hashing.raw_row_hashes``)
or of its ``IdColumn`` value (``hash_texts``), with ``SplitSeed`` and the split fractions
(``assign_splits``). The sample can do the same: a CSV sample keeps the text it was read from, which parsed with no
missing values gives each cell as Preprocess's raw reader does; an id is text in both. A Parquet sample without
``IdColumn`` cannot (Preprocess hashes floats by their 8 bytes, the sample holds them as text): then every sampled row
is used, and the note says so.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline.core.names import split_fractions

if TYPE_CHECKING:
    import pandas as pd

MIN_TRAIN_ROWS = 20  # below this many train rows in the sample, the medians come from every sampled row


@dataclass(frozen=True)
class TrainRows:
    """A mask over the concatenated sample frames (None: every row) and the words saying which rows it selects."""

    mask: np.ndarray | None
    words: str


def train_rows(frames: list[pd.DataFrame], values: Mapping[str, Any], label: str) -> TrainRows:
    """The sampled rows in the train split with a label (Preprocess drops a row without one), or every row with why."""
    seed = int(values.get("SplitSeed") or 0)
    shares = split_fractions(values)
    validation, test = shares["ValidationFraction"], shares["TestFraction"]
    fractions = (1.0 - validation - test, validation, test)
    id_column = str(values.get("IdColumn") or "") or None
    total = sum(len(frame) for frame in frames)
    masks = []
    for frame in frames:
        hashes = _hashes(frame, seed, id_column)
        if hashes is None:
            return TrainRows(
                None,
                f"every one of the {total} sampled row(s): a Parquet sample's rows cannot be hashed as Preprocess "
                "hashes them to split (set IdColumn to split by an id)",
            )
        from containerlib.names import SPLIT_CODES
        from preprocessing.hashing import assign_splits

        masks.append((assign_splits(hashes, fractions) == SPLIT_CODES["train"]) & frame[label].notna().to_numpy())
    mask = np.concatenate(masks) if masks else np.zeros(0, dtype=bool)
    count = int(mask.sum())
    if count < MIN_TRAIN_ROWS:
        return TrainRows(
            None,
            f"every one of the {total} sampled row(s): only {count} of them are train rows (SplitSeed {seed}), fewer "
            f"than {MIN_TRAIN_ROWS}",
        )
    return TrainRows(mask, f"the {count} train row(s) of the {total} sampled (SplitSeed {seed})")


def _hashes(frame: pd.DataFrame, seed: int, id_column: str | None) -> np.ndarray | None:
    """Each sampled row's split hash as Preprocess computes it; None when the sample cannot reproduce it."""
    from preprocessing.hashing import hash_texts, raw_row_hashes

    if id_column:
        return hash_texts(frame[id_column].fillna(""), seed)
    from containerlib.tables.sample import CSV_TEXT

    text = frame.attrs.get(CSV_TEXT)
    if text is None:
        return None
    import pandas as pd
    import pyarrow as pa

    # every cell as written (no value read as missing: an empty cell is ""), as containerlib.tables.raw reads them
    raw = pd.read_csv(io.StringIO(text), dtype=str, na_filter=False, keep_default_na=False, nrows=len(frame))
    table = pa.Table.from_arrays(
        [pa.array(raw[column].astype(str).tolist(), type=pa.string()) for column in raw.columns],
        names=[str(column) for column in raw.columns],
    )
    return raw_row_hashes(table, seed)
