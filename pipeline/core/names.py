"""Names several modules share, defined once: steps, report keys, predictor and content types, file suffixes, statuses.

The container scripts (``preprocessing/``, ``evaluation/``) cannot import ``pipeline``: they keep their own copies,
which ``tests/test_names.py`` pins equal to these.
"""

from __future__ import annotations

from enum import Enum

# ---------------------------------------------------------------------------------------- the pipeline's steps
PREPROCESS = "Preprocess"
TRAIN = "Train"
CREATE_MODEL = "CreateModel"
TRANSFORM = "Transform"
EVALUATE = "Evaluate"
QUALITY_GATE = "QualityGate"
REGISTER = "Register"
QUALITY_GATE_FAILED = "QualityGateFailed"
STEP_NAMES = (PREPROCESS, TRAIN, CREATE_MODEL, TRANSFORM, EVALUATE, QUALITY_GATE, REGISTER, QUALITY_GATE_FAILED)
TUNE = "Tune"  # the Tuning step in place of Train when the configuration turns tuning on

# ------------------------------------------------------------------------------------- evaluation.json report
REPORT_NAME = "evaluation.json"
REPORT_PROPERTY_FILE = "EvaluationReport"  # the Evaluate step's PropertyFile naming the report
GATE = "gate"  # the report's gate section: {"metric": name, "value": v}, higher is better
METRIC_THRESHOLD = "MetricThreshold"  # the pipeline parameter the gate value is compared with
CHAMPION = "champion"  # the report's approved champion scored on the same test split (null when there is none)
DECISION = "decision"  # the report's gate decision: promote, values, champion_floor, reason
CHAMPION_FLOOR = "champion_floor"  # decision field: the champion's value minus the tolerance
CHAMPION_TOLERANCE = "ChampionTolerance"  # the pipeline parameter: how much worse than the champion is acceptable

# ----------------------------------------------------------------------------------------- predictor types
BINARY_CLASSIFIER = "binary_classifier"
MULTICLASS_CLASSIFIER = "multiclass_classifier"
REGRESSOR = "regressor"
PREDICTOR_TYPES = (BINARY_CLASSIFIER, MULTICLASS_CLASSIFIER, REGRESSOR)
# the report's model-quality section and the gate metric per predictor type
METRICS_SECTIONS = {
    BINARY_CLASSIFIER: "binary_classification_metrics",
    MULTICLASS_CLASSIFIER: "multiclass_classification_metrics",
    REGRESSOR: "regression_metrics",
}
GATE_METRICS = {BINARY_CLASSIFIER: "auc", MULTICLASS_CLASSIFIER: "accuracy", REGRESSOR: "r2"}
BASELINE_SUFFIX = "_best_constant_classifier"  # the report's baseline of each classification metric

# ------------------------------------------------------------------------------------------- content types
RECORDIO = "application/x-recordio-protobuf"
CSV = "text/csv"
JSON = "application/json"
JSONLINES = "application/jsonlines"
TRAINING_CONTENT_TYPES = (RECORDIO, CSV)  # what Linear Learner reads


def media_type(content_type: str) -> str:
    """A content type without its parameters: ``text/csv;label_size=1`` -> ``text/csv``."""
    return content_type.split(";")[0].strip()


# ------------------------------------------------------------------------------------------- Preprocess's split
# the shares of rows in the validation and test splits: the definition's defaults and Preprocess's own (its
# --validation-fraction and --test-fraction, pinned equal by tests/test_names.py)
SPLIT_FRACTIONS = {"ValidationFraction": 0.15, "TestFraction": 0.15}

# ----------------------------------------------------------------------------------------- data file suffixes
CSV_SUFFIXES = (".csv", ".csv.gz")
PARQUET_SUFFIXES = (".parquet", ".pq")
DATA_SUFFIXES = CSV_SUFFIXES + PARQUET_SUFFIXES  # tabular input of `llpipe run --data`, convert and Preprocess
SHARD_SUFFIX = ".pbr"  # a RecordIO-protobuf shard

# -------------------------------------------------------------- a processing container's exit message and hosts
EXIT_MESSAGE_FILE = "/opt/ml/output/message"  # what a container writes; DescribeProcessingJob's ExitMessage shows it
EXIT_MESSAGE_BYTES = 1024  # ExitMessage: the first 1 KB of every instance's message, concatenated
RESOURCE_CONFIG_FILE = "/opt/ml/config/resourceconfig.json"  # the host list SageMaker gives each processing instance


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
