"""Checks of a local run before anything runs: what would only fail (or silently mislead) minutes later.

``check_parameters`` takes the planned definition and the resolved parameter values: the hyperparameters the Train
step will receive go through the local Linear Learner's own validation, ``NumClasses`` must match ``LabelValues``,
``MetricThreshold`` must be reachable by the gate metric. ``check_registry`` reads the model registry the Register
step will write. ``check_data`` reads the staged files cheaply (one pass,
no parsing beyond the header): text that is not UTF-8, a truncated ``.csv.gz``, rows with a trailing extra field,
and, with the row count, instance counts and splits that would leave an instance or a split with nothing.
Every finding is a ``ParameterError`` or ``DataError`` (exit 2) naming the parameter or the file and row.
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import math
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.errors import DataError, LlpipeError, ParameterError
from pipeline.core.images import is_linear_learner
from pipeline.core.names import (
    GATE_METRICS,
    METRIC_THRESHOLD,
    MULTICLASS_CLASSIFIER,
    PARQUET_SUFFIXES,
    REGRESSOR,
    SPLIT_FRACTIONS,
)
from pipeline.local import expressions
from pipeline.local.plan import Plan

SCAN_LIMIT_BYTES = 1 << 30  # data larger than this (uncompressed) is not pre-scanned: rows stay unknown
HEADER_SAMPLE_ROWS = 1000  # rows compared with the header's field count
BLOCK = 1 << 22


def parameters_in(value: Any) -> set[str]:
    """The pipeline parameters an expression (or any JSON value holding expressions) reads."""
    if isinstance(value, list):
        return set().union(*(parameters_in(item) for item in value)) if value else set()
    if isinstance(value, dict):
        if set(value) == {"Get"} and isinstance(value["Get"], str) and value["Get"].startswith("Parameters."):
            return {value["Get"].split(".", 1)[1]}
        return set().union(*(parameters_in(item) for item in value.values())) if value else set()
    return set()


def _resolved_hyperparameters(plan: Plan, values: Mapping[str, Any]) -> dict[str, tuple[str, set[str]]]:
    """The Linear Learner Train step's hyperparameters that depend on parameters only: name -> (value, sources)."""
    context = expressions.Context(parameters=dict(values), execution={})
    found: dict[str, tuple[str, set[str]]] = {}
    for spec in plan.steps.values():
        image = spec.arguments.get("AlgorithmSpecification", {}).get("TrainingImage", "")
        if spec.type != "Training" or not isinstance(image, str) or not is_linear_learner(image):
            continue
        for name, value in (spec.arguments.get("HyperParameters") or {}).items():
            try:
                resolved = expressions.resolve(value, context)
            except Exception:  # reads a step's property: known only when the step runs  # noqa: BLE001
                continue
            found[name] = (expressions.to_text(resolved), parameters_in(value))
    return found


def check_parameters(plan: Plan, values: Mapping[str, Any]) -> None:
    """Every check that needs only the definition and the parameter values; ``ParameterError`` naming the parameter."""
    _check_hyperparameters(plan, values)
    _check_labels(values)
    _check_threshold(values)


def _check_hyperparameters(plan: Plan, values: Mapping[str, Any]) -> None:
    from pipeline.linear_learner.hyperparameters import HyperparameterError, parse_hyperparameters

    hyperparameters = _resolved_hyperparameters(plan, values)
    if not hyperparameters:
        return
    try:
        parse_hyperparameters({name: value for name, (value, _) in hyperparameters.items()})
    except HyperparameterError as error:
        message = str(error)
        for name, (_, sources) in hyperparameters.items():
            if f"{name!r}" in message and sources:
                shown = ", ".join(f"{source}={values.get(source)}" for source in sorted(sources))
                raise ParameterError(f"--param {shown}: the Train step would reject it: {message}") from None
        raise ParameterError(f"the Train step's hyperparameters would be rejected: {message}") from None


def _check_labels(values: Mapping[str, Any]) -> None:
    predictor = values.get("PredictorType")
    label_values = [value.strip() for value in str(values.get("LabelValues") or "").split(",") if value.strip()]
    if not label_values:
        return
    duplicates = sorted({value for value in label_values if label_values.count(value) > 1})
    if duplicates:
        raise ParameterError(f"--param LabelValues lists {', '.join(duplicates)} more than once")
    if predictor == REGRESSOR:
        raise ParameterError("--param LabelValues maps class labels; a regressor's label is a number: leave it empty")
    if predictor == MULTICLASS_CLASSIFIER and "NumClasses" in values and len(label_values) != values["NumClasses"]:
        raise ParameterError(
            f"--param NumClasses={values['NumClasses']} but LabelValues lists {len(label_values)} classes "
            f"({', '.join(label_values)}): set NumClasses={len(label_values)}"
        )
    if predictor not in (MULTICLASS_CLASSIFIER, REGRESSOR) and len(label_values) != 2:
        raise ParameterError(
            f"--param LabelValues lists {len(label_values)} values; a binary_classifier needs exactly 2 "
            "(negative first, then positive)"
        )


def _check_threshold(values: Mapping[str, Any]) -> None:
    if METRIC_THRESHOLD not in values:
        return
    threshold = values[METRIC_THRESHOLD]
    metric = GATE_METRICS.get(str(values.get("PredictorType")), "the gate metric")
    if not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        raise ParameterError(
            f"--param {METRIC_THRESHOLD}={threshold} is not a finite number ({metric} is compared with it)"
        )
    if metric == "r2" and threshold > 1:
        raise ParameterError(f"--param {METRIC_THRESHOLD}={threshold}: r2 is at most 1, so the gate could never pass")
    if metric in ("auc", "accuracy") and not 0 <= threshold <= 1:
        raise ParameterError(
            f"--param {METRIC_THRESHOLD}={threshold}: {metric} lies in [0, 1], so the gate would "
            f"{'never' if threshold > 1 else 'always'} pass"
        )


