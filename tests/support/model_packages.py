"""A CreateModelPackage request as the definition's RegisterModel step resolves it, for the local registry's tests."""

from __future__ import annotations

from typing import Any

REGION, ACCOUNT = "eu-west-1", "123456789012"
IMAGE = "438346466558.dkr.ecr.eu-west-1.amazonaws.com/linear-learner:1"


def request(group: str = "LinearLearnerModels", **overrides: Any) -> dict[str, Any]:
    """A CreateModelPackage request as the pipeline definition's RegisterModel step resolves it."""
    body: dict[str, Any] = {
        "ModelPackageGroupName": group,
        "ModelApprovalStatus": "PendingManualApproval",
        "InferenceSpecification": {
            "Containers": [{"Image": IMAGE, "ModelDataUrl": "s3://bucket/pipe/train/job-1/output/model.tar.gz"}],
            "SupportedContentTypes": ["application/x-recordio-protobuf", "text/csv"],
            "SupportedResponseMIMETypes": ["application/jsonlines", "application/json"],
            "SupportedRealtimeInferenceInstanceTypes": ["ml.m5.large"],
            "SupportedTransformInstanceTypes": ["ml.m5.xlarge"],
        },
        "ModelMetrics": {
            "ModelQuality": {
                "Statistics": {"ContentType": "application/json", "S3Uri": "s3://bucket/pipe/exec-1/evaluation.json"}
            }
        },
        "MetadataProperties": {"GeneratedBy": "arn:aws:sagemaker:eu-west-1:123456789012:pipeline/p/execution/e1"},
        "CustomerMetadataProperties": {"predictor_type": "binary_classifier"},
    }
    body.update(overrides)
    return body
