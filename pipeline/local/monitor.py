"""A data-quality monitoring job on an endpoint's captured traffic, locally: what Model Monitor's scheduled job does.

The requests captured in a time window (SageMaker's layout: ``<pipeline prefix>/datacapture/<endpoint>/<variant>/
yyyy/mm/dd/hh/*.jsonl`` in the local S3 folder, as ``llpipe serve`` writes them) are checked by the analyzer against
a model package's registered baseline, its ``DriftCheckBaselines.ModelDataQuality`` (by default the newest approved
version's: the one that is served). The job is the request a monitoring schedule runs: the capture prefix at
``/opt/ml/processing/input/endpoint/<endpoint>/<variant>``, ``dataset_format`` ``sagemakerCaptureJson``,
``start_time`` / ``end_time``, the baseline files. The report (``statistics.json``, ``constraints.json``,
``constraint_violations.json``) lands at ``<pipeline prefix>/monitoring/<endpoint>/<variant>/yyyy/mm/dd/hh/<window>/``
(the hour of the window's end, then the window itself, ``<start>-<end>`` as ``20240119T180000Z``: two windows
ending in one hour keep a report each), the job's record (request, logs, environment) in
``<workdir>/monitoring/<id>/``.

A capture that kept a share of the requests (``eventMetadata.samplingPercentage`` below 100) is analysed as the
sample it is, and the run says so (:attr:`MonitoringRun.note`). A version whose requests in the window carry no raw
rows (only encoded input, as the deploy's smoke test sends) has nothing to check: its part is skipped with a note,
not the whole window failed.
"""

from __future__ import annotations

import contextlib
import shutil
import uuid
from collections.abc import Callable
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
    sampling_percentages: tuple[float, ...] = ()  # of the capture that kept them; empty when the records say none

    @property
    def sampling_percentage(self) -> float | list[float] | None:
        """The capture's sampling percentage: one number, the several ones servers of the window used, or None."""
        if not self.sampling_percentages:
            return None
        return self.sampling_percentages[0] if len(self.sampling_percentages) == 1 else list(self.sampling_percentages)

    @property
    def note(self) -> str:
        """That the figures are from a sample, and of what share of the requests; empty for a whole capture."""
        shares = [share for share in self.sampling_percentages if share < 100]
        if not shares:
            return ""
        kept = " and ".join(f"{share:g}%" for share in self.sampling_percentages)
        return (
            f"a {kept} sample: data capture kept {kept} of the requests, so the figures (counts, statistics, drift) "
            "are of that sample, not of every request served"
        )


@dataclass
class Part:
    """The window's requests one version served, as read from the capture files."""

    package: Any
    lines: dict[str, list[str]] = field(default_factory=dict)  # capture file (relative) -> its lines of this part
    requests: int = 0
    raw: int = 0  # requests that carry raw rows (CSV, JSON, JSON Lines): the others hold nothing to check
    percentages: set[float] = field(default_factory=set)


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
    on_skip: Callable[[str], None] = lambda note: None,
) -> list[MonitoringRun]:
    """Run the monitoring jobs of ``[start, end)`` (UTC) of ``endpoint``'s ``variant``: one per model package version
    that served the window's requests (``eventMetadata.modelPackageArn``), each against its own baseline, or one
    against ``model_package``'s when given; a version whose requests hold no raw rows is skipped, ``on_skip`` told
    why. ``MonitorError`` when a version has no baseline, nothing was captured in the window, nothing in it holds
    raw rows, or a job fails."""
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
        whole = _read_window(endpoint, captured, start, end, lambda arn: None).get(None) or Part(package)
        if not whole.requests:
            raise _nothing_captured(endpoint, variant, captured, start, end)
        if not whole.raw:
            raise _no_raw_rows(endpoint, whole.requests, start, end)
        whole.package = package
        return [_run_part(workdir, config, s3, endpoint, variant, start, end, whole, prefix, "", None, environments)]
    groups = _served_versions(workdir, config, endpoint, captured, start, end)
    if not groups:
        raise _nothing_captured(endpoint, variant, captured, start, end)
    checkable = {arn: part for arn, part in groups.items() if part.raw}
    for part in groups.values():
        if not part.raw:
            on_skip(
                f"{part.package.arn}: its {part.requests} request(s) in the window hold no raw rows (only encoded "
                "input, as the deploy's smoke test sends): nothing to check, skipped"
            )
    if not checkable:
        raise _no_raw_rows(endpoint, sum(part.requests for part in groups.values()), start, end)
    if len(groups) == 1:
        ((_, part),) = checkable.items()
        return [
            _run_part(workdir, config, s3, endpoint, variant, start, end, part, prefix, "", part.requests, environments)
        ]
    runs = []
    for part in checkable.values():
        # named by this process, so the reaper removes it if the process is killed before the finally below
        root = f"{config.pipeline_prefix}/monitoring/{MONITOR_STAGING}/{owned_temp_folder_prefix(MONITOR_KIND)}"
        root += uuid.uuid4().hex
        staging = f"{root}/{endpoint}/{variant}/"
        try:
            for relative, text in part.lines.items():
                s3.put_bytes(staging + relative, "".join(text).encode("utf-8"))
            name = f"model-package-{part.package.version}"
            runs.append(
                _run_part(
                    workdir, config, s3, endpoint, variant, start, end, part, staging, name, part.requests, environments
                )
            )
        finally:
            shutil.rmtree(s3.path(root), ignore_errors=True)
            with contextlib.suppress(OSError):
                s3.path(root).parent.rmdir()  # .staging itself, once no other monitor uses it
    return runs


