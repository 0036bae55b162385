"""Names the container jobs and the pipeline share, defined once (``pipeline.names`` re-exports them)."""

from __future__ import annotations

# ----------------------------------------------------------------------------------------- predictor types
BINARY_CLASSIFIER = "binary_classifier"
MULTICLASS_CLASSIFIER = "multiclass_classifier"
REGRESSOR = "regressor"
PREDICTOR_TYPES = (BINARY_CLASSIFIER, MULTICLASS_CLASSIFIER, REGRESSOR)

# ------------------------------------------------------------------------------------- evaluation.json report
REPORT_NAME = "evaluation.json"
GATE = "gate"  # the report's gate section: {"metric": name, "value": v}, higher is better
CHAMPION = "champion"  # the report's approved champion scored on the same test split (null when there is none)
RAW_BASELINE = "baseline_raw_columns"  # the report's scikit-learn model on the raw columns (evaluation/raw_baseline.py)
SKLEARN_BASELINE = "baseline"  # the report's scikit-learn baseline on the same test records (evaluation/baseline.py)
BASELINE_FLOOR = "baseline_floor"  # decision field: the baseline's value minus BaselineTolerance
DECISION = "decision"  # the report's gate decision: promote, values, champion_floor, reason
CHAMPION_FLOOR = "champion_floor"  # decision field: the champion's value minus the tolerance
THRESHOLD_FLOOR = "threshold_floor"  # decision field: MetricThreshold, or the automatic floor when it is AUTOMATIC
AUTOMATIC_THRESHOLD = -1.0  # MetricThreshold's default: the gate's automatic floor (evaluation/floor.py)
MODEL_DATA_URL = "model_data_url"  # decision field of a tuned run: the kept model's artifact (Register reads it)
FLOORS = "floors"  # decision field: the two floors in words, saying what each is (the Fail step's message)
# the report's model-quality section and the gate metric per predictor type; each gate metric is "higher is
# better", so one Condition (>=) serves all three
METRICS_SECTIONS = {
    BINARY_CLASSIFIER: "binary_classification_metrics",
    MULTICLASS_CLASSIFIER: "multiclass_classification_metrics",
    REGRESSOR: "regression_metrics",
}
GATE_METRICS = {BINARY_CLASSIFIER: "auc", MULTICLASS_CLASSIFIER: "accuracy", REGRESSOR: "r2"}
BASELINE_SUFFIX = "_best_constant_classifier"  # the report's baseline of each classification metric

# ----------------------------------------------------------------------------------------- data files
CSV_SUFFIXES = (".csv", ".csv.gz")
PARQUET_SUFFIXES = (".parquet", ".pq")
DATA_SUFFIXES = CSV_SUFFIXES + PARQUET_SUFFIXES  # tabular input: `llpipe run --data`, schema sampling, Preprocess
SHARD_SUFFIX = ".pbr"  # a RecordIO-protobuf shard
PREDICTIONS_SUFFIX = ".out"  # batch transform's output for input object F: F.out (jsonlines)

# ----------------------------------------------------------------------------------------- documents
SCHEMA_FORMAT = "llpipe-schema/1"  # the schema the client decides and Preprocess reads
SUMMARY_FORMAT = "llpipe-preprocess-summary/1"  # Preprocess's summary
SPLITS = ("train", "validation", "test")  # Preprocess's output folders, in split-code order
SPLIT_CODES = {name: code for code, name in enumerate(SPLITS)}  # a split's code in the raw rows' hash

# ----------------------------------------------------------------------------------------- serving
# the featurizer's model data (Preprocess writes it as model/model.tar.gz, the serving containers read it)
SERVING_SCHEMA_FILE = "schema.json"
SERVING_SUMMARY_FILE = "summary.json"
SERVING_PROGRAM = "inference.py"  # the serving bundle's handler script (SAGEMAKER_PROGRAM)
SERVING_ROLE_VARIABLE = "LLPIPE_SERVING_ROLE"  # which of the two script containers a container is
SERVING_FEATURIZER = "featurizer"
SERVING_LABELS = "labels"
# what the featurizer does with a text value outside a one-hot column's vocabulary: score it as column=(other) or
# answer 400; its container's setting (the pipeline parameter UnseenCategories on the registered version)
UNSEEN_OTHER, UNSEEN_REFUSE = "other", "refuse"
UNSEEN_CHOICES = (UNSEEN_OTHER, UNSEEN_REFUSE)
UNSEEN_VARIABLE = "LLPIPE_UNSEEN_CATEGORIES"
