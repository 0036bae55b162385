"""The pipeline parameters, one row each: the single place a parameter is described.

From this table come the SDK declarations (``declared.Parameters``), the range checks of overrides
(``parameters.check_ranges``), the local preflight's hyperparameter check (a row names the Linear Learner
hyperparameter it feeds), ``llpipe definition --params`` and ``docs/reference/parameters.md``. Adding a parameter is
one row here plus its use in the step builder that reads it (``params.<snake_case name>``).

The order of the rows is the order the definition declares the parameters in: definition JSON and cache keys
depend on it, so a new row goes at the end.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from containerlib.names import UNSEEN_CHOICES, UNSEEN_VARIABLE
from pipeline.core.names import (
    BASELINE_TOLERANCE,
    BINARY_CLASSIFIER,
    CHAMPION_TOLERANCE,
    DATA_QUALITY,
    DATA_QUALITY_SUPPLIED_CONSTRAINTS,
    DATA_QUALITY_SUPPLIED_STATISTICS,
    EVALUATE,
    METRIC_THRESHOLD,
    PREDICTOR_TYPES,
    PREPROCESS,
    QUALITY_GATE_FAILED,
    REGISTER,
    REGISTER_NEW_DATA_QUALITY_BASELINE,
    SELECTION_CRITERIA,
    SKIP_DATA_QUALITY_CHECK,
    SPLIT_FRACTIONS,
    TRAIN,
    TRANSFORM,
)
from pipeline.definition.schema import default_schema_uri

PARAMETER_TYPES = ("String", "Integer", "Float", "Boolean")


class Configured(Protocol):
    """What a configuration-dependent default reads of the configuration (``PipelineConfig`` has it)."""

    @property
    def pipeline_prefix(self) -> str: ...


@dataclass(frozen=True)
class Range:
    """The numbers a parameter takes: from ``low`` to ``high`` (None: no upper bound), bounds included if ``closed``."""

    low: float
    high: float | None = None
    closed: bool = True

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in the range; NaN never does."""
        if value != value:
            return False
        above = value >= self.low if self.closed else value > self.low
        below = self.high is None or (value <= self.high if self.closed else value < self.high)
        return above and below

    def describe(self) -> str:
        """``at least 1 and at most 65,536``, ``greater than 0 and less than 1``."""
        if self.closed:
            return f"at least {self.low:,}" + (f" and at most {self.high:,}" if self.high is not None else "")
        return f"greater than {self.low}" + (f" and less than {self.high}" if self.high is not None else "")


@dataclass(frozen=True)
class Feed:
    """One place the definition passes a parameter to: a step and what of it (``kind``: ``hyperparameter``,
    ``argument`` of the step's container, or a ``setting`` of its request)."""

    step: str
    kind: str
    target: str

    def describe(self) -> str:
        """``Train hyperparameter epochs``, ``Preprocess --label-column``, ``Train InstanceCount``."""
        return f"{self.step} {'hyperparameter ' if self.kind == 'hyperparameter' else ''}{self.target}"


def hyperparameter(name: str) -> Feed:
    """The Train step's Linear Learner hyperparameter ``name`` (the service's spelling)."""
    return Feed(TRAIN, "hyperparameter", name)


def argument(step: str, flag: str) -> Feed:
    """A command-line argument of ``step``'s container (Preprocess, Evaluate)."""
    return Feed(step, "argument", flag)


def setting(step: str, field: str) -> Feed:
    """A field of ``step``'s request, e.g. ``InstanceCount``, ``InstanceType``, ``ModelApprovalStatus``."""
    return Feed(step, "setting", field)


Default = Any  # a value of the parameter's type, or a function of the configuration giving one


