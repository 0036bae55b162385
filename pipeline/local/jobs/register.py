"""A local RegisterModel step: the resolved CreateModelPackage request goes into the local registry (SQLite).

As SageMaker Pipelines does, the package records the execution that generated it (MetadataProperties.GeneratedBy);
the model-quality report the request points to is read from the local S3 folder and stored with the package; the
data-quality baselines it points to (ModelMetrics / DriftCheckBaselines ``ModelDataQuality``) must exist there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.local.jobs.contract import Job, StepFailed
from pipeline.local.s3 import LocalS3


@dataclass(frozen=True)
class RegisterJobs:
    """Runs RegisterModel steps into the registry database at ``db_path``."""

    s3: LocalS3
    db_path: Path
    region: str
    account: str

    def __call__(self, job: Job) -> dict[str, Any]:
        from pipeline.local.registry import LocalRegistry, RegistryError

        request = dict(job.arguments)
        metadata = dict(request.get("MetadataProperties") or {})
        metadata.setdefault("GeneratedBy", job.execution_arn)
        request["MetadataProperties"] = metadata
        for container in (request.get("InferenceSpecification") or {}).get("Containers", []):
            model_data = container.get("ModelDataUrl")
            if model_data and not self.s3.path(model_data).is_file():
                raise StepFailed(f"ModelDataUrl {model_data} does not exist in the local S3 folder")
        for section in ("ModelMetrics", "DriftCheckBaselines"):  # the data-quality baselines the version carries
            for kind, source in ((request.get(section) or {}).get("ModelDataQuality") or {}).items():
                uri = (source or {}).get("S3Uri")
                if uri and not self.s3.path(uri).is_file():
                    raise StepFailed(f"{section}.ModelDataQuality.{kind} {uri} does not exist in the local S3 folder")
        report_uri = ((request.get("ModelMetrics") or {}).get("ModelQuality") or {}).get("Statistics", {}).get("S3Uri")
        metrics = None
        if report_uri:
            path = self.s3.path(report_uri)
            if not path.is_file():
                raise StepFailed(f"ModelMetrics report {report_uri} does not exist in the local S3 folder")
            metrics = json.loads(path.read_text())
        try:
            package = LocalRegistry(self.db_path, stop=job.stop).register(
                request, metrics=metrics, region=self.region, account=self.account
            )
        except RegistryError as error:
            raise StepFailed(str(error)) from None
        return {
            "ModelPackageArn": package.arn,
            "ModelPackageGroupName": package.group,
            "ModelPackageVersion": package.version,
            "ModelApprovalStatus": package.approval_status,
        }
