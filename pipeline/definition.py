"""The Linear Learner pipeline, defined once with the SageMaker Python SDK v3 and built offline.

Preprocess -> Train -> CreateModel -> Transform -> Evaluate -> QualityGate -> Register | QualityGateFailed.
Evaluate also scores the approved champion on the same test split; the gate registers a model that clears
MetricThreshold and is no worse than the champion by more than ChampionTolerance.
With ``tuning_max_jobs`` > 0 a Tuning step named ``Tune`` replaces Train and the model is its best training job's.
:func:`build_definition` gives the definition JSON (byte-identical on every build) and the code bundles ``upsert``
must upload first; the local backend interprets the same JSON. :func:`get_pipeline` gives the SDK ``Pipeline``.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.code_bundles import REPOSITORY_ROOT, CodeBundle, repository_bundle
from pipeline.config import PipelineConfig, load_config
from pipeline.definition_cache import cached_definition
from pipeline.images import DEFAULT_PROCESSING_IMAGE
from pipeline.names import (
    BINARY_CLASSIFIER,
    CHAMPION_FLOOR,
    CHAMPION_TOLERANCE,
    CREATE_MODEL,
    CSV,
    DECISION,
    EVALUATE,
    EXIT_MESSAGE_FILE,
    GATE,
    JSON,
    JSONLINES,
    METRIC_THRESHOLD,
    PREDICTOR_TYPES,
    PREPROCESS,
    QUALITY_GATE,
    QUALITY_GATE_FAILED,
    RECORDIO,
    REGISTER,
    REPORT_NAME,
    REPORT_PROPERTY_FILE,
    RESOURCE_CONFIG,
    TRAIN,
    TRANSFORM,
    TUNE,
)
from pipeline.offline import offline_sdk, offline_session
from pipeline.schema import DEFAULT_SCHEMA, default_schema_uri

# The tuning jobs' artifacts: s3://<bucket>/<pipeline>/tune/<training job>/output/model.tar.gz. Not per execution
# as the other outputs are: a cached Tune step hands on an earlier execution's job names, and the model URI is built
# from them and this prefix; the names are unique to each tuning job, so nothing is overwritten.
TUNING_OUTPUT = "tune"
CODE_DIR = "/opt/ml/processing/input/code"
PREPROCESS_INPUT_DIR = "/opt/ml/processing/input/data"
PREPROCESS_OUTPUT_DIR = "/opt/ml/processing/output"
PREPROCESS_OUTPUTS = ("train", "validation", "test", "summary")
PREPROCESS_SCHEMA_DIR = "/opt/ml/processing/input/schema"
EVALUATE_PREDICTIONS_DIR = "/opt/ml/processing/input/predictions"
EVALUATE_TEST_DIR = "/opt/ml/processing/input/test"
EVALUATE_SUMMARY_DIR = "/opt/ml/processing/input/summary"
EVALUATE_OUTPUT_DIR = "/opt/ml/processing/output/evaluation"
CACHE_EXPIRY = "P30D"  # ISO 8601: reuse a successful step with identical inputs for 30 days
TRAINING_MAX_RUNTIME_SECONDS = 24 * 3600  # explicit: the SDK v3 default is one hour
PROCESSING_MAX_RUNTIME_SECONDS = 12 * 3600
INFERENCE_INSTANCE_TYPES = ["ml.m5.large", "ml.m5.xlarge", "ml.c5.large", "ml.c5.xlarge"]
INFERENCE_CONTENT_TYPES = [RECORDIO, CSV, JSON]
INFERENCE_RESPONSE_TYPES = [JSON, JSONLINES, RECORDIO]


@dataclass(frozen=True)
class BuiltDefinition:
    """The pipeline definition JSON and every object ``upsert`` must upload first (S3 URI -> bytes)."""

    definition_json: str
    uploads: dict[str, bytes]


@dataclass(frozen=True)
class Bundles:
    """The code of the two processing jobs."""

    preprocess: CodeBundle
    evaluate: CodeBundle

    @classmethod
    def from_repository(cls, root: Path = REPOSITORY_ROOT) -> Bundles:
        """The bundles as the repository's files are now (a code change gives new digests, new S3 prefixes)."""
        return cls(preprocess=repository_bundle("preprocess", root), evaluate=repository_bundle("evaluate", root))


