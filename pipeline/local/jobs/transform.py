"""A local batch transform job: the model's Linear Learner inference over every object of the input prefix.

As SageMaker writes it, the output of input object ``<prefix>/<rel>`` is ``<S3OutputPath>/<rel>.out`` (jsonlines,
one line per record, in order). The model must be a Linear Learner model created by a CreateModel step.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.images import is_linear_learner
from pipeline.core.names import CSV, RECORDIO, media_type
from pipeline.local.jobs.contract import Job, StepFailed
from pipeline.local.jobs.create_model import algorithm_container, read_created_model
from pipeline.local.jobs.storage import list_prefix, relative_key, upload_file
from pipeline.local.s3 import LocalS3

SPLIT_TYPES = {RECORDIO: ("RecordIO",), CSV: ("Line", "None")}


@dataclass(frozen=True)
class TransformJobs:
    """Runs Transform steps against one local S3 folder and the models CreateModel recorded."""

    s3: LocalS3
    models: Path

    def __call__(self, job: Job) -> dict[str, Any]:
        from pipeline.linear_learner import launcher

        arguments = job.arguments
        model = read_created_model(self.models, arguments["ModelName"])
        container = algorithm_container(model)
        image = container.get("Image", "")
        if not is_linear_learner(image):
            raise StepFailed(f"model image {image!r} is not Linear Learner; the local backend transforms only those")
        transform_input = arguments["TransformInput"]
        source = transform_input["DataSource"]["S3DataSource"]
        if source.get("S3DataType", "S3Prefix") != "S3Prefix":
            raise StepFailed(f"TransformInput S3DataType {source['S3DataType']} is not supported locally")
        content_type = media_type(transform_input.get("ContentType") or RECORDIO)
        split_type = transform_input.get("SplitType", "None")
        if content_type in SPLIT_TYPES and split_type not in SPLIT_TYPES[content_type]:
            raise StepFailed(f"SplitType {split_type} does not fit ContentType {content_type}")
        objects = list_prefix(self.s3, source["S3Uri"], "TransformInput")
        relatives = [relative_key(source["S3Uri"], uri) for uri in objects]
        names = [Path(relative).name for relative in relatives]
        if len(set(names)) != len(names):
            raise StepFailed(f"TransformInput {source['S3Uri']}: two objects share a file name in different folders")
        scratch = job.folder / "predictions"
        shutil.rmtree(scratch, ignore_errors=True)
        job.report(f"scoring {len(objects)} object(s)")
        try:
            launcher.transform(
                self.s3.path(container["ModelDataUrl"]),
                [self.s3.path(uri) for uri in objects],
                scratch,
                content_type=content_type,
            )
        except (ValueError, OSError) as error:
            raise StepFailed(f"batch transform failed: {error}") from None
        output_path = arguments["TransformOutput"]["S3OutputPath"].rstrip("/")
        for relative, name in zip(relatives, names, strict=True):
            upload_file(self.s3, scratch / f"{name}.out", f"{output_path}/{relative}.out")
        shutil.rmtree(scratch, ignore_errors=True)
        return {
            **arguments,
            "TransformJobName": job.job_name,
            "TransformJobArn": job.arn(f"transform-job/{job.job_name.lower()}"),
            "TransformJobStatus": "Completed",
        }
