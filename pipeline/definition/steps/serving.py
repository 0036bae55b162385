"""The inference pipeline's three containers, as CreateModel (``Containers``) and the registered model package
(``InferenceSpecification.Containers``) both hold them: the featurizer (scikit-learn image, raw rows to Linear
Learner's input with Preprocess's encoding), Linear Learner, and the labels container (predicted_label to the label
value). The featurizer's and the labels container's model data is Preprocess's ``model/model.tar.gz`` (the schema
and summary of this execution); their code is the ``serving`` bundle's ``sourcedir.tar.gz``."""

from __future__ import annotations

from typing import Any

from containerlib.names import UNSEEN_VARIABLE
from pipeline.core.names import SERVING_FEATURIZER, SERVING_LABELS, SERVING_PROGRAM, SERVING_ROLE_VARIABLE
from pipeline.definition.code_bundles import CodeBundle
from pipeline.definition.config import PipelineConfig
from pipeline.definition.steps.common import linear_learner_image, sklearn_image

MODEL_DATA_OUTPUT = "model"  # Preprocess's output holding model.tar.gz


def serving_containers(
    config: PipelineConfig, bundle: CodeBundle, preprocess: Any, model_data: Any, unseen: Any = None
) -> list[dict]:
    """[featurizer, Linear Learner, labels] as ContainerDefinitions (CreateModel and CreateModelPackage share the
    keys Image, ModelDataUrl and Environment). ``unseen``: the featurizer's setting for text values never seen in
    training (the registered version's: the ``UnseenCategories`` parameter); None: the container's default."""
    from sagemaker.core.workflow.functions import Join

    featurizer_data = Join(
        on="/",
        values=[
            preprocess.properties.ProcessingOutputConfig.Outputs[MODEL_DATA_OUTPUT].S3Output.S3Uri,
            "model.tar.gz",
        ],
    )

    def script_container(role: str) -> dict[str, Any]:
        return {
            "Image": sklearn_image(config),
            "ModelDataUrl": featurizer_data,
            "Environment": {
                "SAGEMAKER_PROGRAM": SERVING_PROGRAM,
                "SAGEMAKER_SUBMIT_DIRECTORY": bundle.tarball_uri(config.pipeline_prefix),
                "SAGEMAKER_CONTAINER_LOG_LEVEL": "20",
                "SAGEMAKER_REGION": config.region,
                SERVING_ROLE_VARIABLE: role,
            },
        }

    featurizer = script_container(SERVING_FEATURIZER)
    if unseen is not None:
        featurizer["Environment"][UNSEEN_VARIABLE] = unseen
    return [
        featurizer,
        {"Image": linear_learner_image(config), "ModelDataUrl": model_data, "Environment": {}},
        script_container(SERVING_LABELS),
    ]
