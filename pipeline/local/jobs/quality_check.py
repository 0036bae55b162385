"""A local QualityCheck step (data quality): the analyzer's processing job, with the baseline SageMaker gives it.

As the service does before the job, the step resolves the baseline to check against: the supplied
``SuppliedBaselineStatistics`` / ``SuppliedBaselineConstraints`` (an empty string supplies none), else the
``DriftCheckBaselines.ModelDataQuality`` of the group's newest approved version in the local registry; with
``SkipCheck`` false there must be one. The job is the step's request plus what the service adds: the baseline files
as inputs and their paths in ``baseline_constraints`` / ``baseline_statistics``; Model Monitor's analyzer image is
stood in for by this repository's ``dataquality`` bundle (``pipeline.local.jobs.analyzer``).
``processing-request.json`` in the step's folder is the request that ran.

Properties, as ListPipelineExecutionSteps' ``QualityCheck`` metadata: ``CalculatedBaselineStatistics`` /
``Constraints`` (the job's files), ``BaselineUsedForDriftCheckStatistics`` / ``Constraints`` (the calculated ones with
``RegisterNewBaseline``, else the baseline checked against, or the calculated ones when there is none),
``ViolationReport``, ``CheckJobArn``, ``SkipCheck``, ``RegisterNewBaseline``... A violation with ``FailOnViolation``
fails the step naming every feature and check; its properties stay, so the execution shows what was found.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.errors import one_line
from pipeline.local.executions import write_json_atomically
from pipeline.local.jobs.analyzer import (
    CONSTRAINTS,
    STAND_IN_ENVIRONMENT,
    STATISTICS,
    VIOLATIONS,
    output_uri,
    read_violations,
    stand_in_request,
)
from pipeline.local.jobs.contract import Job, StepFailed
from pipeline.local.jobs.processing import ProcessingJobs
from pipeline.local.s3 import LocalS3, split_uri

DATA_QUALITY = "DATA_QUALITY"


@dataclass(frozen=True)
class Baseline:
    """The statistics and constraints files a check compares with, and where they came from."""

    statistics: str
    constraints: str
    source: str  # "supplied" or the model package's ARN


@dataclass(frozen=True)
class QualityCheckJobs:
    """Runs QualityCheck steps with ``processing`` (its local S3 folder) and the registry at ``registry_db``."""

    processing: ProcessingJobs
    registry_db: Path

    @property
    def s3(self) -> LocalS3:
        return self.processing.s3

    def __call__(self, job: Job) -> dict[str, Any]:
        fields = job.fields
        check_type = fields.get("CheckType")
        if check_type != DATA_QUALITY:
            raise StepFailed(f"CheckType {check_type}: the local backend runs data-quality checks only")
        skip, register_new = _flag(fields.get("SkipCheck")), _flag(fields.get("RegisterNewBaseline"))
        group = str(fields.get("ModelPackageGroupName") or "")
        baseline = self._baseline(fields, group, job.stop)
        if baseline is None and not skip:
            raise StepFailed(
                f"no baseline to check against: no approved version of model package group {group} carries "
                "DriftCheckBaselines.ModelDataQuality and none was supplied; run with SkipDataQualityCheck=true and "
                "RegisterNewDataQualityBaseline=true to calculate one (llpipe run does so by itself on a first run)"
            )
        checked = None if skip else baseline
        bucket, _ = split_uri(output_uri(job.arguments))
        files = {"Statistics": checked.statistics, "Constraints": checked.constraints} if checked else None
        request = stand_in_request(self.s3, job.arguments, f"s3://{bucket}/{job.pipeline_name}", files)
        write_json_atomically(job.folder / "processing-request.json", request)
        try:
            described = self.processing.run(job, request, environment_image=STAND_IN_ENVIRONMENT)
        except StepFailed as error:
            raise StepFailed(f"data-quality analysis failed: {error}", error.properties) from None
        output = output_uri(request)
        calculated = Baseline(f"{output}/{STATISTICS}", f"{output}/{CONSTRAINTS}", "calculated")
        used = calculated if register_new or baseline is None else baseline
        properties: dict[str, Any] = {
            "CheckType": DATA_QUALITY,
            "ModelPackageGroupName": group,
            "SkipCheck": skip,
            "RegisterNewBaseline": register_new,
            "CheckJobArn": described["ProcessingJobArn"],
            "CalculatedBaselineStatistics": calculated.statistics,
            "CalculatedBaselineConstraints": calculated.constraints,
            "BaselineUsedForDriftCheckStatistics": used.statistics,
            "BaselineUsedForDriftCheckConstraints": used.constraints,
        }
        if checked is None:
            why = "" if baseline else f" (no approved version of {group} carries a data-quality baseline yet)"
            kept = (  # written before the gate: the model, and its baseline with it, may not be registered
                "goes with the model to the registry, if it passes the gate, as the baseline later runs are checked "
                "against"
                if used is calculated
                else "not compared"
            )
            job.note(f"data-quality check skipped{why}: this run's baseline was calculated and {kept}")
            return properties
        properties["ViolationReport"] = f"{output}/{VIOLATIONS}"
        # local only: which baseline the check compared with (the SageMaker step says it through its input)
        properties["BaselineCheckedAgainst"] = checked.source
        properties["CheckedBaselineStatistics"] = checked.statistics
        properties["CheckedBaselineConstraints"] = checked.constraints
        violations = read_violations(self.s3, properties["ViolationReport"])
        if violations and _flag(fields.get("FailOnViolation", True)):
            found = "; ".join(
                f"{item['constraint_check_type']} on {item['feature_name']!r} ({one_line(item['description'])})"
                for item in violations
            )
            raise StepFailed(
                f"{len(violations)} data-quality violation(s) against the baseline of {checked.source}: {found}",
                properties,
            )
        return properties

    def _baseline(self, fields: dict[str, Any], group: str, stop: threading.Event | None) -> Baseline | None:
        """The supplied baseline files, else the newest approved version's DriftCheckBaselines."""
        from pipeline.local.registry import LocalRegistry, RegistryError

        statistics = str(fields.get("SuppliedBaselineStatistics") or "")
        constraints = str(fields.get("SuppliedBaselineConstraints") or "")
        if statistics or constraints:
            if not (statistics and constraints):
                raise StepFailed("supply both SuppliedBaselineStatistics and SuppliedBaselineConstraints, or neither")
            for uri in (statistics, constraints):
                if not self.s3.path(uri).is_file():
                    raise StepFailed(f"supplied baseline {uri} does not exist in the local S3 folder")
            return Baseline(statistics, constraints, "supplied")
        try:
            package = LocalRegistry(self.registry_db, stop=stop).last_approved(group) if group else None
        except RegistryError as error:
            raise StepFailed(str(error)) from None
        uris = package.drift_check_data_quality if package else {}
        if not package or not {"Statistics", "Constraints"} <= set(uris):
            return None
        for uri in uris.values():
            if not self.s3.path(uri).is_file():
                raise StepFailed(f"model package {package.arn}: its baseline {uri} is not in the local S3 folder")
        return Baseline(uris["Statistics"], uris["Constraints"], package.arn)


def _flag(value: Any) -> bool:
    """A Boolean field as resolved (a parameter's value may arrive as its text)."""
    return value is True or str(value).lower() == "true"
