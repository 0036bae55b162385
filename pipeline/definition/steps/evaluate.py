"""The Evaluate step: the model-quality report of the test split, with the gate section, the champion's values and
the scikit-learn baseline fitted on a sample of the train split."""

from __future__ import annotations

from typing import Any

from pipeline.core.names import EVALUATE, EXIT_MESSAGE_FILE, REPORT_NAME, REPORT_PROPERTY_FILE, RESOURCE_CONFIG
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
from pipeline.definition.steps.preprocess import preprocess_output

EVALUATE_PREDICTIONS_DIR = "/opt/ml/processing/input/predictions"
EVALUATE_TEST_DIR = "/opt/ml/processing/input/test"
EVALUATE_SUMMARY_DIR = "/opt/ml/processing/input/summary"
EVALUATE_ROWS_DIR = "/opt/ml/processing/input/rows"
EVALUATE_OUTPUT_DIR = "/opt/ml/processing/output/evaluation"


def evaluate_step(
    config: PipelineConfig,
    params: Parameters,
    bundle: CodeBundle,
    preprocess: Any,
    transform: Any,
    session: Any,
    model_data: Any = None,
    defaults_model: Any = None,
) -> tuple[Any, Any]:
    """The step and its report's PropertyFile; with ``model_data`` (the trained model artifact's S3 URI), the
    report also lists the model's coefficients; with ``defaults_model`` (a tuned run's untuned Train artifact),
    Evaluate also scores that model and gates the tuned one against it (evaluation/defaults.py)."""
    from sagemaker.core.workflow.properties import PropertyFile
    from sagemaker.mlops.workflow import ProcessingStep

    processor = sklearn_processor(
        config,
        bundle.entry_point,
        "evaluate",
        1,
        params.evaluation_instance_type,
        session,
        params.evaluation_volume_size_in_gb,
        isolation=False,
    )
    step_args = processor.run(
        inputs=[
            s3_input("predictions", transform.properties.TransformOutput.S3OutputPath, EVALUATE_PREDICTIONS_DIR),
            s3_input("test", preprocess_output(preprocess, "test"), EVALUATE_TEST_DIR),
            s3_input("summary", preprocess_output(preprocess, "summary"), EVALUATE_SUMMARY_DIR),
            # the raw train and test rows' bounded sample (preprocessing/raw_rows.py): the raw-column baseline
            s3_input("rows", preprocess_output(preprocess, "rows"), EVALUATE_ROWS_DIR),
            s3_input("code", bundle.s3_prefix(config.pipeline_prefix), CODE_DIR),
        ],
        outputs=[s3_output("evaluation", EVALUATE_OUTPUT_DIR, execution_uri(config, "evaluate", "evaluation"))],
        arguments=[
            "--predictions-dir",
            EVALUATE_PREDICTIONS_DIR,
            "--test-dir",
            EVALUATE_TEST_DIR,
            "--output-dir",
            EVALUATE_OUTPUT_DIR,
            "--predictor-type",
            params.predictor_type,
            "--summary-dir",
            EVALUATE_SUMMARY_DIR,
            "--rows-dir",
            EVALUATE_ROWS_DIR,
            # not an input: the job reads only the train records the baseline's sample needs, straight from S3
            "--train-uri",
            preprocess_output(preprocess, "train"),
            "--loss",
            params.loss,
            "--metric-threshold",
            params.metric_threshold.to_string(),
            "--champion-tolerance",
            params.champion_tolerance.to_string(),
            "--baseline-tolerance",
            params.baseline_tolerance.to_string(),
            "--model-package-group",
            config.model_package_group,
            "--region",
            config.region,
            "--resource-config",
            RESOURCE_CONFIG,
            "--exit-message-file",
            EXIT_MESSAGE_FILE,
            # not an input either: the job reads the model artifact (one object) for its coefficients
            *(["--model-uri", model_data] if model_data is not None else []),
            *(["--defaults-model-uri", defaults_model] if defaults_model is not None else []),
        ],
        wait=False,
        logs=False,
    )
    report = PropertyFile(name=REPORT_PROPERTY_FILE, output_name="evaluation", path=REPORT_NAME)
    # Never cached: the champion it compares with is read from the registry, which is in no cache key.
    step = ProcessingStep(name=EVALUATE, step_args=step_args, property_files=[report], **job_step_options(cache=False))
    return step, report
