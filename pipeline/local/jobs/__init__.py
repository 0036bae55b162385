"""Local jobs, one module per step type, each following the SageMaker container contract of its job."""

from __future__ import annotations

from pathlib import Path

from pipeline.local.interpreter import JobRunner
from pipeline.local.jobs.model import ModelJobs
from pipeline.local.jobs.processing import ProcessingJobs
from pipeline.local.jobs.register import RegisterJobs
from pipeline.local.jobs.training import TrainingJobs
from pipeline.local.jobs.transform import TransformJobs
from pipeline.local.s3 import LocalS3


def local_runners(workdir: Path, *, region: str, account: str) -> dict[str, JobRunner]:
    """The job runner of every step type the local backend runs, all sharing one work dir."""
    s3 = LocalS3(workdir / "s3")
    models = workdir / "models"
    return {
        "Processing": ProcessingJobs(s3, workdir / "registry.db", region),
        "Training": TrainingJobs(s3),
        "Model": ModelJobs(s3, models),
        "Transform": TransformJobs(s3, models),
        "RegisterModel": RegisterJobs(s3, workdir / "registry.db", region=region, account=account),
    }
