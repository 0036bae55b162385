"""The decided schema's document (``llpipe-schema/1``) checked alike wherever it is read: by Preprocess from its
``--schema`` input and by the client before a run given ``SchemaUrl``, so a damaged, foreign or mismatched schema is
named before anything runs, not in Preprocess's log after staging and sizing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from containerlib.names import SCHEMA_FORMAT
from containerlib.time_text import KINDS

LISTS = ("feature_columns", "categorical_columns", "label_values")


def document_problem(decided: Any) -> str | None:
    """What makes ``decided`` (parsed JSON) no llpipe schema Preprocess can read; None when it is one."""
    if not isinstance(decided, dict) or decided.get("format") != SCHEMA_FORMAT:
        return f"not an llpipe schema (expected format {SCHEMA_FORMAT!r})"
    for key in LISTS:
        value = decided.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(item, str) for item in value)):
            return f"{key} must be a list of strings, got {value!r}"
    times = decided.get("times")
    if times is not None and not (isinstance(times, dict) and set(map(str, times.values())) <= set(KINDS)):
        return f"times must map column names to one of {list(KINDS)}, got {times!r}"
    return None


def run_mismatch(
    decided: dict, label_column: str, predictor_type: str, columns: Sequence[str] | None = None
) -> str | None:
    """What in a well-formed schema does not fit the run (its label column, predictor type and, when known, the
    data's ``columns``); None when it fits."""
    label = decided.get("label_column")
    if label is not None and label != label_column:
        return f"it was decided for label column {label!r}, the run's LabelColumn is {label_column!r}"
    predictor = decided.get("predictor_type")
    if predictor is not None and predictor != predictor_type:
        return f"it was decided for {predictor}, the run's PredictorType is {predictor_type}"
    if columns is not None:
        missing = [column for column in decided.get("feature_columns") or [] if column not in columns]
        if missing:
            return f"its feature columns {missing} are not columns of the data ({list(columns)})"
    return None