@dataclass(frozen=True)
class PipelineParameter:
    """One pipeline parameter: what the definition declares, which values it takes, what it is for, what it feeds."""

    name: str
    type: str  # String, Integer, Float or Boolean: the SDK parameter class and the type overrides are converted to
    default: Default
    help: str  # one line
    feeds: tuple[Feed, ...]
    enum: tuple[str, ...] = ()
    range: Range | None = None

    @property
    def attribute(self) -> str:
        """The name step builders read it by: ``Epochs`` -> ``epochs``, ``InputDataUrl`` -> ``input_data_url``."""
        return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", self.name).lower()

    @property
    def hyperparameter(self) -> str | None:
        """The Linear Learner hyperparameter it feeds, if any (its value rule is that hyperparameter's)."""
        return next((feed.target for feed in self.feeds if feed.kind == "hyperparameter"), None)

    def default_for(self, config: Configured) -> Any:
        """The default value under ``config`` (most defaults do not depend on it)."""
        return self.default(config) if callable(self.default) else self.default

    def declare(self, config: Configured) -> Any:
        """The SDK v3 parameter object (call inside ``offline_sdk``)."""
        from sagemaker.core.workflow import parameters as sdk

        kind: Callable[..., Any] = getattr(sdk, f"Parameter{self.type}")
        extra = {"enum_values": list(self.enum)} if self.enum else {}
        return kind(name=self.name, default_value=self.default_for(config), **extra)


