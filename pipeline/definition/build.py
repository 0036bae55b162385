"""The Linear Learner pipeline, defined once with the SageMaker Python SDK v3 and built offline.

Preprocess -> DataQuality -> Train -> CreateModel -> Transform -> Evaluate -> QualityGate -> Register |
QualityGateFailed. DataQuality checks the raw input's statistics against the approved version's baseline.
Evaluate also scores the approved champion on the same test split; the gate registers a model that clears
MetricThreshold and is no worse than the champion by more than ChampionTolerance.
With ``tuning_max_jobs`` > 0 a Tuning step named ``Tune`` trains the model (its best training job's), and Train still
trains the untuned defaults beside it, which Evaluate scores on the same test split: when the defaults' model is
better, Evaluate's report is the defaults' model's, and the gate and Register take that model (its
artifact read from the report), so tuning never registers a model worse than the defaults'.
:func:`build_definition` gives the definition JSON (byte-identical on every build) and the code bundles ``upsert``
must upload first; the local backend interprets the same JSON. :func:`get_pipeline` gives the SDK ``Pipeline``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.names import DECISION, MODEL_DATA_URL
from pipeline.definition.cache import cached_definition
from pipeline.definition.code_bundles import REPOSITORY_ROOT, CodeBundle, repository_bundle
from pipeline.definition.config import PipelineConfig, load_config
from pipeline.definition.declared import Parameters
from pipeline.definition.offline import offline_sdk, offline_session
from pipeline.definition.schema import DEFAULT_SCHEMA, default_schema_uri
from pipeline.definition.steps.create_model import create_model_step
from pipeline.definition.steps.data_quality import data_quality_step
from pipeline.definition.steps.evaluate import evaluate_step
from pipeline.definition.steps.gate import quality_gate_step
from pipeline.definition.steps.preprocess import preprocess_step
from pipeline.definition.steps.register import register_step
from pipeline.definition.steps.serving import serving_containers
from pipeline.definition.steps.train import train_step
from pipeline.definition.steps.transform import transform_step
from pipeline.definition.steps.tune import tune_step, tuning_key


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
    serving: CodeBundle

    @classmethod
    def from_repository(cls, root: Path = REPOSITORY_ROOT) -> Bundles:
        """The bundles as the repository's files are now (a code change gives new digests, new S3 prefixes)."""
        return cls(
            preprocess=repository_bundle("preprocess", root),
            evaluate=repository_bundle("evaluate", root),
            serving=repository_bundle("serving", root),
        )


def build_definition(config: PipelineConfig, bundles: Bundles | None = None) -> BuiltDefinition:
    """Build the definition offline, or reuse the cached one when nothing that shapes it changed; the JSON has sorted
    keys and 2-space indents, so builds are byte-identical."""
    bundles = bundles or Bundles.from_repository()

    def build() -> str:
        with offline_sdk(config.region):
            pipeline = _build_pipeline(config, bundles, offline_session(config.region, config.bucket))
            return json.dumps(json.loads(pipeline.definition()), indent=2, sort_keys=True) + "\n"

    digests = (bundles.preprocess.digest, bundles.evaluate.digest, bundles.serving.digest)
    definition_json = cached_definition(config, digests, build)  # the SDK is imported only on a miss
    uploads = {
        **bundles.preprocess.uploads(config.pipeline_prefix),
        **bundles.evaluate.uploads(config.pipeline_prefix),
        bundles.serving.tarball_uri(config.pipeline_prefix): bundles.serving.tarball(),
        default_schema_uri(config.pipeline_prefix): DEFAULT_SCHEMA,
    }
    return BuiltDefinition(
        definition_json=definition_json,
        uploads=dict(sorted(uploads.items())),
    )


def get_pipeline(**config: Any) -> Any:
    """The SDK v3 ``Pipeline`` for notebooks (``from pipeline import get_pipeline``), configured like the CLI.

    Keyword arguments are :class:`PipelineConfig` fields; environment and defaults fill the rest. The code bundles
    are not uploaded by ``Pipeline.upsert()``: deploy with ``llpipe upsert`` or ``pipeline.api.upsert``.
    """
    resolved = load_config(config)
    with offline_sdk(resolved.region):
        return _build_pipeline(resolved, Bundles.from_repository(), offline_session(resolved.region, resolved.bucket))