def build_definition(config: PipelineConfig, bundles: Bundles | None = None) -> BuiltDefinition:
    """Build the definition offline, or reuse the cached one when nothing that shapes it changed; the JSON has sorted
    keys and 2-space indents, so builds are byte-identical."""
    bundles = bundles or Bundles.from_repository()

    def build() -> str:
        with offline_sdk(config.region):
            pipeline = _build_pipeline(config, bundles, offline_session(config.region, config.bucket))
            return json.dumps(json.loads(pipeline.definition()), indent=2, sort_keys=True) + "\n"

    digests = (bundles.preprocess.digest, bundles.evaluate.digest)
    definition_json = cached_definition(config, digests, build)  # the SDK is imported only on a miss
    uploads = {
        **bundles.preprocess.uploads(config.pipeline_prefix),
        **bundles.evaluate.uploads(config.pipeline_prefix),
        default_schema_uri(config.pipeline_prefix): DEFAULT_SCHEMA,
    }
    return BuiltDefinition(
        definition_json=definition_json,
        uploads=dict(sorted(uploads.items())),
    )


def get_pipeline(**config: Any) -> Any:
    """The SDK v3 ``Pipeline`` for notebooks (``from pipeline import get_pipeline``), configured like the CLI.

    Keyword arguments are :class:`PipelineConfig` fields; environment and defaults fill the rest. The code bundles
    are not uploaded by ``Pipeline.upsert()``: deploy with ``llpipe upsert`` or ``pipeline.sagemaker_ops.upsert``.
    """
    resolved = load_config(config)
    with offline_sdk(resolved.region):
        return _build_pipeline(resolved, Bundles.from_repository(), offline_session(resolved.region, resolved.bucket))


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
    metric_threshold: Any
    champion_tolerance: Any
    model_approval_status: Any

    @classmethod
    def create(cls, config: PipelineConfig) -> Parameters:
        """Declare the parameters (SDK objects; call inside :func:`offline_sdk`)."""
        from sagemaker.core.workflow.parameters import ParameterFloat, ParameterInteger, ParameterString

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
            validation_fraction=ParameterFloat("ValidationFraction", 0.15),
            test_fraction=ParameterFloat("TestFraction", 0.15),
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
            metric_threshold=ParameterFloat(METRIC_THRESHOLD, 0.6),
            # how much worse than the approved champion (same test split, same metric) a new model may be
            champion_tolerance=ParameterFloat(CHAMPION_TOLERANCE, 0.0),
            model_approval_status=ParameterString(
                "ModelApprovalStatus",
                "PendingManualApproval",
                enum_values=["PendingManualApproval", "Approved", "Rejected"],
            ),
        )

    def all(self) -> list[Any]:
        """Every parameter, in declaration order (the order the definition lists them)."""
        return [getattr(self, name) for name in self.__dataclass_fields__]


def _build_pipeline(config: PipelineConfig, bundles: Bundles, session: Any) -> Any:
    """Assemble parameters and steps into the SDK ``Pipeline`` (inside :func:`offline_sdk`)."""
    from sagemaker.core.workflow.pipeline_definition_config import PipelineDefinitionConfig
    from sagemaker.mlops.workflow import Pipeline

    params = Parameters.create(config)
    preprocess = _preprocess_step(config, params, bundles.preprocess, session)
    if config.tuning_max_jobs:
        train = _tune_step(config, params, preprocess, session)
        # the best training job's artifact: <S3OutputPath>/<TrainingJobName>/output/model.tar.gz
        model_data = train.get_top_model_s3_uri(top_k=0, s3_bucket=config.bucket, prefix=_tuning_key(config))
    else:
        train = _train_step(config, params, preprocess, session)
        model_data = train.properties.ModelArtifacts.S3ModelArtifacts
    create_model = _create_model_step(config, model_data, session)
    transform = _transform_step(config, params, preprocess, create_model, session)
    evaluate, report = _evaluate_step(config, params, bundles.evaluate, preprocess, transform, session)
    register = _register_step(config, params, model_data, evaluate, report, session)
    gate = _quality_gate_step(params, evaluate, report, register)
    return Pipeline(
        name=config.pipeline_name,
        parameters=params.all(),
        steps=[preprocess, train, create_model, transform, evaluate, gate],
        sagemaker_session=session,
        pipeline_experiment_config=None,  # no Experiments trial per execution: lineage is in the model registry
        pipeline_definition_config=PipelineDefinitionConfig(use_custom_job_prefix=True),
    )


