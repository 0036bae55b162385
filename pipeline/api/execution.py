"""One pipeline execution as Python objects: status, parameters, steps, metrics, gate, model package, plots,
predictions; the same shape for a local execution (read from its record and the local S3 folder) and, in
:mod:`pipeline.api.sagemaker_execution`, for one on SageMaker (read from the service and S3).

Tables are pandas DataFrames; in Jupyter an execution renders itself (:mod:`pipeline.api.html`).
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.core.errors import LlpipeError
from pipeline.core.images import is_linear_learner
from pipeline.core.names import (
    BASELINE_SUFFIX,
    CREATE_MODEL,
    DATA_QUALITY,
    DECISION,
    EVALUATE,
    GATE,
    METRIC_THRESHOLD,
    METRICS_SECTIONS,
    PREPROCESS,
    QUALITY_GATE,
    RAW_BASELINE,
    REGISTER,
    REGRESSOR,
    REPORT_PROPERTY_FILE,
    SKLEARN_BASELINE,
    THRESHOLD_FLOOR,
    TRAIN,
    TRANSFORM,
    StepStatus,
)

if TYPE_CHECKING:
    import pandas as pd

    from pipeline.api.dag import Dag
    from pipeline.core.tracking import MlflowRun
    from pipeline.local.executions import ExecutionRecord
    from pipeline.local.s3 import LocalS3
    from pipeline.local.workdir import Workdir

__all__ = [
    "Execution",
    "LocalExecution",
    "NoResultsError",
    "baseline_view",
    "coefficients_frame",
    "metrics_frame",
    "predictions_frame",
    "seconds_between",
    "steps_frame",
]

STEP_COLUMNS = ["step", "type", "status", "seconds", "cache_hit"]
BASELINE_COLUMN = "best_constant_classifier"
SKLEARN_COLUMN = "sklearn_baseline"  # Evaluate's scikit-learn baseline on the same test split (report "baseline")


class NoResultsError(LlpipeError):
    """The execution has not produced what was asked for (it failed before, or is still running)."""


def metrics_frame(report: dict[str, Any] | None) -> pd.DataFrame:
    """The report's model-quality scalars, one row per metric: value, standard deviation, the scikit-learn baseline's
    value and deviation on the same test split (when the report has one) and, for classifiers, the value of the best
    constant classifier (the report's ``<metric>_best_constant_classifier`` entries)."""
    import pandas as pd

    section = next((report[name] for name in METRICS_SECTIONS.values() if name in report), {}) if report else {}
    rows: dict[str, dict[str, Any]] = {}
    for name, entry in section.items():
        if name.endswith(BASELINE_SUFFIX) or not isinstance(entry, dict) or _number(entry.get("value")) is None:
            continue
        rows[name] = {"value": _number(entry["value"]), "standard_deviation": _number(entry.get("standard_deviation"))}
        baseline = section.get(name + BASELINE_SUFFIX)
        if isinstance(baseline, dict):
            rows[name][BASELINE_COLUMN] = _number(baseline.get("value"))
    sklearn = (report or {}).get(SKLEARN_BASELINE) or {}
    sklearn_section = next((sklearn[name] for name in METRICS_SECTIONS.values() if name in sklearn), {})
    for name, row in rows.items():
        entry = sklearn_section.get(name)
        if isinstance(entry, dict):
            row[SKLEARN_COLUMN] = _number(entry.get("value"))
            row[SKLEARN_COLUMN + "_standard_deviation"] = _number(entry.get("standard_deviation"))
    columns = ["value", "standard_deviation"]
    if sklearn_section:
        columns += [SKLEARN_COLUMN, SKLEARN_COLUMN + "_standard_deviation"]
    if any(BASELINE_COLUMN in row for row in rows.values()):
        columns.append(BASELINE_COLUMN)
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=columns)
    frame.index.name = "metric"
    return frame