def check_registry(path: Path) -> None:
    """A ``registry.db`` that cannot be read (damaged, a folder) fails now, not at the Register step after training."""
    from pipeline.local.registry import LocalRegistry, RegistryError

    if not path.exists():
        return  # the Register step creates it
    try:
        LocalRegistry(path).list_groups()
    except RegistryError as error:
        raise LlpipeError(f"{error} (checked before the run: its Register step would fail after training)") from None


# ----------------------------------------------------------------------------------------------- the data itself


@dataclass(frozen=True)
class DataFacts:
    """What a cheap pass over the input files found: how many files, and their data rows (None when not scanned)."""

    files: int
    rows: int | None


def check_data(files: list[Path], values: Mapping[str, Any]) -> DataFacts:
    """Scan the input files (when small enough), then check instance counts and splits against what was found."""
    facts = scan_files(files)
    if facts.rows == 0:
        shown = ", ".join(str(path) for path in files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        raise DataError(f"{shown}: a header but no data rows; give data with at least one row per split")
    _check_counts(facts, values)
    return facts


def scan_files(files: list[Path]) -> DataFacts:
    """Data rows of every file, checking encoding and field counts on the way; rows None when the data is too big."""
    total = sum(path.stat().st_size for path in files)
    if total > SCAN_LIMIT_BYTES:
        return DataFacts(len(files), None)
    rows = 0
    for path in files:
        if path.name.lower().endswith(PARQUET_SUFFIXES):
            rows += _parquet_rows(path)
        else:
            rows += _csv_rows(path)
    return DataFacts(len(files), rows)


def _parquet_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    try:
        return int(pq.ParquetFile(path).metadata.num_rows)
    except Exception as error:  # noqa: BLE001 - pyarrow raises several types for a damaged file
        raise DataError(f"{path}: not a readable Parquet file ({error}); re-export or re-download it") from None


def _blocks(path: Path) -> Iterator[bytes]:
    """The file's bytes (decompressed for .gz); a truncated or damaged gzip is a ``DataError`` naming the file."""
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rb") as handle:
            while block := handle.read(BLOCK):
                yield block
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise DataError(
            f"{path}: the gzip data is truncated or damaged ({error}); re-create or re-download it"
        ) from None


def _csv_rows(path: Path) -> int:
    """Data rows of a CSV (lines after the header); bytes that are not UTF-8 and rows with more fields than the
    header are errors naming the file and the data row."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    lines = 0  # newlines seen before the current block
    head = bytearray()
    last = b""
    for block in _blocks(path):
        try:
            decoder.decode(block)
        except UnicodeDecodeError as error:
            row = lines + block.count(b"\n", 0, error.start)
            raise DataError(
                f"{path}: data row {row} (line {row + 1}) is not UTF-8 text (byte 0x{block[error.start]:02x}); "
                "save the file as UTF-8"
            ) from None
        if len(head) < BLOCK:
            head += block[: BLOCK - len(head)]
        lines += block.count(b"\n")
        last = block[-1:]
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise DataError(f"{path}: the last row ends inside a UTF-8 character; save the file as UTF-8") from None
    _check_fields(path, bytes(head))
    if last and last != b"\n":
        lines += 1  # the last line has no newline
    return max(lines - 1, 0)


def _check_fields(path: Path, head: bytes) -> None:
    """The first rows have as many fields as the header; an extra (often trailing, empty) field is named."""
    text = head.decode("utf-8", errors="ignore")
    if len(head) == BLOCK:
        text = text[: text.rfind("\n") + 1]  # whole lines only
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if not header:
        return
    for row_number, row in enumerate(reader, start=1):
        if row_number > HEADER_SAMPLE_ROWS:
            return
        if len(row) > len(header):
            extra = ", ".join(repr(value) for value in row[len(header) :])
            raise DataError(
                f"{path}: data row {row_number} has {len(row)} fields but the header names {len(header)} "
                f"(extra: {extra}; a trailing comma?); remove the extra field or name it in the header"
            )


def _fractions(values: Mapping[str, Any]) -> dict[str, float]:
    return {name: float(values.get(name, default)) for name, default in SPLIT_FRACTIONS.items()}  # Preprocess's own


def _check_counts(facts: DataFacts, values: Mapping[str, Any]) -> None:
    processing = values.get("ProcessingInstanceCount")
    if isinstance(processing, int) and processing > facts.files:
        raise ParameterError(
            f"--param ProcessingInstanceCount={processing} but --data has {facts.files} file(s): with ShardedByS3Key "
            f"an instance would get no file; use at most {facts.files} or split the data into more files"
        )
    if facts.rows is None:
        return
    fractions = _fractions(values)
    for name, fraction in fractions.items():
        if fraction > 0 and facts.rows * fraction < 1:
            raise ParameterError(
                f"--param {name}={fraction} with {facts.rows} data rows leaves the split empty "
                f"(about {facts.rows * fraction:.2f} rows); give more rows or set {name}=0"
            )
    training = values.get("TrainingInstanceCount")
    train_rows = facts.rows * (1 - sum(fractions.values()))
    if isinstance(training, int) and training > train_rows:
        raise ParameterError(
            f"--param TrainingInstanceCount={training} but the train split has about {train_rows:.0f} rows: "
            "an instance would get no records"
        )
