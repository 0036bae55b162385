"""The pipeline parameters the definition declares, each with its default, so scheduled executions need no input."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.core.names import (
    BASELINE_TOLERANCE,
    BINARY_CLASSIFIER,
    CHAMPION_TOLERANCE,
    DATA_QUALITY_SUPPLIED_CONSTRAINTS,
    DATA_QUALITY_SUPPLIED_STATISTICS,
    METRIC_THRESHOLD,
    PREDICTOR_TYPES,
    REGISTER_NEW_DATA_QUALITY_BASELINE,
    SELECTION_CRITERIA,
    SKIP_DATA_QUALITY_CHECK,
    SPLIT_FRACTIONS,
)
from pipeline.definition.config import PipelineConfig
from pipeline.definition.schema import default_schema_uri

DEFAULT_SELECTION_CRITERIA = "loss_function"


@dataclass(frozen=True)
class Parameters:
    """The pipeline parameters: every one has a default, so scheduled executions need no input."""

    input_data_url: Any
    data_version: Any
    processing_instance_count: Any
    processing_instance_type: Any
    training_instance_count: Any
    training_instance_type: Any
    transform_instance_type: Any
    evaluation_instance_type: Any
    predictor_type: Any
    label_column: Any
    label_values: Any
    categorical_columns: Any
    id_column: Any
    missing_values: Any
    hash_buckets: Any
    validation_fraction: Any
    test_fraction: Any
    split_seed: Any
    schema_url: Any
    feature_dim: Any
    num_classes: Any
    epochs: Any
    mini_batch_size: Any
    num_models: Any
    learning_rate: Any
    wd: Any
    l1: Any
    loss: Any
    selection_criteria: Any
    positive_example_weight_mult: Any
    metric_threshold: Any
    champion_tolerance: Any
    baseline_tolerance: Any
    model_approval_status: Any
    skip_data_quality_check: Any
    register_new_data_quality_baseline: Any
    data_quality_supplied_statistics: Any
    data_quality_supplied_constraints: Any

    @classmethod
    def create(cls, config: PipelineConfig) -> Parameters:
        """Declare the parameters (SDK objects; call inside :func:`offline_sdk`)."""
        from sagemaker.core.workflow.parameters import (
            ParameterBoolean,
            ParameterFloat,
            ParameterInteger,
            ParameterString,
        )

        return cls(
            input_data_url=ParameterString("InputDataUrl", f"{config.pipeline_prefix}/input/"),
            # a fingerprint of the data under InputDataUrl (run, start) or the scheduled time (schedule): part of
            # Preprocess's cache key, since SageMaker never looks at the data behind a cached step's S3 URIs
            data_version=ParameterString("DataVersion", ""),
            processing_instance_count=ParameterInteger("ProcessingInstanceCount", 2),
            processing_instance_type=ParameterString("ProcessingInstanceType", "ml.m5.xlarge"),
            training_instance_count=ParameterInteger("TrainingInstanceCount", 2),
            training_instance_type=ParameterString("TrainingInstanceType", "ml.m5.xlarge"),
            transform_instance_type=ParameterString("TransformInstanceType", "ml.m5.large"),
            evaluation_instance_type=ParameterString("EvaluationInstanceType", "ml.m5.large"),
            predictor_type=ParameterString(
                "PredictorType",
                BINARY_CLASSIFIER,
                enum_values=list(PREDICTOR_TYPES),
            ),
            label_column=ParameterString("LabelColumn", "label"),
            # "NEG,POS" or "A,B,C": label values mapped to 0..K-1; empty = labels already 0/1 or 0..K-1
            label_values=ParameterString("LabelValues", ""),
            # comma-separated text feature columns, feature-hashed into HashBuckets indicators each; empty = none
            categorical_columns=ParameterString("CategoricalColumns", ""),
            # split by a hash of this column (not a feature) instead of the row content; empty = none
            id_column=ParameterString("IdColumn", ""),
            missing_values=ParameterString("MissingValues", "error", enum_values=["error", "zero", "drop"]),
            hash_buckets=ParameterInteger("HashBuckets", 16),
            validation_fraction=ParameterFloat("ValidationFraction", SPLIT_FRACTIONS["ValidationFraction"]),
            test_fraction=ParameterFloat("TestFraction", SPLIT_FRACTIONS["TestFraction"]),
            split_seed=ParameterInteger("SplitSeed", 0),
            # the schema JSON the client decided (feature order, categorical columns, label values); the default is
            # the built-in schema that decides nothing (a ProcessingInput needs an object, never an empty URI)
            schema_url=ParameterString("SchemaUrl", default_schema_uri(config.pipeline_prefix)),
            feature_dim=ParameterString("FeatureDim", "auto"),
            # Linear Learner ignores num_classes unless predictor_type is multiclass_classifier
            num_classes=ParameterInteger("NumClasses", 3),
            epochs=ParameterInteger("Epochs", 15),
            mini_batch_size=ParameterInteger("MiniBatchSize", 1000),
            num_models=ParameterString("NumModels", "auto"),
            learning_rate=ParameterString("LearningRate", "auto"),
            wd=ParameterString("Wd", "auto"),
            l1=ParameterString("L1", "auto"),
            loss=ParameterString("Loss", "auto"),
            # how the best of the parallel models is picked (binary classifiers): by validation loss, which never
            # ties and ranks like AUC, the gate metric; the service's own default, accuracy, ties on imbalanced data
            selection_criteria=ParameterString(
                "BinaryClassifierModelSelectionCriteria",
                DEFAULT_SELECTION_CRITERIA,
                enum_values=list(SELECTION_CRITERIA),
            ),
            # a number, "balanced" (negatives / positives) or "auto"; binary classifiers only
            positive_example_weight_mult=ParameterString("PositiveExampleWeightMult", "1.0"),
            metric_threshold=ParameterFloat(METRIC_THRESHOLD, 0.6),
            # how much worse than the approved champion (same test split, same metric) a new model may be
            champion_tolerance=ParameterFloat(CHAMPION_TOLERANCE, 0.0),
            # how much worse than Evaluate's scikit-learn baseline (same test split) a new model may be; negative: off
            baseline_tolerance=ParameterFloat(BASELINE_TOLERANCE, -1.0),
            model_approval_status=ParameterString(
                "ModelApprovalStatus",
                "PendingManualApproval",
                enum_values=["PendingManualApproval", "Approved", "Rejected"],
            ),
            # the data-quality check against the latest approved version's baseline (DriftCheckBaselines): skip it,
            # or register this run's baseline as the one later runs are checked against; "" supplies none
            skip_data_quality_check=ParameterBoolean(name=SKIP_DATA_QUALITY_CHECK, default_value=False),
            register_new_data_quality_baseline=ParameterBoolean(
                name=REGISTER_NEW_DATA_QUALITY_BASELINE, default_value=False
            ),
            data_quality_supplied_statistics=ParameterString(DATA_QUALITY_SUPPLIED_STATISTICS, ""),
            data_quality_supplied_constraints=ParameterString(DATA_QUALITY_SUPPLIED_CONSTRAINTS, ""),
        )

    def all(self) -> list[Any]:
        """Every parameter, in declaration order (the order the definition lists them)."""
        return [getattr(self, name) for name in self.__dataclass_fields__]