def baseline_view(report: dict[str, Any] | None, section: str = SKLEARN_BASELINE) -> dict[str, Any] | None:
    """Linear Learner beside one of Evaluate's scikit-learn baselines on the gate metric (``section``: ``baseline``,
    fitted on the encoded features, or ``baseline_raw_columns``, on the raw columns): ``{"name", "model",
    "train_records", "metric", "value", "linear_learner_value", "difference", "below_baseline"}``; None for a report
    without it."""
    baseline = (report or {}).get(section)
    if not isinstance(baseline, dict) or not isinstance(baseline.get("gate"), dict):
        return None
    gate = baseline["gate"]
    value, challenger = _number(gate.get("value")), _number(((report or {}).get(GATE) or {}).get("value"))
    difference = None if value is None or challenger is None else challenger - value
    return {
        "name": "Baseline on the raw columns" if section == RAW_BASELINE else "Baseline",
        "model": baseline.get("model_name") or baseline.get("model"),
        "train_records": baseline.get("train_records", baseline.get("train_rows")),
        "metric": gate.get("metric"),
        "value": value,
        "linear_learner_value": challenger,
        "difference": difference,
        "below_baseline": difference is not None and difference < 0,
    }


BIAS = "(bias)"


def coefficients_frame(report: dict[str, Any] | None) -> pd.DataFrame:
    """The model's coefficients from the report's ``coefficients`` section: a row per feature (its name: a numeric
    column's, ``column#bucket`` for a hashed one), largest standardised weight first, then the bias (``(bias)``);
    columns ``feature``, ``weight``, ``standard_deviation`` (the feature's, on the baseline's train sample) and
    ``standardised_weight`` (weight x standard deviation). Multiclass: ``weight_<k>`` and
    ``standardised_weight_<k>`` per class. Empty without the section (an older report)."""
    import pandas as pd

    section = (report or {}).get("coefficients")
    if not isinstance(section, dict):
        return pd.DataFrame(columns=["feature", "weight", "standard_deviation", "standardised_weight"])
    rows = [*section.get("features", []), {"feature": BIAS, "weight": section.get("bias")}]
    flat = []
    for row in rows:
        item: dict[str, Any] = {"feature": row["feature"]}
        for key in ("weight", "standard_deviation", "standardised_weight"):
            value = row.get(key)
            if isinstance(value, list):
                item.update({f"{key}_{index}": number for index, number in enumerate(value)})
            else:
                item[key] = value
        flat.append(item)
    return pd.DataFrame(flat)


def _number(value: Any) -> float | None:
    """A report number as a float: ``"NaN"`` (how Model Monitor writes an undefined value) is NaN; None if absent."""
    if value == "NaN":
        return math.nan
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def seconds_between(start: Any, end: Any) -> float | None:
    """Seconds from ``start`` to ``end`` (datetimes or ISO strings); None when either is missing."""
    if not start or not end:
        return None
    began, ended = (item if isinstance(item, datetime) else datetime.fromisoformat(str(item)) for item in (start, end))
    return round((ended - began).total_seconds(), 3)


