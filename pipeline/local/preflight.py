"""Checks of a local run before anything runs: what would only fail (or silently mislead) minutes later.

``check_parameters`` takes the planned definition and the resolved parameter values: the parameters that feed
Linear Learner hyperparameters (``parameter_table.TABLE``) go through the local Linear Learner's own validation,
each refused value named with its hyperparameter's rule, ``NumClasses`` must match ``LabelValues``,
``MetricThreshold`` must be reachable by the gate metric. ``check_registry`` reads the model registry the Register
step will write. ``check_data`` reads the staged files cheaply (one pass, no parsing beyond the header, by the
container library's table scan ``containerlib.tables.scan``): text that is not UTF-8, a truncated ``.csv.gz``, rows
with a trailing extra field, and, with the row count, instance counts and splits that would leave an instance or a
split with nothing.
Every finding is a ``ParameterError`` or ``DataError`` (exit 2) naming the parameter or the file and row.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from containerlib.errors import TableError
from containerlib.tables.scan import count_rows
from pipeline.core.errors import DataError, LlpipeError, ParameterError, opt
from pipeline.core.images import is_linear_learner
from pipeline.core.names import (
    AUTOMATIC_THRESHOLD,
    DATA_QUALITY_SUPPLIED_CONSTRAINTS,
    DATA_QUALITY_SUPPLIED_STATISTICS,
    GATE_METRICS,
    METRIC_THRESHOLD,
    MULTICLASS_CLASSIFIER,
    REGISTER_NEW_DATA_QUALITY_BASELINE,
    REGRESSOR,
    SKIP_DATA_QUALITY_CHECK,
    split_fractions,
)
from pipeline.definition.parameter_table import TABLE
from pipeline.definition.service_limits import check_service_limits
from pipeline.local import expressions
from pipeline.local.plan import Plan

SCAN_LIMIT_BYTES = 1 << 30  # data larger than this (uncompressed) is not pre-scanned: rows stay unknown


def parameters_in(value: Any) -> set[str]:
    """The pipeline parameters an expression (or any JSON value holding expressions) reads."""
    if isinstance(value, list):
        return set().union(*(parameters_in(item) for item in value)) if value else set()
    if isinstance(value, dict):
        if set(value) == {"Get"} and isinstance(value["Get"], str) and value["Get"].startswith("Parameters."):
            return {value["Get"].split(".", 1)[1]}
        return set().union(*(parameters_in(item) for item in value.values())) if value else set()
    return set()


def _fed_to_linear_learner(plan: Plan) -> set[str]:
    """The parameters a Linear Learner training or tuning step of the plan reads (tuned hyperparameters are not)."""
    read: set[str] = set()
    for spec in plan.steps.values():
        job = spec.arguments.get("TrainingJobDefinition", spec.arguments) if spec.type == "Tuning" else spec.arguments
        image = job.get("AlgorithmSpecification", {}).get("TrainingImage", "")
        if spec.type in ("Training", "Tuning") and isinstance(image, str) and is_linear_learner(image):
            read |= parameters_in(job.get("HyperParameters") or job.get("StaticHyperParameters") or {})
    return read


def check_parameters(plan: Plan, values: Mapping[str, Any]) -> None:
    """Every check that needs only the definition and the parameter values; ``ParameterError`` naming the parameter."""
    check_service_limits([(spec.name, spec.type, spec.arguments) for spec in plan.steps.values()], values)
    _check_machine(values)
    _check_hyperparameters(plan, values)
    _check_labels(values)
    _check_threshold(values)


# what one local instance (a Python process with numpy/pandas and its share of the data) takes, at least
INSTANCE_MEMORY_BYTES = 256 << 20
INSTANCE_COUNTS = {"TrainingInstanceCount": "training", "ProcessingInstanceCount": "Preprocess"}


def available_memory() -> int | None:
    """The memory this machine can still give (MemAvailable), or None where /proc/meminfo does not tell."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _check_machine(values: Mapping[str, Any], memory: int | None = None) -> None:
    """Locally every instance is a process on this machine: a count whose processes would not fit in its memory is
    refused before anything starts (1000 instances once took the whole machine down)."""
    memory = available_memory() if memory is None else memory
    if memory is None:
        return
    most = max(1, memory // INSTANCE_MEMORY_BYTES)
    for name, kind in INSTANCE_COUNTS.items():
        count = values.get(name)
        if isinstance(count, int) and count > most:
            raise ParameterError(
                f"parameter {name}={count}: locally each {kind} instance is a process on this machine needing about "
                f"{INSTANCE_MEMORY_BYTES >> 20} MiB, and {memory / (1 << 30):.1f} GiB is available: use at most "
                f"{most} here (on SageMaker each instance is a machine of its own)"
            )


def _check_hyperparameters(plan: Plan, values: Mapping[str, Any]) -> None:
    """The parameters that feed Linear Learner hyperparameters (the table's rows), checked together as the Train
    step will check them; a value its hyperparameter's own rule refuses is named with that rule."""
    from pipeline.linear_learner.hyperparameters import SPECS, HyperparameterError, parse_hyperparameters

    fed = _fed_to_linear_learner(plan)
    rows = [row for row in TABLE if row.hyperparameter and row.name in fed and row.name in values]
    if not rows:
        return
    texts = {row.name: expressions.to_text(values[row.name]) for row in rows}
    try:
        parse_hyperparameters({row.hyperparameter: texts[row.name] for row in rows})
    except HyperparameterError as error:
        named = [row for row in rows if f"{row.hyperparameter!r}" in str(error)]
        for row in named:
            try:
                SPECS[row.hyperparameter][1](texts[row.name].strip())
            except ValueError as rule:  # the hyperparameter's parser says what it allows
                raise ParameterError(
                    f"{opt(row.name, texts[row.name])}: expected {rule} "
                    f"(it is Linear Learner's hyperparameter {row.hyperparameter})",
                    option=row.name,
                    value=texts[row.name],
                    expected=str(rule),
                ) from None
        if not named:
            raise ParameterError(f"the Train step's hyperparameters would be rejected: {error}") from None
        shown = ", ".join(opt(row.name, texts[row.name]) for row in named)
        raise ParameterError(f"{shown}: the Train step would reject it: {error}") from None


def _check_labels(values: Mapping[str, Any]) -> None:
    predictor = values.get("PredictorType")
    label_values = [value.strip() for value in str(values.get("LabelValues") or "").split(",") if value.strip()]
    if not label_values:
        return
    duplicates = sorted({value for value in label_values if label_values.count(value) > 1})
    if duplicates:
        raise ParameterError(f"lists {', '.join(duplicates)} more than once", option="LabelValues")
    if predictor == REGRESSOR:
        raise ParameterError("maps class labels; a regressor's label is a number: leave it empty", option="LabelValues")
    if predictor == MULTICLASS_CLASSIFIER and "NumClasses" in values and len(label_values) != values["NumClasses"]:
        raise ParameterError(
            f"{opt('NumClasses', values['NumClasses'])} but LabelValues lists {len(label_values)} classes "
            f"({', '.join(label_values)}): set {opt('NumClasses', len(label_values))}",
            option="NumClasses",
            value=values["NumClasses"],
            expected=str(len(label_values)),
        )
    if predictor not in (MULTICLASS_CLASSIFIER, REGRESSOR) and len(label_values) != 2:
        raise ParameterError(
            f"lists {len(label_values)} values; a binary_classifier needs exactly 2 (negative first, then positive)",
            option="LabelValues",
            expected="2 values",
        )


def _check_threshold(values: Mapping[str, Any]) -> None:
    if METRIC_THRESHOLD not in values:
        return
    threshold = values[METRIC_THRESHOLD]
    metric = GATE_METRICS.get(str(values.get("PredictorType")), "the gate metric")
    if not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        raise ParameterError(
            f"not a finite number ({metric} is compared with it)",
            option=METRIC_THRESHOLD,
            value=threshold,
            expected="a finite number",
        )
    if metric == "r2" and threshold > 1:
        raise ParameterError(
            "r2 is at most 1, so the gate could never pass", option=METRIC_THRESHOLD, value=threshold, expected="<= 1"
        )
    if threshold == AUTOMATIC_THRESHOLD:  # the automatic floor (evaluation/floor.py)
        return
    if metric in ("auc", "accuracy") and not 0 <= threshold <= 1:
        raise ParameterError(
            f"{metric} lies in [0, 1], so the gate would {'never' if threshold > 1 else 'always'} pass",
            option=METRIC_THRESHOLD,
            value=threshold,
            expected=f"in [0, 1], or {AUTOMATIC_THRESHOLD:g} for the automatic floor",
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


def check_schema_url(s3: Any, uri: str, values: Mapping[str, Any], files: list[Path] | None) -> None:
    """A user-given ``SchemaUrl`` read as Preprocess will read it, before anything runs: an object (or a prefix
    holding one ``.json``) in the local S3 folder, an llpipe schema, decided for this run's label column, predictor
    type and (``files``: the data's files, when staged) columns. Preprocess named these only in its log."""
    from containerlib.tables.header import read_header
    from pipeline.definition.schema_url import check_schema_objects, refusal

    try:
        path = s3.path(uri)
    except LlpipeError as error:
        raise refusal(uri, str(error)) from None
    found = (
        [path] if path.is_file() else sorted(p for p in path.rglob("*.json") if p.is_file()) if path.is_dir() else []
    )
    columns = read_header(files[0]) if files else None
    label, predictor = str(values["LabelColumn"]), str(values["PredictorType"])
    names = [str(p) for p in found]
    check_schema_objects(uri, names, _read_text, label, predictor, columns, f"in the local S3 folder ({path})")


def _read_text(name: str) -> str:
    return Path(name).read_text(encoding="utf-8")


def first_baseline(
    registry_db: Path, group: str, values: Mapping[str, Any], requested: Collection[str]
) -> dict[str, bool]:
    """On a first run (no approved version of ``group`` carries a data-quality baseline, none is supplied), the
    switches that calculate and register one instead of failing as SageMaker's check would with nothing to compare:
    ``SkipDataQualityCheck`` and ``RegisterNewDataQualityBaseline`` true. Nothing when the run sets either of them,
    or when the definition has no data-quality check."""
    from pipeline.local.registry import LocalRegistry

    switches = (SKIP_DATA_QUALITY_CHECK, REGISTER_NEW_DATA_QUALITY_BASELINE)
    if not all(name in values for name in switches) or any(name in requested for name in switches):
        return {}
    if values.get(DATA_QUALITY_SUPPLIED_STATISTICS) or values.get(DATA_QUALITY_SUPPLIED_CONSTRAINTS):
        return {}
    package = LocalRegistry(registry_db).last_approved(group) if registry_db.exists() else None
    if package is not None and {"Statistics", "Constraints"} <= set(package.drift_check_data_quality):
        return {}
    return dict.fromkeys(switches, True)


# ----------------------------------------------------------------------------------------------- the data itself


@dataclass(frozen=True)
class DataFacts:
    """What a cheap pass over the input files found: how many files, and their data rows (None when not scanned)."""

    files: int
    rows: int | None


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


def check_data(files: list[Path], values: Mapping[str, Any], scanned: DataFacts | None = None) -> DataFacts:
    """Scan the input files (when small enough; ``scanned``: what ``scan_data`` found already), then check instance
    counts and splits against what was found."""
    facts = scanned if scanned is not None else scan_data(files)
    _check_counts(facts, values)
    return facts


def scan_data(files: list[Path]) -> DataFacts:
    """The data's own faults, which need no parameter: text that is not UTF-8, a truncated ``.csv.gz``, a row with
    an extra field, files without a data row (``DataError``); what the scan found."""
    facts = scan_files(files)
    if facts.rows == 0:
        shown = ", ".join(str(path) for path in files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        empty = all(_size(path) == 0 for path in files)
        what = "empty (0 bytes: no header, no rows)" if empty else "a header but no data rows"
        raise DataError(f"{shown}: {what}; give data with at least one row per split")
    return facts


def scaling_warnings(facts: DataFacts, values: Mapping[str, Any]) -> list[str]:
    """Training instances against the train shards Preprocess will write and MiniBatchSize against the train
    records per instance (``pipeline.core.scaling.run_preflight_warnings``)."""
    from pipeline.core.scaling import run_preflight_warnings

    return run_preflight_warnings(values, facts.files, facts.rows)


def scan_files(files: list[Path]) -> DataFacts:
    """Data rows of every file, checking encoding and field counts on the way; rows None when the data is too big."""
    total = sum(path.stat().st_size for path in files)
    if total > SCAN_LIMIT_BYTES:
        return DataFacts(len(files), None)
    try:
        rows = sum(count_rows(path) for path in files)
    except TableError as error:
        raise DataError(str(error)) from None
    return DataFacts(len(files), rows)


def _check_counts(facts: DataFacts, values: Mapping[str, Any]) -> None:
    processing = values.get("ProcessingInstanceCount")
    if isinstance(processing, int) and processing > facts.files:
        raise ParameterError(
            f"{opt('ProcessingInstanceCount', processing)} but the data has {facts.files} file(s): with "
            f"ShardedByS3Key an instance would get no file; use at most {facts.files} or split the data into more "
            "files",
            option="ProcessingInstanceCount",
            value=processing,
            expected=f"at most {facts.files}",
        )
    if facts.rows is None:
        return
    fractions = split_fractions(values)
    for name, fraction in fractions.items():
        if fraction > 0 and facts.rows * fraction < 1:
            raise ParameterError(
                f"{opt(name, fraction)} with {facts.rows} data rows leaves the split empty (about "
                f"{facts.rows * fraction:.2f} rows); give more rows or a larger {name}",
                option=name,
                value=fraction,
            )
    training = values.get("TrainingInstanceCount")
    train_rows = facts.rows * (1 - sum(fractions.values()))
    if isinstance(training, int) and training > train_rows:
        raise ParameterError(
            f"{opt('TrainingInstanceCount', training)} but the train split has about {train_rows:.0f} rows: an "
            "instance would get no records",
            option="TrainingInstanceCount",
            value=training,
            expected=f"at most {train_rows:.0f}",
        )
