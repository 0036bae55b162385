"""Tuning as a build-time switch: the settings, and the Tuning step the definition then holds in place of Train
(botocore-valid, deterministic, the same request SDK v3's TuningStep makes for the same tuner, downstream steps
reading the best training job's artifact)."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from typing import Any

import pytest
from botocore.validate import validate_parameters
from test_definition import SECURE, all_steps, resolve
from test_definition import sagemaker_model as sagemaker_model  # a fixture

from pipeline.cli.arguments import add_config_arguments, config_from_args
from pipeline.core.names import STEP_NAMES, TRAIN
from pipeline.core.names import TUNE as TUNING_STEP
from pipeline.definition.build import build_definition
from pipeline.definition.config import ConfigError, PipelineConfig, load_config
from pipeline.definition.tuning import DEFAULT_OBJECTIVE, OBJECTIVES, RANGES, objective_type

TUNED = PipelineConfig(tuning_max_jobs=12, tuning_max_parallel_jobs=3)
SECURE_TUNED = replace(SECURE, tuning_max_jobs=4)


@pytest.fixture(scope="module")
def tuned_json() -> str:
    return build_definition(TUNED).definition_json


@pytest.fixture(scope="module")
def tuned(tuned_json: str) -> dict[str, Any]:
    return json.loads(tuned_json)


@pytest.fixture(scope="module")
def secure_tuned() -> dict[str, Any]:
    return json.loads(build_definition(SECURE_TUNED).definition_json)


# ---------------------------------------------------------------- settings


def test_tuning_is_off_by_default_and_set_by_flag_environment_or_file(tmp_path) -> None:
    assert PipelineConfig().tuning_max_jobs == 0
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    args = parser.parse_args(["--tuning-max-jobs", "12", "--tuning-strategy", "Random"])
    config = config_from_args(args, env={"LLPIPE_TUNING_MAX_JOBS": "5", "LLPIPE_TUNING_MAX_PARALLEL_JOBS": "4"})
    assert (config.tuning_max_jobs, config.tuning_max_parallel_jobs, config.tuning_strategy) == (12, 4, "Random")
    assert config.tuning_objective == DEFAULT_OBJECTIVE == "validation:objective_loss"
    path = tmp_path / "llpipe.json"
    path.write_text(json.dumps({"tuning_max_jobs": 3, "tuning_objective": "validation:roc_auc_score"}))
    from_file = load_config(env={}, path=path)
    assert (from_file.tuning_max_jobs, from_file.tuning_objective) == (3, "validation:roc_auc_score")


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"tuning_max_jobs": 751}, "tuning_max_jobs: 751 is not valid; expected 0 (no tuning) up to 750"),
        ({"tuning_max_jobs": "many"}, "tuning_max_jobs (from overrides): expected a whole number, got 'many'"),
        ({"tuning_max_parallel_jobs": 0}, "tuning_max_parallel_jobs: 0 is not valid; expected 1 to 100"),
        ({"tuning_objective": "validation:auc"}, "tuning_objective: 'validation:auc' is not valid"),
        ({"tuning_strategy": "Hyperband"}, "tuning_strategy: 'Hyperband' is not valid; expected Bayesian or Random"),
    ],
)
def test_bad_tuning_settings_are_named(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_config(overrides, env={})


def test_objective_directions_follow_the_documentation() -> None:
    assert objective_type("validation:objective_loss") == "Minimize"
    assert objective_type("validation:rmse") == "Minimize"
    assert objective_type("validation:roc_auc_score") == "Maximize"
    assert objective_type("validation:macro_f_beta") == "Maximize"
    assert all(name.startswith("validation:") for name in OBJECTIVES)
    with pytest.raises(ValueError, match="'train:objective_loss' is not a Linear Learner objective metric"):
        objective_type("train:objective_loss")


# ---------------------------------------------------------------- the definition


def test_tune_trains_the_model_beside_the_untuned_defaults_and_the_build_is_deterministic(
    tuned_json: str, tuned: dict[str, Any]
) -> None:
    assert build_definition(TUNED).definition_json == tuned_json
    steps = all_steps(tuned)
    assert sorted(steps) == sorted([*STEP_NAMES, TUNING_STEP])  # Train: the untuned defaults, for Evaluate
    arguments = steps["Evaluate"]["Arguments"]["AppSpecification"]["ContainerArguments"]
    assert arguments[arguments.index("--defaults-model-uri") + 1] == {
        "Get": "Steps.Train.ModelArtifacts.S3ModelArtifacts"
    }
    assert steps[TRAIN]["DependsOn"] == ["DataQuality"]
    assert steps[TUNING_STEP]["Type"] == "Tuning"
    assert steps[TUNING_STEP]["CacheConfig"] == {"Enabled": True, "ExpireAfter": "P30D"}
    assert [policy["ExceptionType"] for policy in steps[TUNING_STEP]["RetryPolicies"]] == [
        ["Step.SERVICE_FAULT", "Step.THROTTLING"],
        ["SageMaker.CAPACITY_ERROR", "SageMaker.RESOURCE_LIMIT", "SageMaker.JOB_INTERNAL_ERROR"],
    ]


def test_tuning_job_config_holds_the_settings_and_the_documented_ranges(tuned: dict[str, Any]) -> None:
    config = all_steps(tuned)[TUNING_STEP]["Arguments"]["HyperParameterTuningJobConfig"]
    assert config["HyperParameterTuningJobObjective"] == {"MetricName": "validation:objective_loss", "Type": "Minimize"}
    assert config["ResourceLimits"] == {"MaxNumberOfTrainingJobs": 12, "MaxParallelTrainingJobs": 3}
    assert config["Strategy"] == "Bayesian" and config["TrainingJobEarlyStoppingType"] == "Off"
    assert isinstance(config["RandomSeed"], int)
    ranges = config["ParameterRanges"]
    found = {item["Name"]: item for kind in ranges.values() for item in kind}
    # ranges around what the untuned defaults' models try (pipeline/definition/tuning.py says why)
    assert set(found) == set(RANGES) == {"learning_rate", "l1", "wd", "mini_batch_size"}
    assert found["learning_rate"] == {
        "Name": "learning_rate",
        "MinValue": "0.001",
        "MaxValue": "0.3",
        "ScalingType": "Logarithmic",
    }
    assert (found["wd"]["MinValue"], found["wd"]["MaxValue"]) == ("1e-07", "0.1")
    assert (found["l1"]["MinValue"], found["l1"]["MaxValue"]) == ("1e-07", "0.01")
    assert [item["Name"] for item in ranges["IntegerParameterRanges"]] == ["mini_batch_size"]
    assert (found["mini_batch_size"]["MinValue"], found["mini_batch_size"]["MaxValue"]) == ("100", "2000")
    assert ranges.get("CategoricalParameterRanges", []) == []


def test_training_job_definition_keeps_the_parameters_and_forces_one_model(tuned: dict[str, Any]) -> None:
    definition = all_steps(tuned)[TUNING_STEP]["Arguments"]["TrainingJobDefinition"]
    static = definition["StaticHyperParameters"]
    assert static["num_models"] == "1"
    assert static["predictor_type"] == {"Get": "Parameters.PredictorType"}
    assert static["epochs"] == {"Std:Join": {"On": "", "Values": [{"Get": "Parameters.Epochs"}]}}
    assert not set(static) & set(RANGES), "a tuned hyperparameter must not also be static"
    assert [channel["ChannelName"] for channel in definition["InputDataConfig"]] == ["train", "validation"]
    assert definition["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3DataDistributionType"] == "ShardedByS3Key"
    assert definition["ResourceConfig"]["InstanceCount"] == {"Get": "Parameters.TrainingInstanceCount"}
    assert definition["OutputDataConfig"]["S3OutputPath"] == "s3://llpipe-local/linear-learner-pipeline/tune"
    assert definition["StoppingCondition"] == {"MaxRuntimeInSeconds": 86400}


def test_model_steps_read_the_best_training_jobs_artifact(tuned: dict[str, Any]) -> None:
    steps = all_steps(tuned)
    expected = {
        "Std:Join": {
            "On": "/",
            "Values": [
                "s3:/",
                "llpipe-local",
                "linear-learner-pipeline/tune",
                {"Get": "Steps.Tune.TrainingJobSummaries[0].TrainingJobName"},
                "output/model.tar.gz",
            ],
        }
    }
    # the batch transform scores the tuned model (Linear Learner's container of the inference pipeline)
    assert steps["CreateModel"]["Arguments"]["Containers"][1]["ModelDataUrl"] == expected
    # Evaluate gets both artifacts, and names the kept one (tuned, or the untuned defaults' when better beyond the
    # noise) in its report; the registered inference pipeline's Linear Learner serves that one
    arguments = steps["Evaluate"]["Arguments"]["AppSpecification"]["ContainerArguments"]
    assert arguments[arguments.index("--model-uri") + 1] == expected
    assert arguments[arguments.index("--defaults-model-uri") + 1] == {
        "Get": "Steps.Train.ModelArtifacts.S3ModelArtifacts"
    }
    featurizer, algorithm, labels = steps["Register"]["Arguments"]["InferenceSpecification"]["Containers"]
    assert algorithm == {
        "Environment": {},
        "Image": steps["CreateModel"]["Arguments"]["Containers"][1]["Image"],
        "ModelDataUrl": {
            "Std:JsonGet": {
                "Path": "decision.model_data_url",
                "PropertyFile": {"Get": "Steps.Evaluate.PropertyFiles.EvaluationReport"},
            }
        },
    }
    # the registered featurizer refuses unseen values or not as the run says; batch transform's always scores them
    assert featurizer["Environment"].pop("LLPIPE_UNSEEN_CATEGORIES") == {"Get": "Parameters.UnseenCategories"}
    assert [featurizer, labels] == [steps["CreateModel"]["Arguments"]["Containers"][i] for i in (0, 2)]
    # the registered version's model metrics are the report, whose model-quality sections are the kept model's
    statistics = steps["Register"]["Arguments"]["ModelMetrics"]["ModelQuality"]["Statistics"]
    assert statistics["S3Uri"]["Std:Join"]["Values"][-1] == "evaluation.json"
    # the join builds exactly <S3OutputPath>/<TrainingJobName>/output/model.tar.gz, where a training job writes
    output = steps[TUNING_STEP]["Arguments"]["TrainingJobDefinition"]["OutputDataConfig"]["S3OutputPath"]
    assert "/".join(expected["Std:Join"]["Values"][:3]) == output


def test_tuning_request_validates_against_botocore(
    tuned: dict[str, Any], secure_tuned: dict[str, Any], sagemaker_model: Any
) -> None:
    for current in (tuned, secure_tuned):
        defaults = {p["Name"]: p["DefaultValue"] for p in current["Parameters"]}
        request = resolve(all_steps(current)[TUNING_STEP]["Arguments"], defaults)
        request["HyperParameterTuningJobName"] = "llpipe-tune-a1b2c3d4e5f6"
        validate_parameters(request, sagemaker_model.operation_model("CreateHyperParameterTuningJob").input_shape)
        for name in ("CreateModel", "Register"):
            step = all_steps(current)[name]
            operation = "CreateModel" if step["Type"] == "Model" else "CreateModelPackage"
            validate_parameters(
                resolve(step["Arguments"], defaults), sagemaker_model.operation_model(operation).input_shape
            )


def test_security_settings_reach_the_tuning_jobs_training_jobs(secure_tuned: dict[str, Any]) -> None:
    definition = all_steps(secure_tuned)[TUNING_STEP]["Arguments"]["TrainingJobDefinition"]
    assert definition["EnableNetworkIsolation"] is True
    assert definition["EnableInterContainerTrafficEncryption"] is True
    assert definition["ResourceConfig"]["VolumeKmsKeyId"] == SECURE.kms_key_id
    assert definition["OutputDataConfig"]["KmsKeyId"] == SECURE.kms_key_id
    assert definition["VpcConfig"] == {"SecurityGroupIds": ["sg-0ccc"], "Subnets": ["subnet-0aaa", "subnet-0bbb"]}


@pytest.mark.parametrize("name", ["default", "secure"])
def test_matches_what_sdk_v3s_tuning_step_makes_for_the_same_tuner(
    name: str, tuned: dict[str, Any], secure_tuned: dict[str, Any]
) -> None:
    """The plain SDK v3 HyperparameterTuner with the same arguments gives the same request, except for the three
    settings SDK v3 drops from the training job definition and pipeline/definition/tuning.py puts back."""
    from pipeline.definition.build import Bundles
    from pipeline.definition.declared import Parameters
    from pipeline.definition.offline import offline_sdk, offline_session
    from pipeline.definition.steps.common import job_step_options
    from pipeline.definition.steps.preprocess import preprocess_step
    from pipeline.definition.steps.train import model_trainer, training_channels
    from pipeline.definition.steps.tune import tuning_key
    from pipeline.definition.tuning import tuner_arguments

    config, built = (TUNED, tuned) if name == "default" else (SECURE_TUNED, secure_tuned)
    ours = json.loads(json.dumps(all_steps(built)[TUNING_STEP]))  # a copy: the fixture is shared
    with offline_sdk(config.region):  # SDK imports create clients: inside, where the region is set
        from sagemaker.mlops.workflow import Pipeline
        from sagemaker.mlops.workflow.steps import TuningStep
        from sagemaker.train.tuner import HyperparameterTuner

        session = offline_session(config.region, config.bucket)
        params = Parameters.create(config)
        preprocess = preprocess_step(config, params, Bundles.from_repository().preprocess, session)
        trainer = model_trainer(config, params, "tune", f"s3://{config.bucket}/{tuning_key(config)}", session)
        trainer.hyperparameters = {**trainer.hyperparameters, "num_models": "1"}
        tuner = HyperparameterTuner(**tuner_arguments(config, trainer, f"{config.base_job_prefix}-tune"))
        step_args = tuner.tune(inputs=training_channels(params, preprocess), wait=False)
        sdk_step = TuningStep(name=TUNING_STEP, step_args=step_args, **job_step_options())
        pipeline = Pipeline(
            name="parity", parameters=params.all(), steps=[preprocess, sdk_step], sagemaker_session=session
        )
        sdk = all_steps(json.loads(pipeline.definition()))[TUNING_STEP]
    theirs_definition = sdk["Arguments"]["TrainingJobDefinition"]
    ours_definition = ours["Arguments"]["TrainingJobDefinition"]
    settings = {
        "EnableNetworkIsolation": config.enable_network_isolation,
        "EnableInterContainerTrafficEncryption": config.encrypt_inter_container_traffic,
    }
    for name, value in settings.items():
        assert name not in theirs_definition
        assert ours_definition.pop(name, False) == value  # the SDK's serialiser leaves out a False
    assert "VolumeKmsKeyId" not in theirs_definition["ResourceConfig"]
    assert ours_definition["ResourceConfig"].pop("VolumeKmsKeyId", None) == config.kms_key_id
    assert ours.pop("DependsOn") == ["DataQuality"]  # the pipeline's own order: the data-quality check first
    assert ours == sdk
