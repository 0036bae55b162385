"""The Train step: the built-in Linear Learner's training job on Preprocess's channels."""

from __future__ import annotations

from typing import Any

from pipeline.core.names import RECORDIO, TRAIN
from pipeline.definition.config import PipelineConfig
from pipeline.definition.declared import Parameters
from pipeline.definition.steps.common import execution_uri, job_step_options, linear_learner_image
from pipeline.definition.steps.preprocess import preprocess_output

TRAINING_MAX_RUNTIME_SECONDS = 24 * 3600  # explicit: the SDK v3 default is one hour


def training_channels(preprocess: Any) -> list[Any]:
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
                    s3_uri=preprocess_output(preprocess, name),
                    s3_data_distribution_type=distribution,
                )
            ),
        )

    return [
        channel("train", "ShardedByS3Key"),
        channel("validation", "FullyReplicated"),
        channel("test", "FullyReplicated"),
    ]


def model_trainer(config: PipelineConfig, params: Parameters, name: str, output_path: Any, session: Any) -> Any:
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
        training_image=linear_learner_image(config),
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
            "binary_classifier_model_selection_criteria": params.binary_classifier_model_selection_criteria,
            "positive_example_weight_mult": params.positive_example_weight_mult,
        },
        tags=trainer_tags(config),
    )


def trainer_tags(config: PipelineConfig) -> Any:
    from sagemaker.core.shapes import Tag

    return [Tag(key=tag["Key"], value=tag["Value"]) for tag in config.all_tags] or None


def train_step(config: PipelineConfig, params: Parameters, preprocess: Any, session: Any) -> Any:
    from sagemaker.mlops.workflow import TrainingStep

    trainer = model_trainer(config, params, "train", execution_uri(config, "train"), session)
    step_args = trainer.train(input_data_config=training_channels(preprocess), wait=False, logs=False)
    return TrainingStep(name=TRAIN, step_args=step_args, **job_step_options())
