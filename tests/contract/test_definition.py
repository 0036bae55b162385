"""The pipeline definition: built offline and deterministic, and every step's Arguments accepted by botocore's own
SageMaker request shapes once parameters and property references are substituted."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ParamValidationError
from botocore.validate import validate_parameters

from pipeline.core.botocore_session import new_botocore_session
from pipeline.core.names import STEP_NAMES
from pipeline.definition.build import BuiltDefinition, build_definition
from pipeline.definition.code_bundles import build_bundle, repository_bundle
from pipeline.definition.config import PipelineConfig
from pipeline.definition.schema import DEFAULT_SCHEMA, default_schema_uri
from pipeline.local.environments import JobEnvironment
from preprocessing.command import build_parser as build_preprocess_parser
from preprocessing.inputs import load_decided as load_decided_schema

EXECUTION_ID = "a1b2c3d4e5f6"
OPERATION_BY_STEP_TYPE = {
    "Processing": "CreateProcessingJob",
    "Training": "CreateTrainingJob",
    "Model": "CreateModel",
    "Transform": "CreateTransformJob",
    "RegisterModel": "CreateModelPackage",
    "Tuning": "CreateHyperParameterTuningJob",
    "QualityCheck": "CreateProcessingJob",  # the analyzer's processing job
}
# the job name SageMaker generates when the definition leaves it out
GENERATED_NAME = {"CreateTrainingJob": "TrainingJobName", "CreateModelPackage": None}

SECURE = PipelineConfig(
    region="eu-west-1",
    role_arn="arn:aws:iam::123456789012:role/service-role/PipelineRole",
    bucket="secure-bucket",
    pipeline_name="secure-pipeline",
    model_package_group="secure-models",
    kms_key_id="arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    subnets=("subnet-0aaa", "subnet-0bbb"),
    security_group_ids=("sg-0ccc",),
    enable_network_isolation=True,
    encrypt_inter_container_traffic=True,
    tags=(("cost-center", "ml"),),
    project_name="churn",
    project_id="p-abc123",
)


@pytest.fixture(scope="module")
def built() -> BuiltDefinition:
    return build_definition(PipelineConfig())


@pytest.fixture(scope="module")
def definition(built: BuiltDefinition) -> dict[str, Any]:
    return json.loads(built.definition_json)


@pytest.fixture(scope="module")
def secure_definition() -> dict[str, Any]:
    return json.loads(build_definition(SECURE).definition_json)


def all_steps(definition: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every step by name, including those nested in the condition's branches."""
    found: dict[str, dict[str, Any]] = {}

    def visit(steps: list[dict[str, Any]]) -> None:
        for step in steps:
            found[step["Name"]] = step
            if step["Type"] == "Condition":
                visit(step["Arguments"]["IfSteps"])
                visit(step["Arguments"]["ElseSteps"])

    visit(definition["Steps"])
    return found


# ---------------------------------------------------------------- offline, deterministic


def environment() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name != "PYTEST_CURRENT_TEST"}


def test_environment_is_restored_after_a_build(built: BuiltDefinition) -> None:
    # snapshot here, not at import: libraries other test modules import (scikit-learn sets KMP_* variables) may
    # change the environment in between
    before = environment()
    build_definition(SECURE)
    assert environment() == before


def test_json_is_canonical(built: BuiltDefinition, definition: dict[str, Any]) -> None:
    assert built.definition_json == json.dumps(definition, indent=2, sort_keys=True) + "\n"


# ---------------------------------------------------------------- botocore request shapes


