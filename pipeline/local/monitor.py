"""A data-quality monitoring job on an endpoint's captured traffic, locally: what Model Monitor's scheduled job does.

The requests captured in a time window (SageMaker's layout: ``<pipeline prefix>/datacapture/<endpoint>/<variant>/
yyyy/mm/dd/hh/*.jsonl`` in the local S3 folder, as ``llpipe serve`` writes them) are checked by the analyzer against
a model package's registered baseline, its ``DriftCheckBaselines.ModelDataQuality`` (by default the newest approved
version's: the one that is served). The job is the request a monitoring schedule runs: the capture prefix at
``/opt/ml/processing/input/endpoint/<endpoint>/<variant>``, ``dataset_format`` ``sagemakerCaptureJson``,
``start_time`` / ``end_time``, the baseline files. The report (``statistics.json``, ``constraints.json``,
``constraint_violations.json``) lands at ``<pipeline prefix>/monitoring/<endpoint>/<variant>/yyyy/mm/dd/hh/`` (the
window's end), the job's record (request, logs, environment) in ``<workdir>/monitoring/<id>/``.
"""

from __future__ import annotations

import contextlib
import shutil
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pipeline.core.errors import MonitorError, opt
from pipeline.core.names import check_resource_name
from pipeline.core.stale import owned_temp_folder_prefix
from pipeline.definition.config import PipelineConfig
from pipeline.local.environments import ImageEnvironments
from pipeline.local.executions import StepRecord, current_owner, write_json_atomically
from pipeline.local.jobs.analyzer import (
    CONSTRAINTS,
    STAND_IN_ENVIRONMENT,
    STATISTICS,
    VIOLATIONS,
    s3_input,
    stand_in_request,
)
from pipeline.local.jobs.contract import Job, StepFailed
from pipeline.local.jobs.processing import ProcessingJobs
from pipeline.local.plan import StepSpec
from pipeline.local.reaper import MONITOR_KIND, MONITOR_OWNER, MONITOR_STAGING
from pipeline.local.s3 import LocalS3
from pipeline.local.workdir import Workdir

ENDPOINT_INPUT = "/opt/ml/processing/input/endpoint"
OUTPUT = "/opt/ml/processing/output"
CAPTURE_FORMAT = '{"sagemakerCaptureJson": {"captureIndexNames": ["endpointInput", "endpointOutput"]}}'
DEFAULT_VARIANT = "AllTraffic"
JOB_STEP = "DataQualityMonitor"


@dataclass(frozen=True)
class MonitoringRun:
    """One monitoring job: what it checked, against which version, and its outputs (as a QualityCheck step's)."""

    id: str
    folder: Path
    endpoint: str
    variant: str
    start: datetime
    end: datetime
    package_arn: str
    properties: dict[str, Any]  # CalculatedBaselineStatistics, ViolationReport, CheckedBaselineStatistics, ...
    requests: int | None = None  # the window's requests this version served (None: all, against a named version)
    unseen_categories: dict[str, int] = field(default_factory=dict)  # rows answered with a never-seen value, by column


def capture_prefix(config: PipelineConfig, endpoint: str, variant: str) -> str:
    """Where an endpoint variant's capture files are; the names checked as SageMaker checks them, as they become
    folders (``../x`` would leave the prefix); named as ``llpipe monitor`` and ``monitor_local`` take them (``serve``
    checks its own first)."""
    check_resource_name(endpoint, "endpoint")
    check_resource_name(variant, "variant")
    return f"{config.pipeline_prefix}/datacapture/{endpoint}/{variant}/"


def served_package(workdir: Workdir, config: PipelineConfig, target: str | None, endpoint: str | None = None) -> Any:
    """The version whose baseline traffic is checked against: ``target`` (a version, ``group/version`` or ARN); with
    none, the version ``endpoint`` serves when it is a stage ``llpipe deploy`` started, else the newest approved one
    (also for ``latest-approved``)."""
    from pipeline.local.endpoints import deployed_package
    from pipeline.local.registry import LocalRegistry, RegistryError

    registry = LocalRegistry(workdir.registry_db)
    group = config.model_package_group
    if target is None and endpoint is not None:
        target = deployed_package(workdir, endpoint)
    try:
        if target in (None, "latest-approved"):
            package = registry.last_approved(group)
            if package is None:
                raise MonitorError(f"model package group {group} has no approved version to take the baseline from")
        else:
            package = registry.describe(target if "/" in target or target.startswith("arn:") else f"{group}/{target}")
    except RegistryError as error:
        raise MonitorError(str(error)) from None
    if not {"Statistics", "Constraints"} <= set(package.drift_check_data_quality):
        raise MonitorError(
            f"model package {package.arn} carries no DriftCheckBaselines.ModelDataQuality (registered before the "
            "pipeline checked data quality?): register a version with a baseline first"
        )
    return package


