"""The report's ``baseline_raw_columns``: scikit-learn fitted on the raw columns of the train rows, as a data
scientist would on their own table, and scored on the test rows, so the report can see what the encoding (feature
hashing, zero imputation) lost, which the baseline on the encoded features (``baseline.py``) cannot.

The rows are Preprocess's bounded sample of each split's raw rows (``preprocessing/raw_rows.py``: at most
``--raw-rows``, 50,000 by default, of each of train and test over all hosts), read from ``--rows-dir``. When the test
split holds no more rows than that, the sample is the whole test split: the baseline is scored on exactly the model's
test records (``same_test_records``); past it, on a uniform sample of them, which the section says.

The model: numeric columns imputed with the train rows' median plus a missing-value indicator per column that had
gaps, then standard-scaled; text columns with the constant ``missing`` for gaps, then one-hot encoded (values not
seen in training ignored; at most ``MAX_CATEGORIES`` per column, the rarest grouped); then ``LogisticRegressionCV``
or ``RidgeCV`` as ``baseline.py`` configures them. Memory holds the two samples and the encoded train matrix (sparse
when the one-hot blocks are), never more.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from containerlib.names import BINARY_CLASSIFIER, METRICS_SECTIONS, REGRESSOR
from containerlib.predictions import ScoredChunk
from evaluation import EvaluationError
from evaluation.baseline import baseline_estimator, describe

MAX_CATEGORIES = 1000  # one-hot columns per text column at most: a column of ids must not make the fit unbounded
SCORE_BATCH = 10_000


@dataclass(frozen=True)
class RawRows:
    """One split's sampled raw rows: a DataFrame of the feature columns, and the labels."""

    frame: Any
    labels: np.ndarray
    files: int


def read_rows(rows_dir: Path, split: str) -> RawRows | None:
    """Every host's ``<split>-<host>.parquet`` under ``rows_dir`` as one frame; None when there are none."""
    import pandas as pd
    import pyarrow.parquet as pq

    paths = sorted(rows_dir.glob(f"{split}-*.parquet")) if rows_dir.is_dir() else []
    if not paths:
        return None
    frames = []
    for path in paths:
        try:  # one file's reader: read_table would import pyarrow.dataset (~0.1 CPU-s) for the same table
            with pq.ParquetFile(str(path)) as parquet:
                frames.append(parquet.read().to_pandas())
        except Exception as error:
            raise EvaluationError(f"{path}: not a readable raw-row sample from Preprocess ({error})") from error
    columns = list(frames[0].columns)
    for path, frame in zip(paths, frames):
        if list(frame.columns) != columns:
            raise EvaluationError(
                f"{path}: its columns {list(frame.columns)} differ from {paths[0].name}'s {columns}: Preprocess's "
                "hosts sampled different layouts"
            )
    frame = pd.concat(frames, ignore_index=True)
    label = columns[-1]  # Preprocess writes the label column last
    return RawRows(frame[columns[:-1]], frame[label].to_numpy(dtype=np.float64), len(paths))


def raw_estimator(frame: Any, predictor_type: str) -> Any:
    """The pipeline fitted on the raw columns (see the module docstring)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    numeric = [column for column in frame.columns if frame[column].dtype.kind in "fiub"]
    text = [column for column in frame.columns if column not in numeric]
    parts = []
    if numeric:
        numbers = make_pipeline(SimpleImputer(strategy="median", add_indicator=True), StandardScaler())
        parts.append(("numeric", numbers, numeric))
    if text:
        categories = make_pipeline(
            SimpleImputer(strategy="constant", fill_value="missing"),
            OneHotEncoder(handle_unknown="infrequent_if_exist", max_categories=MAX_CATEGORIES),
        )
        parts.append(("text", categories, text))
    encoder = ColumnTransformer(parts)
    model = baseline_estimator(predictor_type, sparse_input=True).steps[-1][1]  # the same CV model, unscaled input
    return make_pipeline(encoder, model)


def _text_as_objects(frame: Any) -> Any:
    """Text columns as Python objects with None for gaps (SimpleImputer's constant strategy needs object dtype)."""
    frame = frame.copy()
    for column in frame.columns:
        if frame[column].dtype.kind not in "fiub":
            frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
    return frame


def fit_raw_baseline(train: RawRows, predictor_type: str) -> Any:
    """The fitted raw-column baseline; a clear error when the train rows cannot train it (one class only)."""
    labels = train.labels
    if predictor_type != REGRESSOR:
        present = np.unique(labels)
        if len(present) < 2:
            raise EvaluationError(
                f"the raw-column baseline's {len(labels)} train rows hold only class {present[0]:g}: it needs two"
            )
    estimator = raw_estimator(train.frame, predictor_type)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings of the extreme strengths: not the user's
        estimator.fit(_text_as_objects(train.frame), labels if predictor_type == REGRESSOR else labels.astype(np.int64))
    return estimator


def score_raw_rows(estimator: Any, test: RawRows, predictor_type: str, classes: int) -> Iterator[ScoredChunk]:
    """The baseline's predictions of the test rows, a batch at a time, as the challenger's metrics take them."""
    known = np.asarray(getattr(estimator, "classes_", []), dtype=np.int64)
    frame = _text_as_objects(test.frame)
    for start in range(0, len(frame), SCORE_BATCH):
        batch, labels = frame.iloc[start : start + SCORE_BATCH], test.labels[start : start + SCORE_BATCH]
        if predictor_type == REGRESSOR:
            yield ScoredChunk(labels, np.asarray(estimator.predict(batch), dtype=np.float64), None)
            continue
        probabilities = np.asarray(estimator.predict_proba(batch), dtype=np.float64)
        if predictor_type == BINARY_CLASSIFIER:
            scores = probabilities[:, list(known).index(1)]
            yield ScoredChunk(labels, scores, (scores > 0.5).astype(np.int64))
            continue
        full = np.zeros((len(probabilities), classes))
        full[:, known] = probabilities
        yield ScoredChunk(labels, full, full.argmax(axis=1).astype(np.int64))


def raw_section(
    train: RawRows,
    test: RawRows,
    test_records: int,
    predictor_type: str,
    report: dict[str, Any],
    metrics: dict[str, Any],
) -> dict[str, Any]:
    """The report's ``baseline_raw_columns``: the model, the rows it saw, its metrics and the gap to the model."""
    gate_metric, challenger_value = report["gate"]["metric"], report["gate"]["value"]
    value = metrics[gate_metric]["value"]
    numeric = [column for column in train.frame.columns if train.frame[column].dtype.kind in "fiub"]
    text = [column for column in train.frame.columns if column not in numeric]
    model = describe(predictor_type).replace("scikit-learn StandardScaler + ", "")
    return {
        "model": f"scikit-learn on {len(numeric)} numeric columns (median + missing indicator, scaled) and {len(text)} "
        f"text columns (one-hot) + {model}",
        "numeric_columns": numeric,
        "text_columns": text,
        "train_rows": int(len(train.labels)),
        "test_rows": int(len(test.labels)),
        "test_split_records": int(test_records),
        "same_test_records": int(len(test.labels)) == int(test_records),
        METRICS_SECTIONS[predictor_type]: metrics,
        "gate": {"metric": gate_metric, "value": value, "challenger_minus_baseline": challenger_value - value},
    }
