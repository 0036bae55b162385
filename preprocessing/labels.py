"""Labels: how label values become Linear Learner labels, fixed by the arguments and the decided schema only (never
by the data a host saw), and checked for what the predictor type allows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from preprocessing import PreprocessError
from preprocessing.layout import given_or_decided
from preprocessing.settings import Settings
from preprocessing.values import RowLocator, show, to_float64


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


def make_label_spec(settings: Settings, decided: dict[str, Any] | None = None) -> LabelSpec:
    """Label handling from ``--label-values`` / ``--num-classes``, else from the decided schema."""
    decided = decided or {}
    values = tuple(given_or_decided(settings.label_values, decided, "label_values")) or None
    num_classes = settings.num_classes if settings.num_classes is not None else decided.get("num_classes")
    predictor_type = settings.predictor_type
    if num_classes is not None and predictor_type != "multiclass_classifier" and settings.num_classes is None:
        num_classes = None  # a schema decided for another predictor type does not constrain this one
    if values is not None:
        if len(set(values)) != len(values):
            raise PreprocessError(f"--label-values (pipeline parameter LabelValues) has duplicates: {list(values)}")
        if predictor_type == "regressor":
            raise PreprocessError(
                "--label-values (pipeline parameter LabelValues) applies to classifiers only, not to regressor"
            )
        if predictor_type == "binary_classifier" and len(values) != 2:
            raise PreprocessError(
                "binary_classifier needs 2 --label-values (pipeline parameter LabelValues): NEGATIVE,POSITIVE; got "
                f"{values}"
            )
        if predictor_type == "multiclass_classifier" and len(values) < 3:
            raise PreprocessError(
                "multiclass_classifier needs >= 3 --label-values (pipeline parameter LabelValues) (num_classes >= 3), "
                f"got {values}"
            )
    if num_classes is not None:
        if predictor_type != "multiclass_classifier":
            raise PreprocessError("--num-classes (pipeline parameter NumClasses) applies to multiclass_classifier only")
        if num_classes < 3:
            raise PreprocessError(
                "--num-classes (pipeline parameter NumClasses) must be at least 3 (Linear Learner's range), got "
                f"{num_classes}"
            )
        if values is not None and len(values) != num_classes:
            raise PreprocessError(
                f"NumClasses {num_classes} but {len(values)} label values {list(values)}: "
                f"set pipeline parameter NumClasses to {len(values)}"
            )
    return LabelSpec(predictor_type, values, num_classes)


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
                f"{where.at(row)}: label {show(raw.iloc[row])} is not one of the label values {list(spec.values)}; "
                f"{_labels_seen(raw, spec.predictor_type)}"
            )
        return index.to_numpy(dtype=np.float32, na_value=np.nan), missing

    numbers = to_float64(raw, where, f"label column {raw.name!r}", hint=lambda: _labels_seen(raw, spec.predictor_type))
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
        seen = _labels_seen(raw, spec.predictor_type)
        raise PreprocessError(f"{where.at(row)}: label {show(raw.iloc[row])} is not {expected}; {seen}")
    return labels, missing


def _labels_seen(raw: pd.Series, predictor_type: str, limit: int = 20) -> str:
    """The distinct labels of a chunk and the parameter that maps them, for an error message; for a binary classifier
    with more than two, what to change instead (LabelValues of three or more would be refused as well)."""
    seen = sorted({str(value).strip() for value in raw.dropna().unique()})
    shown = ", ".join(seen[:limit]) + (f", ... ({len(seen)} in all)" if len(seen) > limit else "")
    if predictor_type == "binary_classifier" and len(seen) > 2:
        return (
            f"labels seen in this chunk: {shown}; a binary classifier takes two classes: correct or drop the rows "
            "with other labels, or train a multiclass_classifier: --predictor-type (pipeline parameter PredictorType) "
            f"multiclass_classifier and --label-values (pipeline parameter LabelValues) {','.join(seen)}"
        )
    return (
        f"labels seen in this chunk: {shown}; map them to classes in order with --label-values (pipeline parameter "
        f"LabelValues) {','.join(seen)}"
    )
