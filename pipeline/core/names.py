"""Names several modules share, defined once: steps, report keys, predictor and content types, file suffixes, statuses.

The names the container jobs use too (predictor types, report keys, data file suffixes, content types, the exit
message) are defined once in the container library (``containerlib.names``, ``containerlib.content_types``,
``containerlib.exit_message``), which the jobs ship
and cannot see ``pipeline``; they are re-exported here, so ``pipeline`` takes every name from this module.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import Enum
from typing import Any

from containerlib.content_types import (  # noqa: F401 - re-exported: the one vocabulary of content types
    CSV,
    JSON,
    JSON_TEXT_TYPES,
    JSONLINES,
    RECORDIO,
    REQUEST_TYPES,
    RESPONSE_TYPES,
    TRAINING_CONTENT_TYPES,
    media_type,
)
from containerlib.exit_message import EXIT_MESSAGE_BYTES, EXIT_MESSAGE_FILE  # noqa: F401 - re-exported
from containerlib.hosts import RESOURCE_CONFIG  # noqa: F401 - re-exported: the host list of a processing instance
from containerlib.names import (  # noqa: F401 - re-exported: one definition, shared with the container jobs
    AUTOMATIC_THRESHOLD,
    BASELINE_FLOOR,
    BASELINE_SUFFIX,
    BINARY_CLASSIFIER,
    CHAMPION,
    CHAMPION_FLOOR,
    CSV_SUFFIXES,
    DATA_SUFFIXES,
    DECISION,
    FLOORS,
    GATE,
    GATE_METRICS,
    METRICS_SECTIONS,
    MODEL_DATA_URL,
    MULTICLASS_CLASSIFIER,
    PARQUET_SUFFIXES,
    PREDICTOR_TYPES,
    RAW_BASELINE,
    REGRESSOR,
    REPORT_NAME,
    SERVING_FEATURIZER,
    SERVING_LABELS,
    SERVING_PROGRAM,
    SERVING_ROLE_VARIABLE,
    SERVING_SCHEMA_FILE,
    SHARD_SUFFIX,
    SKLEARN_BASELINE,
    THRESHOLD_FLOOR,
)
from pipeline.core.errors import UsageError

# ---------------------------------------------------------------------------------------- the pipeline's steps
PREPROCESS = "Preprocess"
DATA_QUALITY = "DataQuality"  # the QualityCheck step: the data-quality baseline, checked against the approved one
TRAIN = "Train"
CREATE_MODEL = "CreateModel"
TRANSFORM = "Transform"
EVALUATE = "Evaluate"
QUALITY_GATE = "QualityGate"
REGISTER = "Register"
QUALITY_GATE_FAILED = "QualityGateFailed"
STEP_NAMES = (
    PREPROCESS,
    DATA_QUALITY,
    TRAIN,
    CREATE_MODEL,
    TRANSFORM,
    EVALUATE,
    QUALITY_GATE,
    REGISTER,
    QUALITY_GATE_FAILED,
)
TUNE = "Tune"  # the Tuning step in place of Train when the configuration turns tuning on

# ------------------------------------------------------------------------------------- evaluation.json report
REPORT_PROPERTY_FILE = "EvaluationReport"  # the Evaluate step's PropertyFile naming the report
METRIC_THRESHOLD = "MetricThreshold"  # the pipeline parameter the gate value is compared with
CHAMPION_TOLERANCE = "ChampionTolerance"  # the pipeline parameter: how much worse than the champion is acceptable
# Linear Learner's documented binary_classifier_model_selection_criteria values
SELECTION_CRITERIA = ("accuracy", "f_beta", "precision_at_target_recall", "recall_at_target_precision", "loss_function")
# the pipeline parameter: how much worse than Evaluate's scikit-learn baseline is acceptable; negative (default): off
BASELINE_TOLERANCE = "BaselineTolerance"

# ----------------------------------------------------------------------------------- the data-quality check
SKIP_DATA_QUALITY_CHECK = "SkipDataQualityCheck"  # QualityCheckStep's skip_check
REGISTER_NEW_DATA_QUALITY_BASELINE = "RegisterNewDataQualityBaseline"  # its register_new_baseline
DATA_QUALITY_SUPPLIED_STATISTICS = "DataQualitySuppliedStatistics"  # its supplied_baseline_statistics ("": none)
DATA_QUALITY_SUPPLIED_CONSTRAINTS = "DataQualitySuppliedConstraints"  # its supplied_baseline_constraints
DATA_QUALITY_CHECK_PROPERTIES = (  # the QualityCheck step's properties: S3 URIs of statistics.json/constraints.json
    "CalculatedBaselineStatistics",
    "CalculatedBaselineConstraints",
    "BaselineUsedForDriftCheckStatistics",
    "BaselineUsedForDriftCheckConstraints",
)

# ------------------------------------------------------------------------------------------- Preprocess's split
# the shares of rows in the validation and test splits: the definition's defaults and Preprocess's own (its
# --validation-fraction and --test-fraction, pinned equal by tests/contract/test_names.py)
SPLIT_FRACTIONS = {"ValidationFraction": 0.15, "TestFraction": 0.15}


def split_fractions(values: Mapping[str, Any]) -> dict[str, float]:
    """The validation and test shares a run's parameter ``values`` give (the defaults where not given)."""
    return {name: float(values.get(name, default)) for name, default in SPLIT_FRACTIONS.items()}


class StepStatus(str, Enum):
    """A step's (and an execution's) status, spelled as SageMaker Pipelines does; str-valued for JSON records."""

    PENDING = "Pending"
    EXECUTING = "Executing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    SKIPPED = "Skipped"
    STOPPED = "Stopped"

    def __str__(self) -> str:
        return self.value

    def __hash__(self) -> int:  # hash as the plain string, so a status read back from JSON finds the same dict key
        return hash(self.value)


# the members of a CreateTrainingJob request besides its name, hyperparameters and tags: what a tuning job's training
# definition passes on to each trial as it is, and what a scaling study copies from the Train step's request
TRAINING_JOB_SETTINGS = (
    "AlgorithmSpecification",
    "RoleArn",
    "InputDataConfig",
    "VpcConfig",
    "OutputDataConfig",
    "ResourceConfig",
    "StoppingCondition",
    "EnableNetworkIsolation",
    "EnableInterContainerTrafficEncryption",
    "EnableManagedSpotTraining",
    "CheckpointConfig",
    "RetryStrategy",
    "Environment",
)


# SageMaker's EndpointName and VariantName (botocore's model of CreateEndpoint / ProductionVariant): letters, digits
# and single or repeated hyphens, 1-63 characters, starting and ending with a letter or digit. Locally the name is a
# folder of the capture prefix, so a name SageMaker refuses (``../x``) is refused here too, before it is a path.
RESOURCE_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")
RESOURCE_NAME_PATTERN = "^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"


def check_resource_name(value: str, option: str) -> str:
    """``value`` if it is a valid endpoint or variant name (:data:`RESOURCE_NAME`), else a UsageError naming the
    option, the value and the pattern."""
    if not isinstance(value, str) or RESOURCE_NAME.fullmatch(value) is None:
        raise UsageError(
            f"{value!r} is not a name SageMaker takes: expected {RESOURCE_NAME_PATTERN} (letters, digits and "
            "hyphens, at most 63, no other characters)",
            option=option,
            value=value,
            expected=RESOURCE_NAME_PATTERN,
        )
    return value