def _execution_uri(config: PipelineConfig, *parts: str) -> Any:
    """``s3://<bucket>/<pipeline-name>/<ExecutionId>/<parts...>``: no execution overwrites another's outputs."""
    from sagemaker.core.workflow.execution_variables import ExecutionVariables
    from sagemaker.core.workflow.functions import Join

    return Join(on="/", values=[config.pipeline_prefix, ExecutionVariables.PIPELINE_EXECUTION_ID, *parts])


def _tuning_key(config: PipelineConfig) -> str:
    """The key prefix (no bucket) under which the tuning jobs' training jobs write their artifacts."""
    return f"{config.pipeline_name}/{TUNING_OUTPUT}"


def _job_step_options(cache: bool = True) -> dict[str, Any]:
    """Caching and retries shared by every job step: capacity and throttling errors are retried with backoff.

    ``cache=False`` for a step whose result depends on something outside its request (the registry's champion).
    """
    from sagemaker.mlops.workflow import CacheConfig
    from sagemaker.mlops.workflow.retry import (
        SageMakerJobExceptionTypeEnum,
        SageMakerJobStepRetryPolicy,
        StepExceptionTypeEnum,
        StepRetryPolicy,
    )

    return {
        "cache_config": CacheConfig(enable_caching=True, expire_after=CACHE_EXPIRY) if cache else None,
        "retry_policies": [
            StepRetryPolicy(
                exception_types=[StepExceptionTypeEnum.SERVICE_FAULT, StepExceptionTypeEnum.THROTTLING],
                interval_seconds=10,
                backoff_rate=2.0,
                max_attempts=5,
            ),
            SageMakerJobStepRetryPolicy(
                exception_types=[
                    SageMakerJobExceptionTypeEnum.CAPACITY_ERROR,
                    SageMakerJobExceptionTypeEnum.RESOURCE_LIMIT,
                    SageMakerJobExceptionTypeEnum.INTERNAL_ERROR,
                ],
                interval_seconds=60,
                backoff_rate=2.0,
                max_attempts=3,
            ),
        ],
    }


def _model_step_retries() -> list[Any]:
    """Model steps accept only service-level retries (SageMakerJobStepRetryPolicy is rejected there)."""
    from sagemaker.mlops.workflow.retry import StepExceptionTypeEnum, StepRetryPolicy

    return [
        StepRetryPolicy(
            exception_types=[StepExceptionTypeEnum.SERVICE_FAULT, StepExceptionTypeEnum.THROTTLING],
            interval_seconds=10,
            backoff_rate=2.0,
            max_attempts=5,
        )
    ]


def _sklearn_image(config: PipelineConfig) -> str:
    return _image_uri(DEFAULT_PROCESSING_IMAGE.framework, config.region, config.sklearn_image_version)


def _linear_learner_image(config: PipelineConfig) -> str:
    return _image_uri("linear-learner", config.region, config.linear_learner_image_version)


@functools.lru_cache(maxsize=16)
def _image_uri(framework: str, region: str, version: str) -> str:
    """The ECR image URI (the SDK reads its bundled tables: a pure function, cached as it takes ~0.2 s a call)."""
    from sagemaker.core import image_uris

    return image_uris.retrieve(framework, region, version=version)