def mlflow_config(config: PipelineConfig) -> Any:
    """The pipeline's ``MlflowConfig`` when an MLflow tracking server or App is configured, else None: its ARN and
    the default experiment (the pipeline's name, unless ``mlflow_experiment`` names another), which is where a
    scheduled execution lands; ``start`` names the experiment per execution (``MlflowExperimentName``), so nothing
    per execution is frozen here. The SDK passes nothing of it to the steps."""
    if not config.mlflow_arn:
        return None
    from sagemaker.core.shapes.shapes import MlflowConfig

    return MlflowConfig(mlflow_resource_arn=config.mlflow_arn, mlflow_experiment_name=config.experiment_name)


def kept_model_data(evaluate: Any, report: Any) -> Any:
    """The kept model's artifact, read from Evaluate's report (``decision.model_data_url``) when the step runs: a
    JsonGet in a step's arguments, which SageMaker Pipelines resolves for every step type (SDK PR #2506)."""
    from sagemaker.core.workflow.functions import JsonGet

    return JsonGet(step_name=evaluate.name, property_file=report, json_path=f"{DECISION}.{MODEL_DATA_URL}")


def _build_pipeline(config: PipelineConfig, bundles: Bundles, session: Any) -> Any:
    """Assemble parameters and steps into the SDK ``Pipeline`` (inside :func:`offline_sdk`)."""
    from sagemaker.core.workflow.pipeline_definition_config import PipelineDefinitionConfig

    from pipeline.definition.sdk_pipeline import Pipeline

    params = Parameters.create(config)
    preprocess = preprocess_step(config, params, bundles.preprocess, session)
    data_quality = data_quality_step(config, params, preprocess, session)
    defaults = defaults_model = None
    if config.tuning_max_jobs:
        train = tune_step(config, params, preprocess, session)
        # the best training job's artifact: <S3OutputPath>/<TrainingJobName>/output/model.tar.gz
        model_data = train.get_top_model_s3_uri(top_k=0, s3_bucket=config.bucket, prefix=tuning_key(config))
        # the untuned defaults beside it: Evaluate scores both on the test split and keeps the defaults' model when the
        # tuned one scores below it (tuning trains one model a job; the defaults train many)
        defaults = train_step(config, params, preprocess, session)
        defaults.add_depends_on([data_quality])
        defaults_model = defaults.properties.ModelArtifacts.S3ModelArtifacts
    else:
        train = train_step(config, params, preprocess, session)
        model_data = train.properties.ModelArtifacts.S3ModelArtifacts
    train.add_depends_on([data_quality])  # a feed that fails the data-quality check is never trained on
    containers = serving_containers(config, bundles.serving, preprocess, model_data)
    create_model = create_model_step(config, model_data, containers, session)
    transform = transform_step(config, params, preprocess, create_model, session)
    evaluate, report = evaluate_step(
        config, params, bundles.evaluate, preprocess, transform, session, model_data, defaults_model
    )
    registered = model_data
    if defaults_model is not None:
        # the kept model: the tuned one, or the untuned defaults' when better; Evaluate decides and
        # names its artifact in the report, which the registered inference pipeline's Linear Learner serves
        registered = kept_model_data(evaluate, report)
    # the registered version's featurizer refuses unseen text values or not (UnseenCategories); batch transform's
    # scores the test split whatever it holds
    registered_containers = serving_containers(
        config, bundles.serving, preprocess, registered, unseen=params.unseen_categories
    )
    register = register_step(config, params, registered, registered_containers, evaluate, report, data_quality, session)
    gate = quality_gate_step(params, evaluate, report, register)
    return Pipeline(
        name=config.pipeline_name,
        parameters=params.all(),
        steps=[
            preprocess,
            data_quality,
            train,
            *([defaults] if defaults else []),
            create_model,
            transform,
            evaluate,
            gate,
        ],
        sagemaker_session=session,
        pipeline_experiment_config=None,  # no Experiments trial per execution: lineage is in the model registry
        mlflow_config=mlflow_config(config),
        pipeline_definition_config=PipelineDefinitionConfig(use_custom_job_prefix=True),
    )