def monitor_traffic(
    workdir: Workdir,
    config: PipelineConfig,
    endpoint: str,
    start: datetime,
    end: datetime,
    variant: str = DEFAULT_VARIANT,
    model_package: str | None = None,
    environments: ImageEnvironments | None = None,
) -> list[MonitoringRun]:
    """Run the monitoring jobs of ``[start, end)`` (UTC) of ``endpoint``'s ``variant``: one per model package version
    that served the window's requests (``eventMetadata.modelPackageArn``), each against its own baseline, or one
    against ``model_package``'s when given; ``MonitorError`` when a version has no baseline, nothing was captured in
    the window, or a job fails."""
    from dataquality.capture import capture_files

    if start >= end:
        raise MonitorError(f"the window's start {start.isoformat()} is not before its end {end.isoformat()}")
    s3 = LocalS3(workdir.s3)
    prefix = capture_prefix(config, endpoint, variant)
    captured = s3.path(prefix)
    if not (captured.is_dir() and capture_files(captured, start, end)):
        raise _nothing_captured(endpoint, variant, captured, start, end)
    if model_package is not None:
        package = served_package(workdir, config, model_package, endpoint)
        return [_run_job(workdir, config, s3, endpoint, variant, start, end, package, prefix, "", None, environments)]
    groups = _served_versions(workdir, config, endpoint, captured, start, end)
    if not groups:
        raise _nothing_captured(endpoint, variant, captured, start, end)
    if len(groups) == 1:
        ((package, _, count),) = groups.values()
        return [_run_job(workdir, config, s3, endpoint, variant, start, end, package, prefix, "", count, environments)]
    runs = []
    for package, lines, count in groups.values():
        # named by this process, so the reaper removes it if the process is killed before the finally below
        root = f"{config.pipeline_prefix}/monitoring/{MONITOR_STAGING}/{owned_temp_folder_prefix(MONITOR_KIND)}"
        root += uuid.uuid4().hex
        staging = f"{root}/{endpoint}/{variant}/"
        try:
            for relative, text in lines.items():
                s3.put_bytes(staging + relative, "".join(text).encode("utf-8"))
            part = f"model-package-{package.version}"
            runs.append(
                _run_job(
                    workdir, config, s3, endpoint, variant, start, end, package, staging, part, count, environments
                )
            )
        finally:
            shutil.rmtree(s3.path(root), ignore_errors=True)
            with contextlib.suppress(OSError):
                s3.path(root).parent.rmdir()  # .staging itself, once no other monitor uses it
    return runs


def _nothing_captured(endpoint: str, variant: str, captured: Path, start: datetime, end: datetime) -> MonitorError:
    return MonitorError(
        f"no capture files of endpoint {endpoint} (variant {variant}) under {captured} for "
        f"{_iso(start)} - {_iso(end)}: is the endpoint capturing data, and the window right?"
    )


def _served_versions(
    workdir: Workdir, config: PipelineConfig, endpoint: str, captured: Path, start: datetime, end: datetime
) -> dict[str, tuple[Any, dict[str, list[str]], int]]:
    """The window's capture lines by the version that served them: {package ARN: (package, {file: lines})}. A record
    without ``eventMetadata.modelPackageArn`` (captured before llpipe recorded it) counts as the version the endpoint
    serves now (:func:`served_package`). ``MonitorError`` naming every version that cannot be checked."""
    from dataquality.capture import CaptureError, capture_files, read_lines
    from pipeline.local.registry import LocalRegistry, RegistryError

    registry = LocalRegistry(workdir.registry_db)
    found: dict[str | None, dict[str, list[str]]] = {}
    counts: dict[str | None, int] = {}
    try:
        for path in capture_files(captured, start, end):
            relative = path.relative_to(captured).as_posix()
            for record, line in read_lines(path, relative):
                if start <= record.inference_time < end:
                    found.setdefault(record.model_package_arn, {}).setdefault(relative, []).append(line)
                    counts[record.model_package_arn] = counts.get(record.model_package_arn, 0) + 1
    except CaptureError as error:
        raise MonitorError(f"endpoint {endpoint}'s capture under {captured}: {error}") from None
    groups: dict[str, tuple[Any, dict[str, list[str]], int]] = {}
    problems = []
    for arn, files in found.items():
        try:
            package = served_package(workdir, config, None, endpoint) if arn is None else registry.describe(arn)
        except (MonitorError, RegistryError) as error:
            problems.append(
                f"{arn or 'requests without eventMetadata.modelPackageArn'} ({counts[arn]} requests): {error}"
            )
            continue
        if not {"Statistics", "Constraints"} <= set(package.drift_check_data_quality):
            problems.append(f"{package.arn} ({counts[arn]} requests) carries no DriftCheckBaselines.ModelDataQuality")
            continue
        _, merged, before = groups.get(package.arn, (package, {}, 0))
        for relative, lines in files.items():
            merged.setdefault(relative, []).extend(lines)
        groups[package.arn] = (package, merged, before + counts[arn])
    if problems:
        served = ", ".join(f"{arn or 'unrecorded'} ({count})" for arn, count in counts.items())
        raise MonitorError(
            f"the requests captured by endpoint {endpoint} in {_iso(start)} - {_iso(end)} were served by "
            f"{served}; each is checked against the baseline of the version that served it, and these cannot be: "
            + "; ".join(problems)
            + f" (narrow the window with {opt('start')}/{opt('end')}, or check all against one baseline with "
            f"{opt('model_package')})"
        )
    return groups