def _network_config(config: PipelineConfig, isolation: bool = True) -> Any:
    """Processing jobs get the same VPC, isolation and encryption settings as training; ``isolation=False`` for a job
    that calls AWS APIs (Evaluate reads the registry: an isolated container cannot reach any API)."""
    from sagemaker.core.network import NetworkConfig

    return NetworkConfig(
        enable_network_isolation=config.enable_network_isolation and isolation,
        encrypt_inter_container_traffic=config.encrypt_inter_container_traffic,
        subnets=list(config.subnets) or None,
        security_group_ids=list(config.security_group_ids) or None,
    )


def _processor(
    config: PipelineConfig,
    entry_point: str,
    name: str,
    count: Any,
    instance_type: Any,
    session: Any,
    isolation: bool = True,
):
    """A plain Processor running ``python3 <code dir>/<entry point>`` on the scikit-learn image."""
    from sagemaker.core.processing import Processor

    return Processor(
        role=config.role_arn,
        image_uri=_sklearn_image(config),
        entrypoint=["python3", f"{CODE_DIR}/{entry_point}"],
        instance_count=count,
        instance_type=instance_type,
        volume_kms_key=config.kms_key_id,
        output_kms_key=config.kms_key_id,
        max_runtime_in_seconds=PROCESSING_MAX_RUNTIME_SECONDS,
        base_job_name=f"{config.base_job_prefix}-{name}",
        sagemaker_session=session,
        env={"PYTHONUNBUFFERED": "1"},
        tags=config.all_tags or None,
        network_config=_network_config(config, isolation),
    )


def _s3_input(name: str, s3_uri: Any, local_path: str, distribution: str = "FullyReplicated") -> Any:
    from sagemaker.core.shapes import ProcessingInput, ProcessingS3Input

    return ProcessingInput(
        input_name=name,
        s3_input=ProcessingS3Input(
            s3_uri=s3_uri,
            local_path=local_path,
            s3_data_type="S3Prefix",
            s3_input_mode="File",
            s3_data_distribution_type=distribution,
        ),
    )


def _s3_output(name: str, local_path: str, s3_uri: Any) -> Any:
    from sagemaker.core.shapes import ProcessingOutput, ProcessingS3Output

    return ProcessingOutput(
        output_name=name,
        s3_output=ProcessingS3Output(s3_uri=s3_uri, local_path=local_path, s3_upload_mode="EndOfJob"),
    )


def _preprocess_step(config: PipelineConfig, params: Parameters, bundle: CodeBundle, session: Any) -> Any:
    from sagemaker.core.workflow.functions import Join
    from sagemaker.mlops.workflow import ProcessingStep

    processor = _processor(
        config,
        bundle.entry_point,
        "preprocess",
        params.processing_instance_count,
        params.processing_instance_type,
        session,
    )
    step_args = processor.run(
        inputs=[
            _s3_input("data", params.input_data_url, PREPROCESS_INPUT_DIR, distribution="ShardedByS3Key"),
            _s3_input("code", bundle.s3_prefix(config.pipeline_prefix), CODE_DIR),
            _s3_input("schema", params.schema_url, PREPROCESS_SCHEMA_DIR),
        ],
        outputs=[
            _s3_output(name, f"{PREPROCESS_OUTPUT_DIR}/{name}", _execution_uri(config, "preprocess", name))
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
            "--resource-config",
            RESOURCE_CONFIG,
            # why the job failed, also in DescribeProcessingJob's ExitMessage (not only in its CloudWatch log)
            "--exit-message-file",
            EXIT_MESSAGE_FILE,
        ],
        wait=False,
        logs=False,
    )
    return ProcessingStep(name=PREPROCESS, step_args=step_args, **_job_step_options())


def _preprocess_output(preprocess: Any, name: str) -> Any:
    return preprocess.properties.ProcessingOutputConfig.Outputs[name].S3Output.S3Uri


