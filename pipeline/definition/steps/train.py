"""The Train step: the built-in Linear Learner's training job on Preprocess's channels."""

from __future__ import annotations

from typing import Any

from pipeline.core.names import RECORDIO, TRAIN
from pipeline.definition.config import PipelineConfig
from pipeline.definition.declared import Parameters
from pipeline.definition.steps.common import execution_uri, job_step_options, linear_learner_image
from pipeline.definition.steps.preprocess import preprocess_output

TRAINING_MAX_RUNTIME_SECONDS = 24 * 3600  # explicit: the SDK v3 default is one hour


SHUFFLE_SEED = 1  # a number in the request (never a parameter reference); the SDK drops a Seed of 0


def training_channels(params: Parameters, preprocess: Any) -> list[Any]:
    """train and validation, each dealt between the instances (ShardedByS3Key), so no host receives data that grows
    with the data set's size beyond its share.

    train is streamed in ``TrainingInputMode`` (Pipe by default: nothing downloaded, the shards dealt to the hosts
    afresh every epoch by the ShuffleConfig); validation (model selection, early stopping) is downloaded. No test
    channel: it only makes the service log test metrics, and Evaluate scores the test split."""
    from sagemaker.core.shapes import Channel, DataSource, S3DataSource, ShuffleConfig

    def channel(name: str, **mode: Any) -> Channel:
        return Channel(
            channel_name=name,
            content_type=RECORDIO,
            data_source=DataSource(
                s3_data_source=S3DataSource(
                    s3_data_type="S3Prefix",
                    s3_uri=preprocess_output(preprocess, name),
                    s3_data_distribution_type="ShardedByS3Key",
                )
            ),
            **mode,
        )

    return [
        channel("train", input_mode=params.training_input_mode, shuffle_config=ShuffleConfig(seed=SHUFFLE_SEED)),
        channel("validation", input_mode="File"),
    ]


def model_trainer(config: PipelineConfig, params: Parameters, name: str, output_path: Any, session: Any) -> Any:
    """The Linear Learner ModelTrainer: image, compute, networking, hyperparameters, artifacts under output_path."""
    from sagemaker.core.shapes import StoppingCondition
    from sagemaker.train import ModelTrainer
    from sagemaker.train.configs import Compute, Networking, OutputDataConfig

    compute: dict[str, Any] = {
        "instance_type": params.training_instance_type,
        "instance_count": params.training_instance_count,
        "volume_size_in_gb": params.training_volume_size_in_gb,
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
        # constructed unvalidated: Compute types VolumeSizeInGB as a plain int, but the request takes a parameter
        compute=Compute.model_construct(**compute),
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
    step_args = trainer.train(input_data_config=training_channels(params, preprocess), wait=False, logs=False)
    return TrainingStep(name=TRAIN, step_args=step_args, **job_step_options())