TABLE: tuple[PipelineParameter, ...] = (
    PipelineParameter(
        "InputDataUrl",
        "String",
        lambda config: f"{config.pipeline_prefix}/input/",
        "the S3 prefix of the CSV/Parquet input (`llpipe run` stages its data there)",
        (setting(PREPROCESS, "ProcessingInputs"), argument(PREPROCESS, "--input-source")),
    ),
    PipelineParameter(
        "DataVersion",
        "String",
        "",
        "a fingerprint of the input (run, start) or the scheduled time (schedule): new data means no cache hit",
        (argument(PREPROCESS, "--data-version"),),
    ),
    PipelineParameter(
        "ProcessingInstanceCount",
        "Integer",
        2,
        "Preprocess instances (each reads its share of the input objects)",
        (setting(PREPROCESS, "InstanceCount"),),
        range=Range(1),
    ),
    PipelineParameter(
        "ProcessingInstanceType",
        "String",
        "ml.m5.xlarge",
        "the instance type of Preprocess and DataQuality",
        (setting(PREPROCESS, "InstanceType"), setting(DATA_QUALITY, "InstanceType")),
    ),
    PipelineParameter(
        "TrainingInstanceCount",
        "Integer",
        2,
        "training instances (data parallel; Preprocess writes one train shard per instance)",
        (setting(TRAIN, "InstanceCount"), argument(PREPROCESS, "--train-shards")),
        range=Range(1),
    ),
    PipelineParameter(
        "TrainingInstanceType",
        "String",
        "ml.m5.xlarge",
        "the instance type of the training job",
        (setting(TRAIN, "InstanceType"),),
    ),
    PipelineParameter(
        "TransformInstanceType",
        "String",
        "ml.m5.large",
        "the instance type of the batch transform of the test split",
        (setting(TRANSFORM, "InstanceType"),),
    ),
    PipelineParameter(
        "EvaluationInstanceType",
        "String",
        "ml.m5.large",
        "the instance type of Evaluate",
        (setting(EVALUATE, "InstanceType"),),
    ),
    PipelineParameter(
        "PredictorType",
        "String",
        BINARY_CLASSIFIER,
        "what to train: a binary or multiclass classifier or a regressor",
        (
            hyperparameter("predictor_type"),
            argument(PREPROCESS, "--predictor-type"),
            argument(EVALUATE, "--predictor-type"),
        ),
        enum=PREDICTOR_TYPES,
    ),
    PipelineParameter(
        "LabelColumn",
        "String",
        "label",
        "the column holding the label",
        (argument(PREPROCESS, "--label-column"),),
    ),
    PipelineParameter(
        "LabelValues",
        "String",
        "",
        'labels mapped to 0..K-1 in this order ("NEG,POS", "A,B,C"); empty: labels already 0/1 or 0..K-1',
        (argument(PREPROCESS, "--label-values"),),
    ),
    PipelineParameter(
        "CategoricalColumns",
        "String",
        "",
        "comma-separated text columns: one-hot up to 200 distinct values in the schema sample (unseen values: "
        "column=(other)), feature-hashed above; empty: decided by schema inference",
        (argument(PREPROCESS, "--categorical-columns"),),
    ),
    PipelineParameter(
        "IdColumn",
        "String",
        "",
        "split by a hash of this column (not a feature) instead of the row content; empty: none",
        (argument(PREPROCESS, "--id-column"),),
    ),
    PipelineParameter(
        "MissingValues",
        "String",
        "impute",
        "empty/NaN/inf values: the train sample's median and a column=(missing) feature (impute; rows without a label "
        "dropped), fail (error), 0 for features (zero) or drop the rows (drop)",
        (argument(PREPROCESS, "--missing"),),
        enum=("impute", "error", "zero", "drop"),
    ),
    PipelineParameter(
        "HashBuckets",
        "Integer",
        0,
        "0: each text column one-hot or hashed as schema inference decides; N: every text column feature-hashed into "
        "N indicators",
        (argument(PREPROCESS, "--hash-buckets"),),
        range=Range(0, 1 << 16),
    ),
    PipelineParameter(
        "ValidationFraction",
        "Float",
        SPLIT_FRACTIONS["ValidationFraction"],
        "the share of rows in the validation split (model selection, early stopping)",
        (argument(PREPROCESS, "--validation-fraction"),),
        range=Range(0, 1, closed=False),
    ),
    PipelineParameter(
        "TestFraction",
        "Float",
        SPLIT_FRACTIONS["TestFraction"],
        "the share of rows in the test split (Evaluate scores it)",
        (argument(PREPROCESS, "--test-fraction"),),
        range=Range(0, 1, closed=False),
    ),
    PipelineParameter(
        "SplitSeed",
        "Integer",
        0,
        "seeds the split and the shuffles (any 64-bit integer, negative ones too)",
        (argument(PREPROCESS, "--seed"),),
        range=Range(-(2**63), 2**63 - 1),
    ),
    PipelineParameter(
        "SchemaUrl",
        "String",
        # the built-in schema that decides nothing (a ProcessingInput needs an object, never an empty URI)
        lambda config: default_schema_uri(config.pipeline_prefix),
        "the schema JSON decided before the run (feature order, categorical columns, label values)",
        (setting(PREPROCESS, "ProcessingInputs"),),
    ),
    PipelineParameter(
        "FeatureDim",
        "String",
        "auto",
        "the number of features; auto: taken from the data",
        (hyperparameter("feature_dim"), argument(PREPROCESS, "--feature-dim")),
    ),
    PipelineParameter(
        "NumClasses",
        "Integer",
        3,
        "the number of classes (multiclass_classifier only; ignored otherwise)",
        (hyperparameter("num_classes"),),
    ),
    PipelineParameter("Epochs", "Integer", 15, "passes over the training data", (hyperparameter("epochs"),)),
    PipelineParameter(
        "MiniBatchSize",
        "Integer",
        1000,
        "records per mini-batch on each instance",
        (hyperparameter("mini_batch_size"),),
    ),
    PipelineParameter(
        "NumModels", "String", "auto", "models trained in parallel, the best kept", (hyperparameter("num_models"),)
    ),
    PipelineParameter(
        "LearningRate", "String", "auto", "the optimizer's step size", (hyperparameter("learning_rate"),)
    ),
    PipelineParameter("Wd", "String", "auto", "L2 regularisation (weight decay)", (hyperparameter("wd"),)),
    PipelineParameter("L1", "String", "auto", "L1 regularisation", (hyperparameter("l1"),)),
    PipelineParameter(
        "Loss",
        "String",
        "auto",
        "the loss function (auto: logistic, softmax_loss or squared_loss by predictor type)",
        (hyperparameter("loss"), argument(EVALUATE, "--loss")),
    ),
    PipelineParameter(
        "BinaryClassifierModelSelectionCriteria",
        "String",
        # validation loss never ties and ranks like AUC, the gate metric; the service's default, accuracy, ties on
        # imbalanced data
        "loss_function",
        "how the best of the parallel models is picked (binary classifiers)",
        (hyperparameter("binary_classifier_model_selection_criteria"),),
        enum=SELECTION_CRITERIA,
    ),
    PipelineParameter(
        "PositiveExampleWeightMult",
        "String",
        "1.0",
        "the weight of positive examples: a number, balanced (negatives / positives) or auto; binary classifiers",
        (hyperparameter("positive_example_weight_mult"),),
    ),
    PipelineParameter(
        METRIC_THRESHOLD,
        "Float",
        -1.0,
        "the gate: the model registers when its gate metric (auc, accuracy or r2) reaches this; -1: the automatic "
        "floor, better than the best constant predictor and no worse than the scikit-learn baseline by more than 2 "
        "standard deviations",
        (
            argument(EVALUATE, "--metric-threshold"),
            setting(QUALITY_GATE_FAILED, "ErrorMessage"),
        ),
    ),
    PipelineParameter(
        CHAMPION_TOLERANCE,
        "Float",
        0.0,
        "how much worse than the approved champion (same test split, same metric) a new model may be",
        (argument(EVALUATE, "--champion-tolerance"),),
        range=Range(0),
    ),
    PipelineParameter(
        BASELINE_TOLERANCE,
        "Float",
        -1.0,
        "how much worse than Evaluate's scikit-learn baseline a new model may be; negative: not checked",
        (argument(EVALUATE, "--baseline-tolerance"),),
    ),
    PipelineParameter(
        "ModelApprovalStatus",
        "String",
        "PendingManualApproval",
        "the status the registered model version gets",
        (setting(REGISTER, "ModelApprovalStatus"),),
        enum=("PendingManualApproval", "Approved", "Rejected"),
    ),
    PipelineParameter(
        SKIP_DATA_QUALITY_CHECK,
        "Boolean",
        False,
        "skip the data-quality check against the latest approved version's baseline",
        (setting(DATA_QUALITY, "SkipCheck"),),
    ),
    PipelineParameter(
        REGISTER_NEW_DATA_QUALITY_BASELINE,
        "Boolean",
        False,
        "register this run's data-quality baseline as the one later runs are checked against",
        (setting(DATA_QUALITY, "RegisterNewBaseline"),),
    ),
    PipelineParameter(
        DATA_QUALITY_SUPPLIED_STATISTICS,
        "String",
        "",
        "check against this statistics.json S3 URI instead of the approved version's; empty: none",
        (setting(DATA_QUALITY, "SuppliedBaselineStatistics"),),
    ),
    PipelineParameter(
        DATA_QUALITY_SUPPLIED_CONSTRAINTS,
        "String",
        "",
        "check against this constraints.json S3 URI instead of the approved version's; empty: none",
        (setting(DATA_QUALITY, "SuppliedBaselineConstraints"),),
    ),
    # the sizes below are set from the input's size by run, start and schedule (pipeline/core/sizing.py) unless given;
    # the defaults are those of small data
    PipelineParameter(
        "ProcessingVolumeSizeInGB",
        "Integer",
        30,
        "the storage volume of each Preprocess instance (its share of the input, its outputs and spill files) and of "
        "DataQuality",
        (setting(PREPROCESS, "VolumeSizeInGB"), setting(DATA_QUALITY, "VolumeSizeInGB")),
        range=Range(1, 16384),
    ),
    PipelineParameter(
        "TrainingVolumeSizeInGB",
        "Integer",
        30,
        "the storage volume of each training instance (in File mode: its share of the train and validation channels)",
        (setting(TRAIN, "VolumeSizeInGB"),),
        range=Range(1, 16384),
    ),
    PipelineParameter(
        "TrainingInputMode",
        "String",
        "Pipe",
        "how the train channel reaches the instances: streamed, dealt afresh every epoch (Pipe), or downloaded (File)",
        (setting(TRAIN, "InputMode"),),
        enum=("Pipe", "File"),
    ),
    PipelineParameter(
        "TransformInstanceCount",
        "Integer",
        1,
        "batch transform instances (each scores its share of the test shards)",
        (setting(TRANSFORM, "InstanceCount"),),
        range=Range(1, 100),
    ),
    PipelineParameter(
        "EvaluationVolumeSizeInGB",
        "Integer",
        30,
        "the storage volume of Evaluate (the test split and its predictions)",
        (setting(EVALUATE, "VolumeSizeInGB"),),
        range=Range(1, 16384),
    ),
    PipelineParameter(
        "UnseenCategories",
        "String",
        "other",
        "a text value never seen in training, in a request to the registered model: scored as column=(other) and "
        "named in its answer (other), or answered 400 naming column and value (refuse)",
        (setting(REGISTER, UNSEEN_VARIABLE),),  # the registered featurizer container's environment
        enum=UNSEEN_CHOICES,
    ),
)