def _training_channels(preprocess: Any) -> list[Any]:
    """train (sharded between instances), validation (model selection, early stopping) and test (final metrics)."""
    from sagemaker.core.shapes import Channel, DataSource, S3DataSource

    def channel(name: str, distribution: str) -> Channel:
        return Channel(
            channel_name=name,
            content_type=RECORDIO,
            input_mode="File",
            data_source=DataSource(
                s3_data_source=S3DataSource(
                    s3_data_type="S3Prefix",
                    s3_uri=_preprocess_output(preprocess, name),
                    s3_data_distribution_type=distribution,
                )
            ),
        )

    return [
        channel("train", "ShardedByS3Key"),
        channel("validation", "FullyReplicated"),
        channel("test", "FullyReplicated"),
    ]


def _model_trainer(config: PipelineConfig, params: Parameters, name: str, output_path: Any, session: Any) -> Any:
    """The Linear Learner ModelTrainer: image, compute, networking, hyperparameters, artifacts under output_path."""
    from sagemaker.core.shapes import StoppingCondition
    from sagemaker.train import ModelTrainer
    from sagemaker.train.configs import Compute, Networking, OutputDataConfig

    compute: dict[str, Any] = {
        "instance_type": params.training_instance_type,
        "instance_count": params.training_instance_count,
        "volume_size_in_gb": 30,
    }
    if config.kms_key_id:
        compute["volume_kms_key_id"] = config.kms_key_id
    networking: dict[str, Any] = {
        "enable_network_isolation": config.enable_network_isolation,
        "enable_inter_container_traffic_encryption": config.encrypt_inter_container_traffic,
    }
    if config.subnets:
        networking.update(subnets=list(config.subnets), security_group_ids=list(config.security_group_ids))
    output: dict[str, Any] = {"s3_output_path": output_path}
    if config.kms_key_id:
        output["kms_key_id"] = config.kms_key_id

    return ModelTrainer(
        sagemaker_session=session,
        role=config.role_arn,
        base_job_name=f"{config.base_job_prefix}-{name}",
        training_image=_linear_learner_image(config),
        training_input_mode="File",
        compute=Compute(**compute),
        networking=Networking(**networking),
        stopping_condition=StoppingCondition(max_runtime_in_seconds=TRAINING_MAX_RUNTIME_SECONDS),
        output_data_config=OutputDataConfig(**output),
        hyperparameters={
            # SDK v3 passes Integer/Float parameters raw: the service wants strings
            "predictor_type": params.predictor_type,
            "feature_dim": params.feature_dim,
            "num_classes": params.num_classes.to_string(),
            "epochs": params.epochs.to_string(),
            "mini_batch_size": params.mini_batch_size.to_string(),
            "num_models": params.num_models,
            "learning_rate": params.learning_rate,
            "wd": params.wd,
            "l1": params.l1,
            "loss": params.loss,
        },
        tags=_trainer_tags(config),
    )


def _train_step(config: PipelineConfig, params: Parameters, preprocess: Any, session: Any) -> Any:
    from sagemaker.mlops.workflow import TrainingStep

    trainer = _model_trainer(config, params, "train", _execution_uri(config, "train"), session)
    step_args = trainer.train(input_data_config=_training_channels(preprocess), wait=False, logs=False)
    return TrainingStep(name=TRAIN, step_args=step_args, **_job_step_options())


def _tune_step(config: PipelineConfig, params: Parameters, preprocess: Any, session: Any) -> Any:
    """A Tuning step over the documented Linear Learner ranges (pipeline/tuning.py), num_models forced to 1."""
    from sagemaker.mlops.workflow.steps import TuningStep

    from pipeline.tuning import linear_learner_tuner

    output_path = f"s3://{config.bucket}/{_tuning_key(config)}"
    trainer = _model_trainer(config, params, TUNING_OUTPUT, output_path, session)
    trainer.hyperparameters = {**trainer.hyperparameters, "num_models": "1"}  # the service forces it when tuning
    tuner = linear_learner_tuner(config, trainer, base_name=f"{config.base_job_prefix}-{TUNING_OUTPUT}")
    step_args = tuner.tune(inputs=_training_channels(preprocess), wait=False)
    return TuningStep(name=TUNE, step_args=step_args, **_job_step_options())