def steps_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The steps table (:data:`STEP_COLUMNS`); ``cache_hit`` stays None, not NaN, where no cache was hit."""
    import pandas as pd

    frame = pd.DataFrame(rows, columns=STEP_COLUMNS)
    frame["cache_hit"] = pd.Series([row["cache_hit"] for row in rows], index=frame.index, dtype=object)
    return frame


def predictions_frame(
    predictions_dir: Path, test_dir: Path, predictor_type: str, summary_dir: Path | None = None
) -> pd.DataFrame:
    """The test rows as Evaluate scored them: the row id of each (``id``, or ``file`` and ``row``: the input row it
    came from, when Preprocess's ``summary_dir`` holds the ids), label, score (one column per class for
    multiclass), predicted label.

    Reads the batch transform's ``.out`` files and the RecordIO-protobuf test shards with the reader the Evaluate
    job uses (the container library's), so the rows are exactly the ones the report was computed on, in order."""
    import pandas as pd

    from containerlib.predictions import PredictionsError, find_test_shards, load_scored

    try:
        scored = load_scored(predictions_dir, test_dir, predictor_type)
    except PredictionsError as error:
        raise NoResultsError(f"cannot read the predictions: {error}") from None
    columns: dict[str, Any] = {"label": scored.labels}
    if scored.scores.ndim == 2:
        for index in range(scored.scores.shape[1]):
            columns[f"score_{index}"] = scored.scores[:, index]
    else:
        columns["score"] = scored.scores
    if scored.predicted_labels is not None:
        columns["predicted_label"] = scored.predicted_labels
    frame = pd.DataFrame(columns)
    names = [shard.relative_to(test_dir).as_posix() for shard in find_test_shards(test_dir)]
    ids = _row_ids_frame(summary_dir, names)
    if ids is None or len(ids) != len(frame):
        return frame
    return pd.concat([ids, frame], axis=1)


def _row_ids_frame(summary_dir: Path | None, shard_names: list[str]) -> pd.DataFrame | None:
    """The row ids of the test shards' records, in their order (None when Preprocess wrote none)."""
    import pandas as pd

    from containerlib.row_ids import has_ids, ids_file

    if summary_dir is None or not has_ids(summary_dir, shard_names):
        return None
    rows: list[dict[str, Any]] = []
    for name in shard_names:
        with ids_file(summary_dir, name).open(encoding="utf-8") as lines:
            rows.extend(json.loads(line) for line in lines if line.strip())
    return pd.DataFrame(rows)


class Execution:
    """What every execution offers, local or on SageMaker; subclasses say where each piece comes from.

    ``id``, ``status``, ``failure_reason``, ``parameters`` (dict), ``steps`` (DataFrame: step, type, status,
    seconds, cache_hit), ``report`` (the ``evaluation.json`` dict or None), ``metrics`` (DataFrame), ``gate``,
    ``model_package``, ``model_path``, ``data_quality`` (the DataQuality step's baseline summary and violations),
    ``plots`` (PNG paths), ``predictions()`` (DataFrame), ``definition`` (the definition JSON it ran) and ``dag``
    (the picture of that DAG with each step's status).
    """

    backend = ""

    @property
    def id(self) -> str:
        raise NotImplementedError

    @property
    def status(self) -> str:
        raise NotImplementedError

    @property
    def failure_reason(self) -> str | None:
        raise NotImplementedError

    @property
    def parameters(self) -> dict[str, Any]:
        raise NotImplementedError

    @property
    def steps(self) -> pd.DataFrame:
        raise NotImplementedError

    @property
    def report(self) -> dict[str, Any] | None:
        raise NotImplementedError

    @property
    def model_package(self) -> dict[str, Any] | None:
        raise NotImplementedError

    @property
    def model_path(self) -> Any:
        raise NotImplementedError

    @property
    def data_quality(self) -> dict[str, Any] | None:
        """The data-quality check (:func:`pipeline.api.data_quality.data_quality_view`), None before it ran."""
        raise NotImplementedError

    @property
    def plots(self) -> list[Path]:
        raise NotImplementedError

    @property
    def scaling(self) -> list[dict[str, Any]]:
        """The scaling record of every training job (Train, each tuning trial): per host records, shards,
        records/s, compute and sync seconds, epochs; per job instances, global batch, throughput, sync share,
        imbalance, idle and slow hosts (:class:`pipeline.core.scaling.ScalingRecord`, as dicts)."""
        raise NotImplementedError

    def predictions(self) -> pd.DataFrame:
        raise NotImplementedError

    @property
    def mlflow_run(self) -> MlflowRun | None:
        """The execution's MLflow run (id, experiment, store, URL), None when it was not logged."""
        return None

    def gate_passed(self) -> bool | None:
        """The QualityGate condition's outcome, None when it did not run (yet)."""
        raise NotImplementedError

    @property
    def succeeded(self) -> bool:
        return self.status == StepStatus.SUCCEEDED

    @property
    def metrics(self) -> pd.DataFrame:
        """The model-quality metrics of the test split, with bootstrap standard deviations (:func:`metrics_frame`)."""
        return metrics_frame(self.report)

    def coefficients(self) -> pd.DataFrame:
        """The model's weight per feature (per original column, and per hash bucket of a text column) and its bias,
        on the raw and the standardised scale, largest first (:func:`coefficients_frame`)."""
        return coefficients_frame(self.report)

    @property
    def gate(self) -> dict[str, Any] | None:
        """``{"metric", "value", "threshold", "metric_threshold", "passed"}``: the gate metric against the threshold's
        floor Evaluate decided with (MetricThreshold, or the automatic floor when that is -1); None before Evaluate
        wrote its report."""
        report = self.report
        if not report:
            return None
        section = report.get(GATE) or {}
        decision = report.get(DECISION) if isinstance(report.get(DECISION), dict) else {}
        parameter = self.parameters.get(METRIC_THRESHOLD)
        return {
            "metric": section.get("metric"),
            "value": section.get("value"),
            "threshold": decision.get(THRESHOLD_FLOOR, parameter),
            "metric_threshold": parameter,
            "passed": self.gate_passed(),
        }

    @property
    def baseline(self) -> dict[str, Any] | None:
        """Linear Learner beside the scikit-learn baseline on the gate metric (:func:`baseline_view`); None before
        Evaluate wrote its report, or for a report without a baseline."""
        return baseline_view(self.report)

    @property
    def definition(self) -> dict[str, Any]:
        """The pipeline definition JSON this execution ran (as a dict)."""
        raise NotImplementedError

    @property
    def dag(self) -> Dag:
        """The picture of the DAG this execution ran, each step with its status, duration and cache source; Jupyter
        shows it as SVG, ``.write(path)`` saves it (:mod:`pipeline.api.dag`)."""
        from pipeline.api.dag import execution_dag

        return execution_dag(self.definition, self.steps, f"Execution {self.id}: {self.status}")

    def _repr_html_(self) -> str:
        from pipeline.api.html import execution_html

        return execution_html(self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id}: {self.status}>"


class LocalExecution(Execution):
    """A local execution, read from its record (``<workdir>/executions/<id>/``) and the local S3 folder."""

    backend = "local"

    def __init__(self, record: ExecutionRecord, s3: LocalS3) -> None:
        self.record = record
        self.s3 = s3

    @classmethod
    def in_workdir(cls, record: ExecutionRecord, workdir: Workdir) -> LocalExecution:
        """An execution recorded in ``workdir``, reading the work dir's local S3 folder."""
        from pipeline.local.s3 import LocalS3

        return cls(record, LocalS3(workdir.s3))

    @classmethod
    def load(cls, workdir: Workdir, execution_id: str) -> LocalExecution:
        """The execution ``execution_id`` of the work dir; ``NoResultsError`` naming it when there is none."""
        from pipeline.local.executions import ExecutionStore

        try:
            return cls.in_workdir(ExecutionStore(workdir.executions).load(execution_id), workdir)
        except KeyError as error:
            raise NoResultsError(str(error).strip("'\"")) from None

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def status(self) -> str:
        return str(self.record.status)

    @property
    def failure_reason(self) -> str | None:
        return self.record.failure_reason

    @property
    def parameters(self) -> dict[str, Any]:
        return dict(self.record.parameters)

    @property
    def steps(self) -> pd.DataFrame:
        rows = [
            {
                "step": step.name,
                "type": step.type,
                "status": str(step.status),
                "seconds": seconds_between(step.start_time, step.end_time),
                "cache_hit": step.cache_hit_source,
            }
            for step in self.record.steps.values()
        ]
        return steps_frame(rows)

    @property
    def definition(self) -> dict[str, Any]:
        """The definition saved with the record (``definition.json``)."""
        path = self.record.folder / "definition.json"
        if not path.is_file():
            raise NoResultsError(f"execution {self.id} has no definition.json in {self.record.folder}")
        return json.loads(path.read_text())

    @property
    def report_path(self) -> Path | None:
        """The ``evaluation.json`` Evaluate wrote, or None when it did not."""
        evaluate = self.record.steps.get(EVALUATE)
        uri = (evaluate.properties.get("PropertyFiles") or {}).get(REPORT_PROPERTY_FILE) if evaluate else None
        path = self.s3.path(uri) if uri else None
        return path if path is not None and path.is_file() else None

    @property
    def report(self) -> dict[str, Any] | None:
        path = self.report_path
        return json.loads(path.read_text()) if path else None

    def gate_passed(self) -> bool | None:
        decision = self.record.steps.get(QUALITY_GATE)
        if decision is None or decision.status != StepStatus.SUCCEEDED:
            return None
        return decision.properties.get("Outcome")

    @property
    def model_package(self) -> dict[str, Any] | None:
        register = self.record.steps.get(REGISTER)
        if register is None or register.status != StepStatus.SUCCEEDED:
            return None
        properties = register.properties
        return {
            "group": properties.get("ModelPackageGroupName"),
            "version": properties.get("ModelPackageVersion"),
            "arn": properties.get("ModelPackageArn"),
            "approval_status": properties.get("ModelApprovalStatus"),
        }

    @property
    def model_path(self) -> Path | None:
        """The trained ``model.tar.gz`` (the Linear Learner artifact) in the local S3 folder: the model CreateModel
        made (the Train step's artifact, or the best tuning job's), else the Train step's artifact."""
        create_model = self.record.steps.get(CREATE_MODEL)
        properties = create_model.properties if create_model else {}
        containers = [properties["PrimaryContainer"]] if properties.get("PrimaryContainer") else []
        containers += properties.get("Containers") or []  # the inference pipeline: its Linear Learner container
        container = next((c for c in containers if is_linear_learner(c.get("Image", ""))), {})
        train = self.record.steps.get(TRAIN)
        artifact = container.get("ModelDataUrl") or (
            (train.properties.get("ModelArtifacts") or {}).get("S3ModelArtifacts") if train else None
        )
        path = self.s3.path(artifact) if artifact else None
        return path if path is not None and path.is_file() else None

    @property
    def data_quality(self) -> dict[str, Any] | None:
        from pipeline.api.data_quality import data_quality_view

        step = self.record.steps.get(DATA_QUALITY)
        return data_quality_view(step.properties, self._read_json) if step else None

    @property
    def scaling(self) -> list[dict[str, Any]]:
        from pipeline.core.scaling import ScalingRecord

        return [
            {**ScalingRecord.from_dict(record).to_dict(), "step": step.name}
            for step in self.record.steps.values()
            for record in sorted(step.scaling, key=lambda record: str(record.get("job", "")))
        ]

    @property
    def mlflow_run(self) -> MlflowRun | None:
        """The run :mod:`pipeline.api.tracking` logged this execution as (``mlflow.json`` in its folder)."""
        from pipeline.api.tracking import logged_run

        return logged_run(self.record.folder)

    def _read_json(self, uri: str) -> Any:
        path = self.s3.path(uri)
        return json.loads(path.read_text()) if path.is_file() else None

    @property
    def plots(self) -> list[Path]:
        """PNG plots of the report (:mod:`pipeline.api.plots`) in ``executions/<id>/plots/``, then those of the
        data-quality violations (``plots/data-quality/``). A report is rendered once per content in the work dir's
        ``plots-cache/`` and copied (:func:`~pipeline.api._plots_cache.execution_plots`, as the end-of-run summary
        shows them); reused only while they are what the report and the plotting code gave: damaged ones are
        rendered again."""
        from pipeline.api._plots_cache import execution_plots

        report_path = self.report_path
        if not report_path:
            return self.drift_plots()
        return execution_plots(report_path, self.record.folder / "plots") + self.drift_plots()

    def drift_plots(self) -> list[Path]:
        """A plot per feature a data-quality violation names, its baseline distribution beside this run's, rendered
        once into ``executions/<id>/plots/data-quality/``."""
        from pipeline.api import drift_plots
        from pipeline.api.drift_plots import render_drift_plots
        from pipeline.core.verified import key_of, reuse_or_build

        folder = self.record.folder / "plots" / "data-quality"
        view = self.data_quality
        if not view or not view["violations"] or not view.get("checked_statistics"):
            return []
        current, baseline = self._read_json(view["statistics"]), self._read_json(view["checked_statistics"])
        key = key_of(*(json.dumps(part, sort_keys=True) for part in (current, baseline, view["violations"])))
        key = key_of(key, Path(drift_plots.__file__).read_bytes())
        return reuse_or_build(
            folder,
            key,
            lambda: render_drift_plots(current or {}, baseline or {}, view["violations"], folder),
            earlier="*.png",
        )

    def predictions(self) -> pd.DataFrame:
        """The test rows the Transform step scored: row id (``id``, or ``file`` and ``row``), label, score(s) and
        predicted label (not for regression)."""
        transform = self.record.steps.get(TRANSFORM)
        if transform is None or transform.status != StepStatus.SUCCEEDED:
            state = transform.status if transform else "absent"
            raise NoResultsError(f"execution {self.id} has no predictions: its {TRANSFORM} step is {state}")
        test_uri = transform.properties["TransformInput"]["DataSource"]["S3DataSource"]["S3Uri"]
        output_uri = transform.properties["TransformOutput"]["S3OutputPath"]
        predictor_type = str(self.record.parameters.get("PredictorType", REGRESSOR))
        preprocess = self.record.steps.get(PREPROCESS)
        outputs = preprocess.properties.get("ProcessingOutputConfig", {}).get("Outputs", []) if preprocess else []
        summary_uri = next((o["S3Output"]["S3Uri"] for o in outputs if o.get("OutputName") == "summary"), None)
        summary_dir = self.s3.path(summary_uri) if summary_uri else None
        return predictions_frame(self.s3.path(output_uri), self.s3.path(test_uri), predictor_type, summary_dir)