BY_NAME: dict[str, PipelineParameter] = {row.name: row for row in TABLE}


# ------------------------------------------------------------------------------------------------ the reference


def defaults() -> dict[str, Any]:
    """Every parameter's default that does not depend on the configuration, by name (what the capacity plan and
    the sizing start from, so they hold no copy of a default)."""
    return {row.name: row.default for row in TABLE if not callable(row.default)}


def allowed(row: PipelineParameter, rules: Mapping[str, str]) -> str:
    """What values ``row`` takes, in words: its enum, its range, or the rule of the hyperparameter it feeds
    (``rules``: hyperparameter -> allowed text, from the Linear Learner wing, which this one cannot import)."""
    if row.enum:
        return ", ".join(row.enum)
    if row.range is not None:
        return row.range.describe()
    if row.hyperparameter:
        return rules.get(row.hyperparameter, f"what {row.hyperparameter} takes")
    return {"Boolean": "true or false", "String": "any text"}.get(row.type, "any number")


EMPTY = "(empty)"


def shown(value: Any) -> str:
    """A default as a user types it: ``false``, ``0.15``, ``(empty)``."""
    if isinstance(value, bool):
        return str(value).lower()
    return EMPTY if value == "" else str(value)


@dataclass(frozen=True)
class Placeholders:
    """A configuration for the reference: the defaults that depend on it read ``s3://<bucket>/<pipeline>``."""

    pipeline_prefix: str = "s3://<bucket>/<pipeline>"