def _trainer_tags(config: PipelineConfig) -> Any:
    from sagemaker.core.shapes import Tag

    return [Tag(key=tag["Key"], value=tag["Value"]) for tag in config.all_tags] or None


def _model_builder(config: PipelineConfig, model_data: Any, session: Any) -> Any:
    """A ModelBuilder for the trained Linear Learner artifact, on the same image (the algorithm serves itself)."""
    import logging

    from sagemaker.serve import ModelBuilder
    from sagemaker.train.configs import Networking

    networking: dict[str, Any] = {"enable_network_isolation": config.enable_network_isolation}
    if config.subnets:
        networking.update(subnets=list(config.subnets), security_group_ids=list(config.security_group_ids))
    return ModelBuilder(
        image_uri=_linear_learner_image(config),
        s3_model_data_url=model_data,
        role_arn=config.role_arn,
        sagemaker_session=session,
        network=Networking(**networking),
        # no code dependencies: the default {"auto": False} is truthy and makes register() add script-mode
        # variables (SAGEMAKER_PROGRAM="" ...) meant for framework containers
        dependencies={},
        log_level=logging.WARNING,
    )


def _create_model_step(config: PipelineConfig, model_data: Any, session: Any) -> Any:
    from sagemaker.mlops.workflow import ModelStep

    # with use_custom_job_prefix the name is a prefix: SageMaker appends a unique suffix per execution
    step_args = _model_builder(config, model_data, session).build(model_name=f"{config.base_job_prefix}-model")
    return ModelStep(name=CREATE_MODEL, step_args=step_args, retry_policies=_model_step_retries())


def _transform_step(config: PipelineConfig, params: Parameters, preprocess: Any, create_model: Any, session: Any):
    from sagemaker.core.transformer import Transformer
    from sagemaker.mlops.workflow import TransformStep

    transformer = Transformer(
        model_name=create_model.properties.ModelName,
        instance_count=1,
        instance_type=params.transform_instance_type,
        strategy="MultiRecord",
        max_payload=6,
        assemble_with="Line",
        accept=JSONLINES,
        output_path=_execution_uri(config, "transform"),
        output_kms_key=config.kms_key_id,
        volume_kms_key=config.kms_key_id,
        base_transform_job_name=f"{config.base_job_prefix}-transform",
        tags=config.all_tags or None,
        sagemaker_session=session,
    )
    step_args = transformer.transform(
        data=_preprocess_output(preprocess, "test"),
        data_type="S3Prefix",
        content_type=RECORDIO,
        split_type="RecordIO",
        wait=False,
        logs=False,
    )
    return TransformStep(name=TRANSFORM, step_args=step_args, **_job_step_options())


def _evaluate_step(
    config: PipelineConfig, params: Parameters, bundle: CodeBundle, preprocess: Any, transform: Any, session: Any
) -> tuple[Any, Any]:
    from sagemaker.core.workflow.properties import PropertyFile
    from sagemaker.mlops.workflow import ProcessingStep

    processor = _processor(
        config, bundle.entry_point, "evaluate", 1, params.evaluation_instance_type, session, isolation=False
    )
    step_args = processor.run(
        inputs=[
            _s3_input("predictions", transform.properties.TransformOutput.S3OutputPath, EVALUATE_PREDICTIONS_DIR),
            _s3_input("test", _preprocess_output(preprocess, "test"), EVALUATE_TEST_DIR),
            _s3_input("summary", _preprocess_output(preprocess, "summary"), EVALUATE_SUMMARY_DIR),
            _s3_input("code", bundle.s3_prefix(config.pipeline_prefix), CODE_DIR),
        ],
        outputs=[_s3_output("evaluation", EVALUATE_OUTPUT_DIR, _execution_uri(config, "evaluate", "evaluation"))],
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
            "--loss",
            params.loss,
            "--metric-threshold",
            params.metric_threshold.to_string(),
            "--champion-tolerance",
            params.champion_tolerance.to_string(),
            "--model-package-group",
            config.model_package_group,
            "--region",
            config.region,
            "--resource-config",
            RESOURCE_CONFIG,
            "--exit-message-file",
            EXIT_MESSAGE_FILE,
        ],
        wait=False,
        logs=False,
    )
    report = PropertyFile(name=REPORT_PROPERTY_FILE, output_name="evaluation", path=REPORT_NAME)
    # Never cached: the champion it compares with is read from the registry, which is in no cache key.
    step = ProcessingStep(name=EVALUATE, step_args=step_args, property_files=[report], **_job_step_options(cache=False))
    return step, report


