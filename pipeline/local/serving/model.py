"""A model version's inference pipeline in-process: the featurizer's and labels container's code (``serving``) and
the local Linear Learner's scoring, loaded from the containers the version registered."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from containerlib.linear_learner.model import LinearModel, ModelArtifactError, read_model
from containerlib.linear_learner.responses import UNSEEN_CATEGORIES, responses
from containerlib.names import UNSEEN_OTHER, UNSEEN_VARIABLE
from pipeline.core.errors import ServingError
from pipeline.core.images import is_linear_learner
from pipeline.core.names import SERVING_FEATURIZER, SERVING_LABELS, SERVING_ROLE_VARIABLE
from pipeline.local.s3 import LocalS3
from serving import RequestError
from serving.featurizer import featurize, request_rows_features
from serving.labels import render, with_labels
from serving.model import ServingSpec, load_spec


@dataclass(frozen=True)
class ServedModel:
    """What one endpoint serves: the encoding spec (featurizer and labels) and the Linear Learner model."""

    spec: ServingSpec
    algorithm: LinearModel
    package_arn: str | None = None

    def predictions(self, features: np.ndarray) -> list[dict[str, Any]]:
        """Linear Learner's prediction objects for float32 features, labelled; scores are the float32 values as
        Python floats, exactly as the local batch transform writes them."""
        items = responses(self.algorithm.predictor_type, *self.algorithm.predict(features))
        return with_labels(items, self.spec)

    def invoke(self, body: bytes, content_type: str, accept: str) -> tuple[bytes, str]:
        """One request through the three containers: the response body and its content type; ``RequestError``
        (with its HTTP status) for a request the model cannot answer."""
        features, unseen = request_rows_features(body, content_type, self.spec)
        predictions = self.predictions(features)
        for item, values in zip(predictions, unseen, strict=True):
            if values:  # the row's values outside a vocabulary, answered as column=(other): said in the answer
                item[UNSEEN_CATEGORIES] = values
        return render(predictions, accept)

    def predict_frame(self, frame: pd.DataFrame) -> list[dict[str, Any]]:
        """The labelled predictions of a DataFrame's rows (columns by name), without HTTP."""
        return self.predictions(featurize(frame, self.spec))


def load_served_model(
    s3: LocalS3, containers: Sequence[Mapping[str, Any]], package_arn: str | None, unseen: str | None = None
) -> ServedModel:
    """The inference pipeline a version registered, from its model data in the local S3 folder; ``unseen``: what a
    categorical value never seen in training gets (other: scored as column=(other); refuse: 400); None: what the
    version's featurizer container says (its ``UnseenCategories``), as on SageMaker."""
    roles = {(c.get("Environment") or {}).get(SERVING_ROLE_VARIABLE): c for c in containers}
    algorithm = [c for c in containers if is_linear_learner(str(c.get("Image", "")))]
    if SERVING_FEATURIZER not in roles or SERVING_LABELS not in roles or len(algorithm) != 1:
        raise ServingError(
            f"model package {package_arn} is not llpipe's inference pipeline (featurizer, Linear Learner, labels): "
            "register it with a pipeline run of this version of llpipe"
        )
    if unseen is None:
        unseen = (roles[SERVING_FEATURIZER].get("Environment") or {}).get(UNSEEN_VARIABLE) or UNSEEN_OTHER
    try:
        spec = load_spec(_existing(s3, roles[SERVING_FEATURIZER]["ModelDataUrl"]), unseen)
        model = read_model(_existing(s3, algorithm[0]["ModelDataUrl"]), spec.layout.feature_dim)
    except (OSError, ValueError, KeyError, ModelArtifactError) as error:
        raise ServingError(f"model package {package_arn}: its model data cannot be read ({error})") from None
    return ServedModel(spec, model, package_arn)


def _existing(s3: LocalS3, uri: str) -> Any:
    path = s3.path(uri)
    if not path.is_file():
        raise ServingError(f"{uri} does not exist in the local S3 folder {s3.root}")
    return path


__all__ = ["RequestError", "ServedModel", "ServingError", "load_served_model"]