def resolve(value: Any, defaults: dict[str, Any]) -> Any:
    """Substitute parameters by their defaults and property references by realistic placeholders."""
    if isinstance(value, list):
        return [resolve(item, defaults) for item in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Get"}:
        path: str = value["Get"]
        if path.startswith("Parameters."):
            return defaults[path.removeprefix("Parameters.")]
        if path == "Execution.PipelineExecutionId":
            return EXECUTION_ID
        assert path.startswith("Steps."), path
        if path.endswith(".ModelName"):
            return "llpipe-model-placeholder"
        if path.endswith(".TrainingJobName"):  # a tuning job's training job
            return "llpipe-tune-001-0a1b2c3d"
        if path.endswith("S3ModelArtifacts"):
            return "s3://placeholder-bucket/train/output/model.tar.gz"
        if path.endswith(("S3Uri", "S3OutputPath")):
            return "s3://placeholder-bucket/placeholder/prefix"
        if path.endswith(("Statistics", "Constraints")):  # a QualityCheck step's baseline files
            return f"s3://placeholder-bucket/dataquality/{path.rsplit('Baseline', 1)[-1].lower()}.json"
        raise AssertionError(f"no placeholder for {path}")
    if set(value) == {"Std:Join"}:
        parts = resolve(value["Std:Join"]["Values"], defaults)
        return value["Std:Join"]["On"].join(str(part) for part in parts)
    if set(value) == {"Std:JsonGet"}:  # a report's value; a tuned run's kept model's artifact is a URI
        return (
            "s3://placeholder-bucket/tune/job/output/model.tar.gz"
            if value["Std:JsonGet"]["Path"].endswith("model_data_url")
            else "0.75"
        )
    return {key: resolve(item, defaults) for key, item in value.items()}


@pytest.fixture(scope="module")
def sagemaker_model() -> Any:
    return new_botocore_session().get_service_model("sagemaker")


@pytest.mark.parametrize(
    "step_name", ["Preprocess", "DataQuality", "Train", "CreateModel", "Transform", "Evaluate", "Register"]
)
def test_step_arguments_validate_against_botocore(
    definition: dict[str, Any], secure_definition: dict[str, Any], sagemaker_model: Any, step_name: str
) -> None:
    for current in (definition, secure_definition):
        defaults = {p["Name"]: p["DefaultValue"] for p in current["Parameters"]}
        step = all_steps(current)[step_name]
        operation = OPERATION_BY_STEP_TYPE[step["Type"]]
        request = resolve(step["Arguments"], defaults)
        if operation == "CreateTrainingJob":
            request["TrainingJobName"] = "llpipe-train-placeholder"
        validate_parameters(request, sagemaker_model.operation_model(operation).input_shape)


def test_validation_would_catch_a_raw_integer_hyperparameter(definition: dict[str, Any], sagemaker_model: Any) -> None:
    # the check above is only worth something if it rejects what SDK v3 does by default with ParameterInteger
    defaults = {p["Name"]: p["DefaultValue"] for p in definition["Parameters"]}
    request = resolve(all_steps(definition)["Train"]["Arguments"], defaults)
    request["TrainingJobName"] = "x"
    request["HyperParameters"]["epochs"] = defaults["Epochs"]
    with pytest.raises(ParamValidationError, match="HyperParameters.epochs"):
        validate_parameters(request, sagemaker_model.operation_model("CreateTrainingJob").input_shape)


# ---------------------------------------------------------------- the DAG's contract


def test_steps_and_parameters_are_named_as_documented(definition: dict[str, Any]) -> None:
    assert sorted(all_steps(definition)) == sorted(STEP_NAMES)
    parameters = {p["Name"]: p for p in definition["Parameters"]}
    assert set(parameters) == {
        "InputDataUrl",
        "DataVersion",
        "ProcessingInstanceCount",
        "ProcessingInstanceType",
        "TrainingInstanceCount",
        "TrainingInstanceType",
        "TransformInstanceType",
        "EvaluationInstanceType",
        "PredictorType",
        "LabelColumn",
        "LabelValues",
        "CategoricalColumns",
        "IdColumn",
        "MissingValues",
        "HashBuckets",
        "ValidationFraction",
        "TestFraction",
        "SplitSeed",
        "SchemaUrl",
        "FeatureDim",
        "NumClasses",
        "Epochs",
        "MiniBatchSize",
        "NumModels",
        "LearningRate",
        "Wd",
        "L1",
        "Loss",
        "BinaryClassifierModelSelectionCriteria",
        "PositiveExampleWeightMult",
        "MetricThreshold",
        "ChampionTolerance",
        "BaselineTolerance",
        "ModelApprovalStatus",
        "SkipDataQualityCheck",
        "RegisterNewDataQualityBaseline",
        "DataQualitySuppliedStatistics",
        "DataQualitySuppliedConstraints",
        "ProcessingVolumeSizeInGB",
        "TrainingVolumeSizeInGB",
        "TrainingInputMode",
        "TransformInstanceCount",
        "EvaluationVolumeSizeInGB",
        "UnseenCategories",
    }
    assert all("DefaultValue" in p for p in parameters.values()), "scheduled runs need every default"
    assert parameters["TrainingInstanceCount"]["DefaultValue"] == 2
    assert parameters["ProcessingInstanceCount"]["DefaultValue"] == 2
    assert parameters["FeatureDim"]["DefaultValue"] == "auto"
    assert parameters["LabelValues"]["DefaultValue"] == ""
    assert parameters["DataVersion"] == {"Name": "DataVersion", "Type": "String", "DefaultValue": ""}
    assert parameters["NumClasses"] == {"Name": "NumClasses", "Type": "Integer", "DefaultValue": 3}
    assert parameters["PredictorType"]["DefaultValue"] == "binary_classifier"
    assert parameters["ModelApprovalStatus"]["DefaultValue"] == "PendingManualApproval"
    assert parameters["CategoricalColumns"]["DefaultValue"] == parameters["IdColumn"]["DefaultValue"] == ""
    assert parameters["MissingValues"]["EnumValues"] == ["impute", "error", "zero", "drop"]
    assert parameters["MissingValues"]["DefaultValue"] == "impute"
    assert (parameters["HashBuckets"]["DefaultValue"], parameters["SplitSeed"]["DefaultValue"]) == (0, 0)
    assert parameters["ValidationFraction"]["DefaultValue"] == parameters["TestFraction"]["DefaultValue"] == 0.15
    # a ProcessingInput needs an object: the default SchemaUrl is the built-in schema that decides nothing
    assert parameters["SchemaUrl"]["DefaultValue"] == default_schema_uri("s3://llpipe-local/linear-learner-pipeline")
    assert parameters["ChampionTolerance"] == {"Name": "ChampionTolerance", "Type": "Float", "DefaultValue": 0.0}


def test_preprocess_shards_its_input_and_writes_seven_outputs_per_execution(definition: dict[str, Any]) -> None:
    args = all_steps(definition)["Preprocess"]["Arguments"]
    inputs = {i["InputName"]: i["S3Input"] for i in args["ProcessingInputs"]}
    assert inputs["data"]["S3DataDistributionType"] == "ShardedByS3Key"
    assert inputs["data"]["S3Uri"] == {"Get": "Parameters.InputDataUrl"}
    assert args["ProcessingResources"]["ClusterConfig"]["InstanceCount"] == {
        "Get": "Parameters.ProcessingInstanceCount"
    }
    defaults = {p["Name"]: p["DefaultValue"] for p in definition["Parameters"]}
    outputs = {o["OutputName"]: resolve(o["S3Output"], defaults) for o in args["ProcessingOutputConfig"]["Outputs"]}
    assert outputs == {
        name: {
            "LocalPath": f"/opt/ml/processing/output/{name}",
            "S3UploadMode": "EndOfJob",
            "S3Uri": f"s3://llpipe-local/linear-learner-pipeline/{EXECUTION_ID}/preprocess/{name}",
        }
        for name in ("train", "validation", "test", "summary", "baseline", "model", "rows")
    }
    assert resolve(args["AppSpecification"], defaults)["ContainerArguments"] == [
        "--input-dir",
        "/opt/ml/processing/input/data",
        "--input-source",
        "s3://llpipe-local/linear-learner-pipeline/input/",
        "--output-dir",
        "/opt/ml/processing/output",
        "--label-column",
        "label",
        "--predictor-type",
        "binary_classifier",
        "--feature-dim",
        "auto",
        "--schema",
        "/opt/ml/processing/input/schema",
        "--label-values=",
        "--categorical-columns=",
        "--id-column=",
        "--missing",
        "impute",
        "--hash-buckets",
        "0",
        "--validation-fraction",
        "0.15",
        "--test-fraction",
        "0.15",
        "--seed",
        "0",
        "--data-version=",
        "--train-shards",
        "2",
        "--validation-shards",
        "2",
        "--resource-config",
        "/opt/ml/config/resourceconfig.json",
        "--exit-message-file",
        "/opt/ml/output/message",
    ]
    schema = inputs["schema"]
    assert schema["S3Uri"] == {"Get": "Parameters.SchemaUrl"}
    assert (schema["S3DataDistributionType"], schema["LocalPath"]) == (
        "FullyReplicated",
        "/opt/ml/processing/input/schema",
    )
    # the arguments as the container gets them parse, empty optional values included (no empty argument)
    parsed = build_preprocess_parser().parse_args(resolve(args["AppSpecification"], defaults)["ContainerArguments"])
    assert (parsed.categorical_columns, parsed.id_column, parsed.label_values) == ("", "", "")
    assert parsed.hash_buckets == 0 and parsed.validation_fraction == 0.15 and parsed.seed == 0


def test_preprocess_is_told_the_s3_uri_its_input_came_from(definition: dict[str, Any]) -> None:
    """Its errors name s3://.../d.csv row 7 (the object the user put there), not /opt/ml/processing/input/data/d.csv:
    the same parameter as the data input's S3Uri, resolved by SageMaker (or the local backend) per execution."""
    args = all_steps(definition)["Preprocess"]["Arguments"]
    container_arguments = args["AppSpecification"]["ContainerArguments"]
    data = next(i["S3Input"] for i in args["ProcessingInputs"] if i["InputName"] == "data")
    source = container_arguments[container_arguments.index("--input-source") + 1]
    assert source == data["S3Uri"] == {"Get": "Parameters.InputDataUrl"}
    assert container_arguments[container_arguments.index("--input-dir") + 1] == data["LocalPath"]


def test_the_default_schema_is_uploaded_and_decides_nothing(built: BuiltDefinition) -> None:
    uri = default_schema_uri("s3://llpipe-local/linear-learner-pipeline")
    assert uri.endswith(f"/schemas/{hashlib.sha256(DEFAULT_SCHEMA).hexdigest()}.json")
    assert json.loads(built.uploads[uri]) == {"format": "llpipe-schema/1"}


def test_preprocess_reads_the_default_schema(built: BuiltDefinition, tmp_path: Path) -> None:
    folder = tmp_path / "schema"
    folder.mkdir()
    uri = default_schema_uri("s3://llpipe-local/linear-learner-pipeline")
    (folder / uri.rsplit("/", 1)[-1]).write_bytes(built.uploads[uri])
    assert load_decided_schema(folder) == {"format": "llpipe-schema/1"}  # the folder the ProcessingInput fills


def test_processing_code_is_mounted_from_its_content_hashed_bundle(built: BuiltDefinition, definition: dict) -> None:
    steps = all_steps(definition)
    for step_name, bundle_name, entry in (
        ("Preprocess", "preprocess", "preprocess.py"),
        ("Evaluate", "evaluate", "evaluate.py"),
    ):
        args = steps[step_name]["Arguments"]
        bundle = repository_bundle(bundle_name)
        code = next(i["S3Input"] for i in args["ProcessingInputs"] if i["InputName"] == "code")
        assert code["S3Uri"] == f"s3://llpipe-local/linear-learner-pipeline/code/{bundle.digest}/"
        assert code["LocalPath"] == "/opt/ml/processing/input/code"
        assert args["AppSpecification"]["ContainerEntrypoint"] == ["python3", f"/opt/ml/processing/input/code/{entry}"]
        for name, content in bundle.files:
            assert built.uploads[code["S3Uri"] + name] == content
    # every upload is a file of one of the two bundles, the serving bundle's sourcedir.tar.gz, or the default schema
    prefix = "s3://llpipe-local/linear-learner-pipeline"
    bundles = {**repository_bundle("preprocess").uploads(prefix), **repository_bundle("evaluate").uploads(prefix)}
    serving = repository_bundle("serving")
    assert built.uploads[serving.tarball_uri(prefix)] == serving.tarball()
    assert set(built.uploads) == set(bundles) | {default_schema_uri(prefix), serving.tarball_uri(prefix)}


def test_training_channels_hyperparameters_and_stopping_condition(definition: dict[str, Any]) -> None:
    args = all_steps(definition)["Train"]["Arguments"]
    channels = {c["ChannelName"]: c for c in args["InputDataConfig"]}
    # no channel is replicated to every host, and no test channel: Evaluate scores the test split
    assert {name: c["DataSource"]["S3DataSource"]["S3DataDistributionType"] for name, c in channels.items()} == {
        "train": "ShardedByS3Key",
        "validation": "ShardedByS3Key",
    }
    # train streams (Pipe by default), dealt to the hosts afresh every epoch; validation is downloaded
    assert channels["train"]["InputMode"] == {"Get": "Parameters.TrainingInputMode"}
    assert channels["train"]["ShuffleConfig"] == {"Seed": 1}
    assert (channels["validation"]["InputMode"], "ShuffleConfig" in channels["validation"]) == ("File", False)
    assert args["ResourceConfig"]["VolumeSizeInGB"] == {"Get": "Parameters.TrainingVolumeSizeInGB"}
    assert {c["ContentType"] for c in channels.values()} == {"application/x-recordio-protobuf"}
    assert channels["train"]["DataSource"]["S3DataSource"]["S3Uri"] == {
        "Get": "Steps.Preprocess.ProcessingOutputConfig.Outputs['train'].S3Output.S3Uri"
    }
    assert args["ResourceConfig"]["InstanceCount"] == {"Get": "Parameters.TrainingInstanceCount"}
    assert "linear-learner" in args["AlgorithmSpecification"]["TrainingImage"]
    assert args["StoppingCondition"]["MaxRuntimeInSeconds"] == 24 * 3600
    defaults = {p["Name"]: p["DefaultValue"] for p in definition["Parameters"]}
    assert resolve(args["HyperParameters"], defaults) == {
        "predictor_type": "binary_classifier",
        "feature_dim": "auto",
        "num_classes": "3",
        "epochs": "15",
        "mini_batch_size": "1000",
        "num_models": "auto",
        "learning_rate": "auto",
        "wd": "auto",
        "l1": "auto",
        "loss": "auto",
        "binary_classifier_model_selection_criteria": "loss_function",
        "positive_example_weight_mult": "1.0",
    }
    assert resolve(args["OutputDataConfig"]["S3OutputPath"], defaults).endswith(f"/{EXECUTION_ID}/train")


def test_feature_dim_reaches_preprocess_and_training_from_one_parameter(definition: dict[str, Any]) -> None:
    steps = all_steps(definition)
    preprocess_args = steps["Preprocess"]["Arguments"]["AppSpecification"]["ContainerArguments"]
    feature_dim = preprocess_args[preprocess_args.index("--feature-dim") + 1]
    assert (
        feature_dim == steps["Train"]["Arguments"]["HyperParameters"]["feature_dim"] == {"Get": "Parameters.FeatureDim"}
    )


def test_transform_scores_the_test_shards_as_jsonlines(definition: dict[str, Any]) -> None:
    args = all_steps(definition)["Transform"]["Arguments"]
    assert args["ModelName"] == {"Get": "Steps.CreateModel.ModelName"}
    assert args["TransformInput"]["SplitType"] == "RecordIO"
    assert args["TransformInput"]["ContentType"] == "application/x-recordio-protobuf"
    assert args["TransformInput"]["DataSource"]["S3DataSource"]["S3Uri"] == {
        "Get": "Steps.Preprocess.ProcessingOutputConfig.Outputs['test'].S3Output.S3Uri"
    }
    assert args["TransformOutput"]["Accept"] == "application/jsonlines"
    assert args["TransformOutput"]["AssembleWith"] == "Line"
    create_model = all_steps(definition)["CreateModel"]["Arguments"]
    assert "PrimaryContainer" not in create_model
    assert create_model["Containers"] == inference_pipeline({"Get": "Steps.Train.ModelArtifacts.S3ModelArtifacts"})
    assert create_model["InferenceExecutionConfig"] == {"Mode": "Serial"}


def inference_pipeline(model_data: Any, registered: bool = False) -> list[dict[str, Any]]:
    """The three containers CreateModel and the registered version hold: featurizer, Linear Learner, labels; the
    registered featurizer's environment also says what an unseen text value gets (UnseenCategories)."""
    serving = repository_bundle("serving")
    sklearn = "683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-scikit-learn:1.2-1-cpu-py3"
    featurizer_data = {
        "Std:Join": {
            "On": "/",
            "Values": [
                {"Get": "Steps.Preprocess.ProcessingOutputConfig.Outputs['model'].S3Output.S3Uri"},
                "model.tar.gz",
            ],
        }
    }

    def script(role: str) -> dict[str, Any]:
        environment = {
            "LLPIPE_SERVING_ROLE": role,
            "SAGEMAKER_CONTAINER_LOG_LEVEL": "20",
            "SAGEMAKER_PROGRAM": "inference.py",
            "SAGEMAKER_REGION": "us-east-1",
            "SAGEMAKER_SUBMIT_DIRECTORY": f"s3://llpipe-local/linear-learner-pipeline/code/{serving.digest}/sourcedir.tar.gz",
        }
        return {"Environment": environment, "Image": sklearn, "ModelDataUrl": featurizer_data}

    linear_learner = "382416733822.dkr.ecr.us-east-1.amazonaws.com/linear-learner:1"
    featurizer = script("featurizer")
    if registered:
        featurizer["Environment"]["LLPIPE_UNSEEN_CATEGORIES"] = {"Get": "Parameters.UnseenCategories"}
    return [
        featurizer,
        {"Environment": {}, "Image": linear_learner, "ModelDataUrl": model_data},
        script("labels"),
    ]


def test_evaluate_reads_predictions_and_test_shards_and_publishes_its_report(definition: dict[str, Any]) -> None:
    step = all_steps(definition)["Evaluate"]
    inputs = {i["InputName"]: i["S3Input"] for i in step["Arguments"]["ProcessingInputs"]}
    assert inputs["predictions"]["S3Uri"] == {"Get": "Steps.Transform.TransformOutput.S3OutputPath"}
    assert inputs["predictions"]["LocalPath"] == "/opt/ml/processing/input/predictions"
    assert inputs["test"]["LocalPath"] == "/opt/ml/processing/input/test"
    # the scikit-learn baseline is fitted on (a sample of) the same train split Linear Learner trained on, read from
    # S3 by the job as far as the sample needs: not an input, which SageMaker would download whole
    assert "train" not in inputs
    # the raw-column baseline: Preprocess's bounded sample of the raw train and test rows, an input (a few MB)
    assert inputs["rows"]["S3Uri"] == {"Get": "Steps.Preprocess.ProcessingOutputConfig.Outputs['rows'].S3Output.S3Uri"}
    assert inputs["rows"]["LocalPath"] == "/opt/ml/processing/input/rows"
    arguments = step["Arguments"]["AppSpecification"]["ContainerArguments"]
    assert arguments[arguments.index("--rows-dir") + 1] == "/opt/ml/processing/input/rows"
    assert arguments[arguments.index("--train-uri") + 1] == {
        "Get": "Steps.Preprocess.ProcessingOutputConfig.Outputs['train'].S3Output.S3Uri"
    }
    assert arguments[arguments.index("--baseline-tolerance") + 1] == {
        "Std:Join": {"On": "", "Values": [{"Get": "Parameters.BaselineTolerance"}]}
    }
    (output,) = step["Arguments"]["ProcessingOutputConfig"]["Outputs"]
    assert output["OutputName"] == "evaluation"
    assert output["S3Output"]["LocalPath"] == "/opt/ml/processing/output/evaluation"
    assert step["PropertyFiles"] == [
        {"FilePath": "evaluation.json", "OutputName": "evaluation", "PropertyFileName": "EvaluationReport"}
    ]


def test_processing_steps_say_why_they_failed_where_sagemaker_shows_it(definition: dict[str, Any]) -> None:
    """Both scripts get SageMaker's exit-message file (its first 1 KB becomes the job's ExitMessage) and the host list
    naming the instance in it, as container paths: the local backend remaps them into each instance's sandbox."""
    for name in ("Preprocess", "Evaluate"):
        arguments = all_steps(definition)[name]["Arguments"]["AppSpecification"]["ContainerArguments"]
        assert arguments[arguments.index("--exit-message-file") + 1] == "/opt/ml/output/message", name
        assert arguments[arguments.index("--resource-config") + 1] == "/opt/ml/config/resourceconfig.json", name


def test_evaluate_compares_with_the_champion_of_the_registered_group(definition: dict[str, Any]) -> None:
    arguments = all_steps(definition)["Evaluate"]["Arguments"]["AppSpecification"]["ContainerArguments"]
    options = {arguments[i]: arguments[i + 1] for i in range(0, len(arguments), 2)}
    assert options["--model-package-group"] == "linear-learner-models"  # the group Register writes to
    assert options["--region"] == "us-east-1"
    assert options["--metric-threshold"] == {"Std:Join": {"On": "", "Values": [{"Get": "Parameters.MetricThreshold"}]}}
    assert options["--champion-tolerance"] == {
        "Std:Join": {"On": "", "Values": [{"Get": "Parameters.ChampionTolerance"}]}
    }


def test_data_quality_checks_preprocess_raw_baseline_rows_before_training(definition: dict[str, Any]) -> None:
    """SDK v3 QualityCheckStep: Model Monitor's analyzer on Preprocess's baseline output (raw feature columns, CSV
    with a header), the two switches and the supplied baselines as parameters, the group's approved baseline."""
    steps = all_steps(definition)
    step = steps["DataQuality"]
    assert {key: value for key, value in step.items() if key != "Arguments"} == {
        "Name": "DataQuality",
        "Type": "QualityCheck",
        "CheckType": "DATA_QUALITY",
        "ModelPackageGroupName": "linear-learner-models",
        "SkipCheck": {"Get": "Parameters.SkipDataQualityCheck"},
        "FailOnViolation": True,
        "RegisterNewBaseline": {"Get": "Parameters.RegisterNewDataQualityBaseline"},
        "SuppliedBaselineStatistics": {"Get": "Parameters.DataQualitySuppliedStatistics"},
        "SuppliedBaselineConstraints": {"Get": "Parameters.DataQualitySuppliedConstraints"},
    }
    args = step["Arguments"]
    assert args["AppSpecification"] == {
        "ImageUri": "156813124566.dkr.ecr.us-east-1.amazonaws.com/sagemaker-model-monitor-analyzer"
    }
    assert args["Environment"] == {
        "dataset_format": '{"csv": {"header": true, "output_columns_position": "START"}}',
        "dataset_source": "/opt/ml/processing/input/baseline_dataset_input",
        "output_path": "/opt/ml/processing/output",
        "publish_cloudwatch_metrics": "Disabled",
    }
    (dataset,) = args["ProcessingInputs"]
    assert dataset["S3Input"]["S3Uri"] == {
        "Get": "Steps.Preprocess.ProcessingOutputConfig.Outputs['baseline'].S3Output.S3Uri"
    }
    defaults = {p["Name"]: p["DefaultValue"] for p in definition["Parameters"]}
    (output,) = resolve(args["ProcessingOutputConfig"]["Outputs"], defaults)
    assert output["S3Output"]["S3Uri"] == f"s3://llpipe-local/linear-learner-pipeline/{EXECUTION_ID}/dataquality"
    parameters = {p["Name"]: p for p in definition["Parameters"]}
    assert parameters["SkipDataQualityCheck"] == {
        "Name": "SkipDataQualityCheck",
        "Type": "Boolean",
        "DefaultValue": False,
    }
    assert parameters["RegisterNewDataQualityBaseline"]["DefaultValue"] is False
    assert parameters["DataQualitySuppliedStatistics"]["DefaultValue"] == ""
    assert steps["Train"]["DependsOn"] == ["DataQuality"]  # a feed failing the check is never trained on


def test_register_carries_the_data_quality_baselines_and_the_report(definition: dict[str, Any]) -> None:
    """ModelMetrics: this run's baseline and Evaluate's report; DriftCheckBaselines: the baseline the check used
    (AWS's drift-detection sample's wiring)."""
    args = all_steps(definition)["Register"]["Arguments"]

    def source(prop: str) -> dict[str, Any]:
        return {"ContentType": "application/json", "S3Uri": {"Get": f"Steps.DataQuality.{prop}"}}

    assert args["ModelMetrics"]["ModelDataQuality"] == {
        "Statistics": source("CalculatedBaselineStatistics"),
        "Constraints": source("CalculatedBaselineConstraints"),
    }
    assert args["ModelMetrics"]["ModelQuality"]["Statistics"]["S3Uri"]["Std:Join"]["Values"][1] == "evaluation.json"
    assert args["DriftCheckBaselines"] == {
        "ModelDataQuality": {
            "Statistics": source("BaselineUsedForDriftCheckStatistics"),
            "Constraints": source("BaselineUsedForDriftCheckConstraints"),
        }
    }


def test_quality_gate_registers_or_fails_with_metric_value_and_threshold(definition: dict[str, Any]) -> None:
    gate = all_steps(definition)["QualityGate"]["Arguments"]
    report = {"Get": "Steps.Evaluate.PropertyFiles.EvaluationReport"}
    threshold, champion, baseline = gate["Conditions"]  # a Condition step's conditions must all hold
    assert threshold == {  # MetricThreshold, or the automatic floor for -1: Evaluate decides which
        "Type": "GreaterThanOrEqualTo",
        "LeftValue": {"Std:JsonGet": {"Path": "gate.value", "PropertyFile": report}},
        "RightValue": {"Std:JsonGet": {"Path": "decision.threshold_floor", "PropertyFile": report}},
    }
    assert champion == {
        "Type": "GreaterThanOrEqualTo",
        "LeftValue": {"Std:JsonGet": {"Path": "gate.value", "PropertyFile": report}},
        "RightValue": {"Std:JsonGet": {"Path": "decision.champion_floor", "PropertyFile": report}},
    }
    assert baseline == {
        "Type": "GreaterThanOrEqualTo",
        "LeftValue": {"Std:JsonGet": {"Path": "gate.value", "PropertyFile": report}},
        "RightValue": {"Std:JsonGet": {"Path": "decision.baseline_floor", "PropertyFile": report}},
    }
    assert [s["Name"] for s in gate["IfSteps"]] == ["Register"]
    (failed,) = gate["ElseSteps"]
    assert failed["Name"] == "QualityGateFailed" and failed["Type"] == "Fail"
    # the decision's reason first, then the values compared, each floor named by Evaluate for what it is
    assert failed["Arguments"]["ErrorMessage"]["Std:Join"] == {
        "On": "",
        "Values": [
            "Quality gate failed: ",
            {"Std:JsonGet": {"Path": "decision.reason", "PropertyFile": report}},
            " | compared ",
            {"Std:JsonGet": {"Path": "gate.metric", "PropertyFile": report}},
            " = ",
            {"Std:JsonGet": {"Path": "gate.value", "PropertyFile": report}},
            " with MetricThreshold ",
            {"Get": "Parameters.MetricThreshold"},
            ", ",
            {"Std:JsonGet": {"Path": "decision.floors", "PropertyFile": report}},
        ],
    }
    register = gate["IfSteps"][0]["Arguments"]
    assert register["ModelPackageGroupName"] == "linear-learner-models"
    instance_types = ["ml.m5.large", "ml.m5.xlarge", "ml.c5.large", "ml.c5.xlarge"]
    assert register["InferenceSpecification"] == {
        # the inference pipeline, as CreateModel holds it; Linear Learner without script-mode variables
        "Containers": inference_pipeline({"Get": "Steps.Train.ModelArtifacts.S3ModelArtifacts"}, registered=True),
        "SupportedContentTypes": [
            "text/csv",
            "application/json",
            "application/jsonlines",
            "application/x-recordio-protobuf",
        ],
        "SupportedResponseMIMETypes": ["application/json", "application/jsonlines"],
        "SupportedRealtimeInferenceInstanceTypes": instance_types,
        "SupportedTransformInstanceTypes": instance_types,
    }
    assert register["ModelApprovalStatus"] == {"Get": "Parameters.ModelApprovalStatus"}

    def decision(field: str) -> dict[str, Any]:
        value = {"Std:JsonGet": {"Path": f"decision.{field}", "PropertyFile": report}}
        return {"Std:Join": {"On": "", "Values": [value]}}

    assert register["CustomerMetadataProperties"] == {
        "ChampionModelPackageArn": decision("champion_model_package_arn"),
        "ChampionValue": decision("champion_value"),
        "ChallengerValue": decision("challenger_value"),
        "GateMetric": decision("metric"),
        "ChampionTolerance": decision("champion_tolerance"),
        "BaselineValue": decision("baseline_value"),
    }
    assert register["ModelMetrics"]["ModelQuality"]["Statistics"]["S3Uri"] == {
        "Std:Join": {
            "On": "/",
            "Values": [
                {"Get": "Steps.Evaluate.ProcessingOutputConfig.Outputs['evaluation'].S3Output.S3Uri"},
                "evaluation.json",
            ],
        }
    }


def test_job_steps_are_cached_and_retried(definition: dict[str, Any]) -> None:
    steps = all_steps(definition)
    for name in ("Preprocess", "Train", "Transform", "Evaluate"):
        if name == "Evaluate":  # it reads the registry's champion, which no cache key can see
            assert "CacheConfig" not in steps[name]
        else:
            assert steps[name]["CacheConfig"] == {"Enabled": True, "ExpireAfter": "P30D"}
        kinds = {kind for policy in steps[name]["RetryPolicies"] for kind in policy["ExceptionType"]}
        assert {"SageMaker.CAPACITY_ERROR", "Step.THROTTLING"} <= kinds
    for name in ("CreateModel", "Register"):
        kinds = {kind for policy in steps[name]["RetryPolicies"] for kind in policy["ExceptionType"]}
        assert kinds == {"Step.SERVICE_FAULT", "Step.THROTTLING"}


def test_security_options_reach_every_job(secure_definition: dict[str, Any]) -> None:
    steps = all_steps(secure_definition)
    key = SECURE.kms_key_id
    vpc = {"SecurityGroupIds": ["sg-0ccc"], "Subnets": ["subnet-0aaa", "subnet-0bbb"]}
    expected_tags = [
        {"Key": "cost-center", "Value": "ml"},
        {"Key": "sagemaker:project-id", "Value": "p-abc123"},
        {"Key": "sagemaker:project-name", "Value": "churn"},
    ]
    train = steps["Train"]["Arguments"]
    assert train["EnableNetworkIsolation"] is True
    assert train["EnableInterContainerTrafficEncryption"] is True
    assert train["VpcConfig"] == vpc
    assert train["OutputDataConfig"]["KmsKeyId"] == key
    assert train["ResourceConfig"]["VolumeKmsKeyId"] == key
    assert train["Tags"] == expected_tags
    assert steps["Preprocess"]["Arguments"]["NetworkConfig"]["EnableNetworkIsolation"] is True
    # Evaluate calls the registry and S3: an isolated container reaches no API, VPC endpoints serve it instead
    assert steps["Evaluate"]["Arguments"]["NetworkConfig"]["EnableNetworkIsolation"] is False
    assert steps["DataQuality"]["Arguments"]["NetworkConfig"]["EnableNetworkIsolation"] is True  # reads S3 only
    for name in ("Preprocess", "Evaluate", "DataQuality"):
        args = steps[name]["Arguments"]
        assert args["NetworkConfig"]["EnableInterContainerTrafficEncryption"] is True
        assert args["ProcessingOutputConfig"]["KmsKeyId"] == key
        assert args["ProcessingResources"]["ClusterConfig"]["VolumeKmsKeyId"] == key
        assert args["NetworkConfig"]["VpcConfig"] == vpc
        assert args["Tags"] == expected_tags
        assert args["RoleArn"] == SECURE.role_arn
    transform = steps["Transform"]["Arguments"]
    assert transform["TransformOutput"]["KmsKeyId"] == key
    assert transform["TransformResources"]["VolumeKmsKeyId"] == key
    assert transform["Tags"] == expected_tags
    assert steps["CreateModel"]["Arguments"]["VpcConfig"] == vpc
    assert steps["CreateModel"]["Arguments"]["EnableNetworkIsolation"] is True
    assert steps["Register"]["Arguments"]["ModelPackageGroupName"] == "secure-models"
    uri = steps["Preprocess"]["Arguments"]["ProcessingOutputConfig"]["Outputs"][0]["S3Output"]["S3Uri"]
    assert uri["Std:Join"]["Values"][0] == "s3://secure-bucket/secure-pipeline"


# ---------------------------------------------------------------- code bundles


def test_bundle_digest_follows_content_and_names(tmp_path: Path) -> None:
    (tmp_path / "entry.py").write_text("print('a')\n")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "__init__.py").write_text("")
    (tmp_path / "lib" / "util.py").write_text("X = 1\n")

    def bundle(*modules: str):
        return build_bundle(tmp_path / "entry.py", [tmp_path / "lib" / module for module in modules], tmp_path)

    first = bundle("util.py")
    assert first.entry_point == "entry.py"
    assert first.digest == bundle("util.py").digest
    assert first.uploads("s3://b/p") == {
        f"s3://b/p/code/{first.digest}/entry.py": b"print('a')\n",
        f"s3://b/p/code/{first.digest}/lib/__init__.py": b"",  # the package of a module comes along
        f"s3://b/p/code/{first.digest}/lib/util.py": b"X = 1\n",
    }
    (tmp_path / "lib" / "util.py").write_text("X = 2\n")
    assert bundle("util.py").digest != first.digest
    (tmp_path / "lib" / "renamed.py").write_text("X = 1\n")
    (tmp_path / "lib" / "util.py").write_text("X = 1\n")
    assert bundle("renamed.py").digest != first.digest