def _register_step(
    config: PipelineConfig, params: Parameters, model_data: Any, evaluate: Any, report: Any, session: Any
) -> Any:
    from sagemaker.core.model_metrics import MetricsSource, ModelMetrics
    from sagemaker.core.workflow.functions import Join, JsonGet
    from sagemaker.mlops.workflow import ModelStep

    def decision(field: str) -> Any:
        # Join makes every value a string, as CustomerMetadataProperties requires
        value = JsonGet(step_name=evaluate.name, property_file=report, json_path=f"{DECISION}.{field}")
        return Join(on="", values=[value])

    report_uri = Join(
        on="/",
        values=[evaluate.properties.ProcessingOutputConfig.Outputs["evaluation"].S3Output.S3Uri, REPORT_NAME],
    )
    step_args = _model_builder(config, model_data, session).register(
        model_package_group_name=config.model_package_group,
        content_types=INFERENCE_CONTENT_TYPES,
        response_types=INFERENCE_RESPONSE_TYPES,
        inference_instances=INFERENCE_INSTANCE_TYPES,
        transform_instances=INFERENCE_INSTANCE_TYPES,
        model_metrics=ModelMetrics(
            model_statistics=MetricsSource(s3_uri=report_uri, content_type=JSON),
        ),
        approval_status=params.model_approval_status,
        # the champion this version was compared with on the same test split, and why it was promoted
        customer_metadata_properties={
            "ChampionModelPackageArn": decision("champion_model_package_arn"),
            "ChampionValue": decision("champion_value"),
            "ChallengerValue": decision("challenger_value"),
            "GateMetric": decision("metric"),
            "ChampionTolerance": decision("champion_tolerance"),
        },
    )
    return ModelStep(name=REGISTER, step_args=step_args, retry_policies=_model_step_retries())


def _quality_gate_step(params: Parameters, evaluate: Any, report: Any, register: Any) -> Any:
    """Register when the report's gate value (higher is better) reaches MetricThreshold and the champion's floor (its
    value on the same test split minus ChampionTolerance, computed by Evaluate); else fail naming both values."""
    from sagemaker.core.workflow.conditions import ConditionGreaterThanOrEqualTo
    from sagemaker.core.workflow.functions import Join, JsonGet
    from sagemaker.mlops.workflow import ConditionStep, FailStep

    def gate(field: str) -> Any:
        return JsonGet(step_name=evaluate.name, property_file=report, json_path=f"{GATE}.{field}")

    def decision(field: str) -> Any:
        return JsonGet(step_name=evaluate.name, property_file=report, json_path=f"{DECISION}.{field}")

    failed = FailStep(
        name=QUALITY_GATE_FAILED,
        error_message=Join(
            on=" ",
            values=[
                "Quality gate failed:",
                gate("metric"),
                "=",
                gate("value"),
                "vs MetricThreshold",
                params.metric_threshold,
                "and champion",
                decision("champion_value"),
                "minus ChampionTolerance",
                params.champion_tolerance,
                "=",
                decision(CHAMPION_FLOOR),
                "|",
                decision("reason"),
            ],
        ),
    )
    return ConditionStep(
        name=QUALITY_GATE,
        conditions=[
            ConditionGreaterThanOrEqualTo(left=gate("value"), right=params.metric_threshold),
            ConditionGreaterThanOrEqualTo(left=gate("value"), right=decision(CHAMPION_FLOOR)),
        ],
        if_steps=[register],
        else_steps=[failed],
    )
