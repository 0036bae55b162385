"""Local jobs, one module per step type, each following the SageMaker container contract of its job."""

from __future__ import annotations

from pipeline.core.forkserver import ForkServers
from pipeline.local.environments import ImageEnvironments
from pipeline.local.jobs.contract import JobRunner
from pipeline.local.jobs.create_model import ModelJobs
from pipeline.local.jobs.processing import ProcessingJobs
from pipeline.local.jobs.quality_check import QualityCheckJobs
from pipeline.local.jobs.register import RegisterJobs
from pipeline.local.jobs.training import TrainingJobs
from pipeline.local.jobs.transform import TransformJobs
from pipeline.local.jobs.tuning import TuningJobs
from pipeline.local.s3 import LocalS3
from pipeline.local.workdir import Workdir


def local_runners(
    workdir: Workdir,
    *,
    region: str,
    account: str,
    environments: ImageEnvironments | None = None,
    fork_servers: ForkServers | None = None,
) -> dict[str, JobRunner]:
    """The job runner of every step type the local backend runs, all sharing one work dir; processing jobs run in
    their image's environment from ``environments`` (default: the user's cache dir); job processes start from
    ``fork_servers`` (None: fresh processes)."""
    s3 = LocalS3(workdir.s3)
    models = workdir.models
    processing = ProcessingJobs(
        s3,
        environments or ImageEnvironments.default(),
        registry_db=workdir.registry_db,
        region=region,
        fork_servers=fork_servers,
    )
    return {
        "Processing": processing,
        "QualityCheck": QualityCheckJobs(processing, workdir.registry_db),
        "Training": TrainingJobs(s3, fork_servers),
        "Tuning": TuningJobs(s3, fork_servers),
        "Model": ModelJobs(s3, models),
        "Transform": TransformJobs(s3, models),
        "RegisterModel": RegisterJobs(s3, workdir.registry_db, region=region, account=account),
    }