def test_bundle_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="missing.py"):
        build_bundle(tmp_path / "missing.py")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "same.py").write_text("")
    (tmp_path / "same.py").write_text("")
    with pytest.raises(ValueError, match="same.py"):  # the entry lands at the root, where a module of that path would
        build_bundle(tmp_path / "a" / "same.py", [tmp_path / "same.py"], tmp_path)
    with pytest.raises(ValueError, match="is not under"):
        build_bundle(tmp_path / "same.py", [tmp_path / "a" / "same.py"], tmp_path / "elsewhere")


def write_uploaded_bundle(built: BuiltDefinition, prefix: str, folder: Path) -> None:
    """The objects under a code prefix as the ``code`` ProcessingInput lays them out (keys' folders kept)."""
    for uri, content in built.uploads.items():
        if uri.startswith(prefix):
            (folder / uri.removeprefix(prefix)).parent.mkdir(parents=True, exist_ok=True)
            (folder / uri.removeprefix(prefix)).write_bytes(content)


def test_the_uploaded_preprocess_bundle_runs_and_rejects_a_feature_dim_mismatch(
    built: BuiltDefinition, definition: dict[str, Any], tmp_path: Path, image_environment: JobEnvironment
) -> None:
    """The bundle as uploaded is self-contained (run by the image's Python, which has no llpipe installed), and a
    FeatureDim that disagrees with the data fails Preprocess."""
    args = all_steps(definition)["Preprocess"]["Arguments"]
    prefix = next(i["S3Input"]["S3Uri"] for i in args["ProcessingInputs"] if i["InputName"] == "code")
    code = tmp_path / "code"
    write_uploaded_bundle(built, prefix, code)
    data = tmp_path / "processing" / "input" / "data"
    data.mkdir(parents=True)
    rows = "\n".join(f"{i % 2},{i},{i * 2},{i * 3}" for i in range(60))
    (data / "part.csv").write_text("label,a,b,c\n" + rows + "\n")
    defaults = {p["Name"]: p["DefaultValue"] for p in definition["Parameters"]}
    schema = tmp_path / "processing" / "input" / "schema"  # what the schema ProcessingInput materialises
    schema.mkdir()
    (schema / "default.json").write_bytes(built.uploads[defaults["SchemaUrl"]])
    defaults["FeatureDim"] = "5"  # the data has 3 features
    container_args = [
        str(tmp_path / a.removeprefix("/opt/ml/")) if a.startswith("/opt/ml/") else a
        for a in resolve(args["AppSpecification"]["ContainerArguments"], defaults)
    ]
    run = [str(image_environment.python), str(code / "preprocess.py"), *container_args]
    env = {"PATH": os.environ["PATH"], **image_environment.variables}  # no PYTHONPATH: every module from the bundle
    failed = subprocess.run(run, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert failed.returncode != 0
    assert "5" in failed.stderr and "3" in failed.stderr and "feature" in failed.stderr.lower()
    assert not list((tmp_path / "processing" / "output" / "train").glob("*"))
    container_args[container_args.index("--feature-dim") + 1] = "3"
    run = [str(image_environment.python), str(code / "preprocess.py"), *container_args]
    passed = subprocess.run(run, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert passed.returncode == 0, passed.stderr
    assert list((tmp_path / "processing" / "output" / "train").iterdir())


def test_the_evaluate_bundle_holds_its_entry_at_the_root_and_its_packages(
    built: BuiltDefinition, tmp_path: Path, image_environment: JobEnvironment
) -> None:
    bundle = repository_bundle("evaluate")
    write_uploaded_bundle(built, f"s3://llpipe-local/linear-learner-pipeline/code/{bundle.digest}/", tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.py")) == sorted(
        name for name, _ in bundle.files
    )
    assert "evaluate.py" in {p.name for p in tmp_path.iterdir()}, "the entrypoint the definition names"
    env = {"PATH": os.environ["PATH"], **image_environment.variables}  # no PYTHONPATH: packages from the bundle
    result = subprocess.run(
        [str(image_environment.python), str(tmp_path / "evaluate.py"), "--help"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "--predictions-dir" in result.stdout


def test_get_pipeline_gives_the_sdk_pipeline_of_the_same_definition(definition: dict[str, Any]) -> None:
    from pipeline import get_pipeline

    pipeline = get_pipeline(bucket="llpipe-local")
    assert type(pipeline).__name__ == "Pipeline" and pipeline.name == "linear-learner-pipeline"
    assert json.loads(pipeline.definition()) == definition
