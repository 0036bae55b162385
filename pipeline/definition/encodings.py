"""Each feature column's encoding, decided once by the client from the schema inference sample and stored in the
schema (``encodings``), so every Preprocess host, batch transform and the serving featurizer encode alike.

- A text column with at most :data:`ONE_HOT_LIMIT` distinct values in the sample is one-hot: one feature per value
  (sorted), then ``column=(other)`` for any value the sample did not hold. A column whose values are all spellings
  of yes/no (:data:`containerlib.encoding.BOOLEAN_SPELLINGS`, any case) keeps one value per meaning (its most
  frequent spelling) and matches any spelling by meaning.
- A text column with more values is feature-hashed into the power of two at or above its distinct values, at most
  :data:`HASH_BUCKETS_LIMIT` (rows are dense: every bucket is a float in every row). ``HashBuckets=N`` (N > 0)
  hashes every text column into N buckets instead.
- With ``MissingValues=impute``: a number's gaps are filled with its median over the sample's train rows (the rows
  Preprocess will put in the train split: ``sample_splits.py``; every sampled row when those cannot be told or are
  too few, as the note says), so no validation or test value moves it; a column with a gap in any sampled row gets a
  ``column=(missing)`` feature (which features exist is the layout, decided from every row; its weight is learnt
  from the train rows only).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from containerlib.encoding import HASHED, NUMBER, ONE_HOT, ColumnEncoding, boolean_meaning

if TYPE_CHECKING:
    import pandas as pd

    from pipeline.definition.sample_splits import TrainRows

ONE_HOT_LIMIT = 200  # distinct values in the sample up to which a text column is one-hot
HASH_BUCKETS_LIMIT = 256  # the most buckets a many-valued column gets: rows are dense, every bucket a float a row
ENCODED_VALUES = 1 << 23  # features of the sample encoded at once to find its train rows (32 MB of float32)


def decide_encodings(
    frame: pd.DataFrame,
    features: list[str],
    categorical: list[str],
    values: Mapping[str, Any],
    train: TrainRows | None = None,
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The schema's ``encodings`` (column -> :meth:`ColumnEncoding.to_json`) and notes for the user; ``train``: the
    sample's train rows, whose values alone give the medians (None: every row)."""
    buckets = int(values.get("HashBuckets") or 0)
    notes: list[str] = []
    decided: dict[str, ColumnEncoding] = {}
    one_hot, hashed = [], []
    for column in categorical:
        encoding = _text_encoding(frame[column], column, buckets)
        decided[column] = encoding
        if encoding.kind == ONE_HOT:
            one_hot.append(f"{column} ({len(encoding.values)}{', yes/no' if encoding.boolean else ''})")
        else:
            distinct = frame[column].dropna().astype(str).str.strip().nunique()
            hashed.append(f"{column} ({distinct} values in {encoding.buckets} buckets)")
            notes.extend(_collision_note(frame[column], column, encoding.buckets))
            present = frame[column].dropna()
            if len(present) > 100 and distinct == len(present):
                notes.append(
                    f"warning: column {column!r}: every sampled value is different, as in an identifier; it "
                    "carries no pattern to learn: leave it out, or name it as IdColumn"
                )
    if one_hot:
        notes.append(
            f"one-hot columns (values in the sample; unseen values become column=(other)): {', '.join(one_hot)}"
        )
    if hashed:
        notes.append(f"feature-hashed columns: {', '.join(hashed)}")
    if str(values.get("MissingValues") or "impute") == "impute":
        mask = train.mask if train is not None else None
        for column in features:
            cells = frame[column]
            learnt_from = cells if mask is None else cells[mask]
            decided[column] = _imputed(decided.get(column) or ColumnEncoding(column), cells, learnt_from)
        gaps = [column for column in features if decided[column].indicator]
        fills = [f"{column} {decided[column].fill:g}" for column in gaps if decided[column].kind == NUMBER]
        medians = train.words if train is not None else f"every one of the {len(frame)} sampled row(s)"
        notes.append(
            f"imputation (MissingValues=impute): columns with gaps in the {len(frame)} sampled row(s) get a "
            f"column=(missing) feature: {', '.join(gaps) or 'none'}"
            + (f"; medians filled in, from {medians}: {', '.join(fills)}" if fills else "")
        )
    documents = {column: encoding.to_json() for column, encoding in decided.items()}
    return {column: documents[column] for column in features if column in documents}, notes


def _text_encoding(cells: pd.Series, column: str, buckets: int) -> ColumnEncoding:
    """One-hot for few values (yes/no by meaning), hashed for many, or hashed into ``buckets`` when given."""
    present = cells.dropna().astype(str).str.strip()
    present = present[present != ""]
    if buckets > 0:
        return ColumnEncoding(column, HASHED, buckets=buckets)
    counts = present.value_counts()
    if len(counts) > ONE_HOT_LIMIT:
        size = 1 << max(0, int(len(counts) - 1).bit_length())
        return ColumnEncoding(column, HASHED, buckets=min(size, HASH_BUCKETS_LIMIT))
    meanings = {value: boolean_meaning(value) for value in counts.index}
    if counts.size and all(meaning is not None for meaning in meanings.values()):
        spelled: dict[bool, str] = {}
        for value, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0])):  # most frequent spelling
            spelled.setdefault(bool(meanings[value]), str(value))
        return ColumnEncoding(column, ONE_HOT, tuple(spelled[m] for m in sorted(spelled)), boolean=True)
    return ColumnEncoding(column, ONE_HOT, tuple(sorted(str(value) for value in counts.index)))


def _collision_note(cells: pd.Series, column: str, buckets: int) -> list[str]:
    """A warning when sampled values of a hashed column share buckets (Preprocess's blake2b rule)."""
    from containerlib.stable_hash import stable_hash64

    values = sorted({str(value).strip() for value in cells.dropna()})
    used = {stable_hash64(f"{column}={value}") % buckets for value in values}
    if len(used) == len(values):
        return []
    return [
        f"note: column {column!r}: {len(values)} distinct value(s) in the sample share {len(used)} of {buckets} hash "
        "buckets (values in one bucket are indistinguishable)"
    ]


def _imputed(encoding: ColumnEncoding, cells: pd.Series, learnt_from: pd.Series) -> ColumnEncoding:
    """``encoding`` with its imputation: an indicator when a sampled row (``cells``) has a gap, a number's median
    over ``learnt_from`` (the train rows) as its fill (0 when they hold no value)."""
    missing, _ = _gaps(encoding, cells)
    fill = encoding.fill
    if encoding.kind == NUMBER:
        train_missing, numbers = _gaps(encoding, learnt_from)
        present = numbers[~train_missing]
        fill = float(np.median(present)) if present.size else 0.0
    return ColumnEncoding(
        encoding.column,
        encoding.kind,
        encoding.values,
        encoding.boolean,
        encoding.buckets,
        fill,
        bool(missing.any()),
    )


def _gaps(encoding: ColumnEncoding, cells: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(missing as Preprocess reads them, the cells as float64 numbers: NaN for a text column)."""
    import pandas as pd

    text = cells.astype(object)
    missing = text.isna().to_numpy() | (text.astype(str).str.strip() == "").to_numpy()
    numbers = np.full(len(cells), np.nan)
    if encoding.kind == NUMBER:
        numbers = pd.to_numeric(cells, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        with np.errstate(over="ignore", invalid="ignore"):
            missing = missing | ~np.isfinite(numbers.astype(np.float32))
    return missing, numbers
