"""A local CreateModel: records the model (image, artifact) under ``<workdir>/models/<ModelName>.json``.

The local model name is the requested one plus a hash of the resolved request, so one artifact keeps one name
across executions and a Transform step whose model did not change can hit the cache.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.images import is_linear_learner
from pipeline.local.executions import write_json_atomically
from pipeline.local.jobs.contract import Job, StepFailed
from pipeline.local.s3 import LocalS3


@dataclass(frozen=True)
class ModelJobs:
    """Runs Model (CreateModel) steps; Transform steps read the models it records."""

    s3: LocalS3
    models: Path

    def __call__(self, job: Job) -> dict[str, Any]:
        request = job.arguments
        containers = [request["PrimaryContainer"]] if request.get("PrimaryContainer") else request.get("Containers")
        if not containers:
            raise StepFailed("CreateModel request has neither PrimaryContainer nor Containers")
        for container in containers:
            model_data = container.get("ModelDataUrl")
            if model_data and not self.s3.path(model_data).is_file():
                raise StepFailed(f"ModelDataUrl {model_data} does not exist in the local S3 folder")
        digest = hashlib.sha256(json.dumps(request, sort_keys=True, default=str).encode()).hexdigest()[:12]
        name = f"{request.get('ModelName') or 'model'}-{digest}"[:63]
        described = {
            **request,
            "ModelName": name,
            "ModelArn": job.arn(f"model/{name.lower()}"),
        }
        write_json_atomically(self.models / f"{name}.json", described)
        return described


def algorithm_container(model: dict[str, Any]) -> dict[str, Any]:
    """The Linear Learner container of a recorded model: its PrimaryContainer, or the one among an inference
    pipeline's Containers (batch transform of encoded input: the featurizer passes it through, the labels container
    only adds a field)."""
    if model.get("PrimaryContainer"):
        return model["PrimaryContainer"]
    for container in model.get("Containers") or []:
        if is_linear_learner(container.get("Image", "")):
            return container
    raise StepFailed(f"model {model.get('ModelName')!r} has no Linear Learner container")


def read_created_model(models: Path, name: str) -> dict[str, Any]:
    """A model recorded by a CreateModel step; ``StepFailed`` naming it when there is none."""
    path = models / f"{name}.json"
    if not path.is_file():
        raise StepFailed(f"model {name!r} does not exist (no CreateModel step created it locally)")
    return json.loads(path.read_text())
