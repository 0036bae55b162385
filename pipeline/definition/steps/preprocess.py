"""The Preprocess step: the processing job that splits, hashes and shards the input into RecordIO-protobuf."""

from __future__ import annotations

from typing import Any

from pipeline.core.names import EXIT_MESSAGE_FILE, PREPROCESS, RESOURCE_CONFIG
from pipeline.definition.code_bundles import CodeBundle
from pipeline.definition.config import PipelineConfig
from pipeline.definition.declared import Parameters
from pipeline.definition.steps.common import (
    CODE_DIR,
    execution_uri,
    job_step_options,
    s3_input,
    s3_output,
    sklearn_processor,
)

PREPROCESS_INPUT_DIR = "/opt/ml/processing/input/data"
PREPROCESS_OUTPUT_DIR = "/opt/ml/processing/output"
PREPROCESS_OUTPUTS = ("train", "validation", "test", "summary", "baseline", "model", "rows")  # baseline: raw rows
# for DataQuality; model: the serving featurizer's model data (schema and summary); rows: a bounded sample of the raw
# train and test rows, for Evaluate's raw-column baseline
PREPROCESS_SCHEMA_DIR = "/opt/ml/processing/input/schema"


def preprocess_step(config: PipelineConfig, params: Parameters, bundle: CodeBundle, session: Any) -> Any:
    from sagemaker.core.workflow.functions import Join
    from sagemaker.mlops.workflow import ProcessingStep

    processor = sklearn_processor(
        config,
        bundle.entry_point,
        "preprocess",
        params.processing_instance_count,
        params.processing_instance_type,
        session,
        params.processing_volume_size_in_gb,
    )
    step_args = processor.run(
        inputs=[
            s3_input("data", params.input_data_url, PREPROCESS_INPUT_DIR, distribution="ShardedByS3Key"),
            s3_input("code", bundle.s3_prefix(config.pipeline_prefix), CODE_DIR),
            s3_input("schema", params.schema_url, PREPROCESS_SCHEMA_DIR),
        ],
        outputs=[
            s3_output(name, f"{PREPROCESS_OUTPUT_DIR}/{name}", execution_uri(config, "preprocess", name))
            for name in PREPROCESS_OUTPUTS
        ],
        arguments=[
            "--input-dir",
            PREPROCESS_INPUT_DIR,
            # the S3 URI the input came from: errors name s3://.../d.csv row 7, not the file's path in the container
            "--input-source",
            params.input_data_url,
            "--output-dir",
            PREPROCESS_OUTPUT_DIR,
            "--label-column",
            params.label_column,
            "--predictor-type",
            params.predictor_type,
            "--feature-dim",
            params.feature_dim,
            "--schema",
            PREPROCESS_SCHEMA_DIR,
            # one argument with "=", so an empty default never becomes an empty container argument
            Join(on="", values=["--label-values=", params.label_values]),
            Join(on="", values=["--categorical-columns=", params.categorical_columns]),
            Join(on="", values=["--id-column=", params.id_column]),
            "--missing",
            params.missing_values,
            "--hash-buckets",
            params.hash_buckets.to_string(),
            "--validation-fraction",
            params.validation_fraction.to_string(),
            "--test-fraction",
            params.test_fraction.to_string(),
            "--seed",
            params.split_seed.to_string(),
            Join(on="", values=["--data-version=", params.data_version]),
            "--train-shards",
            params.training_instance_count.to_string(),
            # as many validation shards as training instances: Train deals them between its hosts (ShardedByS3Key)
            "--validation-shards",
            params.training_instance_count.to_string(),
            "--resource-config",
            RESOURCE_CONFIG,
            # why the job failed, also in DescribeProcessingJob's ExitMessage (not only in its CloudWatch log)
            "--exit-message-file",
            EXIT_MESSAGE_FILE,
        ],
        wait=False,
        logs=False,
    )
    return ProcessingStep(name=PREPROCESS, step_args=step_args, **job_step_options())


def preprocess_output(preprocess: Any, name: str) -> Any:
    return preprocess.properties.ProcessingOutputConfig.Outputs[name].S3Output.S3Uri