def _run_job(
    workdir: Workdir,
    config: PipelineConfig,
    s3: LocalS3,
    endpoint: str,
    variant: str,
    start: datetime,
    end: datetime,
    package: Any,
    prefix: str,
    part: str,
    requests: int | None,
    environments: ImageEnvironments | None,
) -> MonitoringRun:
    """One monitoring job over the capture files under ``prefix`` against ``package``'s baseline; its report lands in
    the window's hour folder (``part``, when several versions served the window: a subfolder per version)."""
    run_id = f"{end:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
    output = f"{config.pipeline_prefix}/monitoring/{endpoint}/{variant}/{end:%Y/%m/%d/%H}" + (
        f"/{part}" if part else ""
    )
    request = {
        "ProcessingInputs": [s3_input("endpoint", prefix, f"{ENDPOINT_INPUT}/{endpoint}/{variant}")],
        "ProcessingOutputConfig": {
            "Outputs": [
                {
                    "OutputName": "monitoring_output",
                    "S3Output": {"S3Uri": output, "LocalPath": OUTPUT, "S3UploadMode": "EndOfJob"},
                }
            ]
        },
        "ProcessingResources": {
            "ClusterConfig": {"InstanceCount": 1, "InstanceType": "ml.m5.xlarge", "VolumeSizeInGB": 20}
        },
        "AppSpecification": {"ImageUri": "sagemaker-model-monitor-analyzer"},
        "RoleArn": config.role_arn,
        "Environment": {
            "dataset_format": CAPTURE_FORMAT,
            "dataset_source": ENDPOINT_INPUT,
            "output_path": OUTPUT,
            "start_time": _iso(start),
            "end_time": _iso(end),
            "sagemaker_endpoint_name": endpoint,
            "publish_cloudwatch_metrics": "Disabled",
        },
    }
    baseline = dict(package.drift_check_data_quality)
    request = stand_in_request(s3, request, config.pipeline_prefix, baseline)
    folder = workdir.monitoring / run_id
    folder.mkdir(parents=True, exist_ok=True)
    write_json_atomically(folder / "processing-request.json", request)
    write_json_atomically(folder / MONITOR_OWNER, current_owner())  # the reaper removes a killed job's sandbox
    job = Job(
        step=StepSpec(JOB_STEP, "Processing", {}, frozenset()),
        arguments=request,
        execution_id=run_id,
        pipeline_name=config.pipeline_name,
        record=StepRecord(JOB_STEP, "Processing"),
        folder=folder,
    )
    try:
        ProcessingJobs(s3, environments or ImageEnvironments.default()).run(job, request, STAND_IN_ENVIRONMENT)
    except StepFailed as error:
        raise MonitorError(f"the monitoring job failed: {error} (record: {folder})") from None
    properties = {
        "CalculatedBaselineStatistics": f"{output}/{STATISTICS}",
        "CalculatedBaselineConstraints": f"{output}/{CONSTRAINTS}",
        "ViolationReport": f"{output}/{VIOLATIONS}",
        "BaselineCheckedAgainst": package.arn,
        "CheckedBaselineStatistics": baseline["Statistics"],
        "CheckedBaselineConstraints": baseline["Constraints"],
        "SkipCheck": False,
    }
    unseen = _unseen(s3.path(prefix), start, end)  # the prefix holds this version's records only
    run = MonitoringRun(run_id, folder, endpoint, variant, start, end, package.arn, properties, requests, unseen)
    write_json_atomically(folder / "monitoring.json", _record(run))
    return run


def _unseen(captured: Path, start: datetime, end: datetime) -> dict[str, int]:
    """Rows of the window answered with a categorical value never seen in training, per column (from the captured
    answers' ``unseen_categories``)."""
    from dataquality.capture import records, unseen_counts

    return unseen_counts(records(captured, start, end))


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _record(run: MonitoringRun) -> dict[str, Any]:
    return {
        "id": run.id,
        "endpoint": run.endpoint,
        "variant": run.variant,
        "start_time": _iso(run.start),
        "end_time": _iso(run.end),
        "model_package_arn": run.package_arn,
        "requests": run.requests,
        "unseen_categories": run.unseen_categories,
        **run.properties,
    }