def _no_raw_rows(endpoint: str, requests: int, start: datetime, end: datetime) -> MonitorError:
    return MonitorError(
        f"endpoint {endpoint}'s {requests} captured request(s) in {_iso(start)} - {_iso(end)} hold no raw rows (only "
        "encoded input, as the deploy's smoke test sends): nothing to check; send CSV or JSON rows, or pick another "
        f"window with {opt('start')}/{opt('end')}"
    )


def _nothing_captured(endpoint: str, variant: str, captured: Path, start: datetime, end: datetime) -> MonitorError:
    return MonitorError(
        f"no capture files of endpoint {endpoint} (variant {variant}) under {captured} for "
        f"{_iso(start)} - {_iso(end)}: is the endpoint capturing data, and the window right?"
    )


def _read_window(
    endpoint: str, captured: Path, start: datetime, end: datetime, key: Callable[[str | None], str | None]
) -> dict[str | None, Part]:
    """The window's capture lines grouped by ``key`` of the ARN of the version that served them (package unset)."""
    from containerlib.content_types import RAW_ROW_TYPES
    from dataquality.capture import CaptureError, capture_files, read_lines

    found: dict[str | None, Part] = {}
    try:
        for path in capture_files(captured, start, end):
            relative = path.relative_to(captured).as_posix()
            for record, line in read_lines(path, relative):
                if start <= record.inference_time < end:
                    part = found.setdefault(key(record.model_package_arn), Part(None))
                    part.lines.setdefault(relative, []).append(line)
                    part.requests += 1
                    payload = record.endpoint_input
                    part.raw += payload is not None and payload.media_type in RAW_ROW_TYPES
                    if record.sampling_percentage is not None:
                        part.percentages.add(record.sampling_percentage)
    except CaptureError as error:
        raise MonitorError(f"endpoint {endpoint}'s capture under {captured}: {error}") from None
    return found


def _served_versions(
    workdir: Workdir, config: PipelineConfig, endpoint: str, captured: Path, start: datetime, end: datetime
) -> dict[str, Part]:
    """The window's capture lines by the version that served them: {package ARN: part}. A record without
    ``eventMetadata.modelPackageArn`` (captured before llpipe recorded it) counts as the version the endpoint serves
    now (:func:`served_package`). ``MonitorError`` naming every version that cannot be checked."""
    from pipeline.local.registry import LocalRegistry, RegistryError

    registry = LocalRegistry(workdir.registry_db)
    found = _read_window(endpoint, captured, start, end, lambda arn: arn)
    groups: dict[str, Part] = {}
    problems = []
    for arn, part in found.items():
        try:
            package = served_package(workdir, config, None, endpoint) if arn is None else registry.describe(arn)
        except (MonitorError, RegistryError) as error:
            problems.append(
                f"{arn or 'requests without eventMetadata.modelPackageArn'} ({part.requests} requests): {error}"
            )
            continue
        if not {"Statistics", "Constraints"} <= set(package.drift_check_data_quality):
            problems.append(f"{package.arn} ({part.requests} requests) carries no DriftCheckBaselines.ModelDataQuality")
            continue
        merged = groups.setdefault(package.arn, Part(package))
        for relative, lines in part.lines.items():
            merged.lines.setdefault(relative, []).extend(lines)
        merged.requests += part.requests
        merged.raw += part.raw
        merged.percentages |= part.percentages
    if problems:
        served = ", ".join(f"{arn or 'unrecorded'} ({part.requests})" for arn, part in found.items())
        raise MonitorError(
            f"the requests captured by endpoint {endpoint} in {_iso(start)} - {_iso(end)} were served by "
            f"{served}; each is checked against the baseline of the version that served it, and these cannot be: "
            + "; ".join(problems)
            + f" (narrow the window with {opt('start')}/{opt('end')}, or check all against one baseline with "
            f"{opt('model_package')})"
        )
    return groups


def _run_part(
    workdir: Workdir,
    config: PipelineConfig,
    s3: LocalS3,
    endpoint: str,
    variant: str,
    start: datetime,
    end: datetime,
    served: Part,
    prefix: str,
    part: str,
    requests: int | None,
    environments: ImageEnvironments | None,
) -> MonitoringRun:
    """One monitoring job over the capture files under ``prefix`` against the baseline of the version that served
    them (``served``, whose capture sampling percentages are recorded with the run); its report lands in the
    window's own folder in the hour of its end (``part``, when several versions served the window: a subfolder per
    version)."""
    package, sampling_percentages = served.package, tuple(sorted(served.percentages))
    run_id = f"{end:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
    output = f"{config.pipeline_prefix}/monitoring/{endpoint}/{variant}/{window_folder(start, end)}" + (
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
    run = MonitoringRun(
        run_id, folder, endpoint, variant, start, end, package.arn, properties, requests, unseen, sampling_percentages
    )
    write_json_atomically(folder / "monitoring.json", _record(run))
    return run


def _unseen(captured: Path, start: datetime, end: datetime) -> dict[str, int]:
    """Rows of the window answered with a categorical value never seen in training, per column (from the captured
    answers' ``unseen_categories``)."""
    from dataquality.capture import records, unseen_counts

    return unseen_counts(records(captured, start, end))


def window_folder(start: datetime, end: datetime) -> str:
    """``yyyy/mm/dd/hh/<start>-<end>``: the hour of the window's end (SageMaker's layout), then the window itself."""
    stamp = "%Y%m%dT%H%M%SZ"
    start, end = start.astimezone(timezone.utc), end.astimezone(timezone.utc)
    return f"{end:%Y/%m/%d/%H}/{start.strftime(stamp)}-{end.strftime(stamp)}"


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
        "sampling_percentage": run.sampling_percentage,
        "note": run.note,
        **run.properties,
    }
