"""The local stages' endpoints, as the commands and notebooks reach them: ``llpipe serve`` processes of the work dir
that ``llpipe deploy`` starts, tests and replaces (:mod:`pipeline.local.endpoints`).

    from pipeline.api.endpoints import deploy_local
    outcome = deploy_local("staging")          # the newest approved version, smoke-tested
    outcome = deploy_local("prod")             # exactly the version that passed staging
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.core.deployment import DEFAULT_QUALITY_TOLERANCE, DEFAULT_SMOKE_ROWS, Outcome, Progress

if TYPE_CHECKING:
    from pipeline.definition.config import PipelineConfig
    from pipeline.local.endpoints import LocalEndpoints


def local_endpoints(
    workdir: str | Path | None = None, config: PipelineConfig | None = None, ports: dict[str, int] | None = None
) -> LocalEndpoints:
    """The stages of ``workdir`` (default ``.llpipe``); ``ports`` sets a stage's port for its first deployment
    (staging 8081, prod 8080; 0 picks a free one), after which the stage keeps its port."""
    from pipeline.api import DEFAULT_WORKDIR, load_settings, open_workdir
    from pipeline.local.endpoints import LocalEndpoints

    folder = open_workdir(workdir if workdir is not None else DEFAULT_WORKDIR)
    return LocalEndpoints(folder, config or load_settings({}), ports)


def deploy_local(
    stage: str,
    model_package: str | None = None,
    *,
    workdir: str | Path | None = None,
    config: PipelineConfig | None = None,
    port: int | None = None,
    smoke_rows: int = DEFAULT_SMOKE_ROWS,
    tolerance: float = DEFAULT_QUALITY_TOLERANCE,
    progress: Progress = lambda message: None,
    if_newer: bool = False,
    allow_new_columns: bool = False,
) -> Outcome:
    """Deploy ``model_package`` (staging: an ARN, a version number or latest-approved; prod: the version that passed
    staging) to the stage's local endpoint, as ``llpipe deploy --stage`` does."""
    from pipeline.core.deployment import deploy

    target = local_endpoints(workdir, config, {stage: port} if port is not None else None)
    with target.changing(stage):
        return deploy(target, stage, model_package, smoke_rows, tolerance, progress, if_newer, allow_new_columns)