def described(config: Configured, rules: Mapping[str, str]) -> list[dict[str, str]]:
    """Each parameter as text, in declaration order: name, type, default, allowed, help, feeds."""
    return [
        {
            "name": row.name,
            "type": row.type,
            "default": shown(row.default_for(config)),
            "allowed": allowed(row, rules),
            "help": row.help,
            "feeds": ", ".join(feed.describe() for feed in row.feeds),
        }
        for row in TABLE
    ]


REFERENCE_HEADER = """# Pipeline parameters

Generated from `pipeline/definition/parameter_table.py` by `python -m pipeline.api.parameters >
docs/reference/parameters.md`: edit the table, not this file. Every parameter has a default, so scheduled
executions need no input; override one per run with `llpipe run/start/schedule --param Name=Value` or as a keyword
argument of `pipeline.run_local` / `pipeline.start`.

"""


def markdown(rules: Mapping[str, str]) -> str:
    """The parameter reference as Markdown: one table row per parameter, in declaration order."""
    lines = ["| parameter | type | default | allowed | what | feeds |", "| --- | --- | --- | --- | --- | --- |"]
    for item in described(Placeholders(), rules):
        default = "empty" if item["default"] == EMPTY else f"`{item['default']}`"
        cells = [
            f"`{item['name']}`",
            item["type"],
            default,
            item["allowed"],
            item["help"],
            item["feeds"],
        ]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return REFERENCE_HEADER + "\n".join(lines) + "\n"
