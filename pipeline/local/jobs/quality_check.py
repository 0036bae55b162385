"""A local QualityCheck step (data quality): the analyzer's processing job, with the baseline SageMaker gives it.

As the service does before the job, the step resolves the baseline to check against: the supplied
``SuppliedBaselineStatistics`` / ``SuppliedBaselineConstraints`` (an empty string supplies none), else the
``DriftCheckBaselines.ModelDataQuality`` of the group's newest approved version in the local registry; with
``SkipCheck`` false there must be one. The job is the step's request plus what the service adds: the baseline files
as inputs and their paths in ``baseline_constraints`` / ``baseline_statistics``. Model Monitor's analyzer image is
stood in for by this repository's ``dataquality`` bundle (``analyze.py`` from a ``code`` input, written to the local
S3 folder as the other bundles are), run in the scikit-learn image's environment; ``processing-request.json`` in the
step's folder is the request that ran.

Properties, as ListPipelineExecutionSteps' ``QualityCheck`` metadata: ``CalculatedBaselineStatistics`` /
``Constraints`` (the job's files), ``BaselineUsedForDriftCheckStatistics`` / ``Constraints`` (the calculated ones with
``RegisterNewBaseline``, else the baseline checked against, or the calculated ones when there is none),
``ViolationReport``, ``CheckJobArn``, ``SkipCheck``, ``RegisterNewBaseline``... A violation with ``FailOnViolation``
fails the step naming every feature and check; its properties stay, so the execution shows what was found.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pipeline.core.errors import one_line
from pipeline.core.images import DEFAULT_PROCESSING_IMAGE
from pipeline.core.names import EXIT_MESSAGE_FILE, RESOURCE_CONFIG
from pipeline.local.executions import write_json_atomically
from pipeline.local.jobs.contract import Job, StepFailed
from pipeline.local.jobs.processing import ProcessingJobs
from pipeline.local.s3 import LocalS3, split_uri

DATA_QUALITY = "DATA_QUALITY"
CODE_DIR = "/opt/ml/processing/input/code"
BASELINE_DIRS = {
    "Constraints": "/opt/ml/processing/baseline/constraints",
    "Statistics": "/opt/ml/processing/baseline/stats",
}
BASELINE_VARIABLES = {"Constraints": "baseline_constraints", "Statistics": "baseline_statistics"}
VIOLATIONS = "constraint_violations.json"
# the interpreter Model Monitor's analyzer stands in with: the scikit-learn image's (Python 3.9, numpy, pandas)
STAND_IN_ENVIRONMENT = f"local/{DEFAULT_PROCESSING_IMAGE.repository}:{DEFAULT_PROCESSING_IMAGE.version}"


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
        baseline = self._baseline(fields, group)
        if baseline is None and not skip:
            raise StepFailed(
                f"no baseline to check against: no approved version of model package group {group} carries "
                "DriftCheckBaselines.ModelDataQuality and none was supplied; run with SkipDataQualityCheck=true and "
                "RegisterNewDataQualityBaseline=true to calculate one (llpipe run does so by itself on a first run)"
            )
        checked = None if skip else baseline
        request = self._request(job, checked)
        write_json_atomically(job.folder / "processing-request.json", request)
        try:
            described = self.processing.run(job, request, environment_image=STAND_IN_ENVIRONMENT)
        except StepFailed as error:
            raise StepFailed(f"data-quality analysis failed: {error}", error.properties) from None
        output = request["ProcessingOutputConfig"]["Outputs"][0]["S3Output"]["S3Uri"].rstrip("/")
        calculated = Baseline(f"{output}/statistics.json", f"{output}/constraints.json", "calculated")
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
            kept = "registered as the one to check later runs against" if used is calculated else "not compared"
            job.note(f"data-quality check skipped{why}: this run's baseline was calculated and {kept}")
            return properties
        properties["ViolationReport"] = f"{output}/{VIOLATIONS}"
        # local only: which baseline the check compared with (the SageMaker step says it through its input)
        properties["BaselineCheckedAgainst"] = checked.source
        properties["CheckedBaselineStatistics"] = checked.statistics
        properties["CheckedBaselineConstraints"] = checked.constraints
        violations = self._violations(properties["ViolationReport"])
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

    def _baseline(self, fields: dict[str, Any], group: str) -> Baseline | None:
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
            package = LocalRegistry(self.registry_db).last_approved(group) if group else None
        except RegistryError as error:
            raise StepFailed(str(error)) from None
        uris = package.drift_check_data_quality if package else {}
        if not package or not {"Statistics", "Constraints"} <= set(uris):
            return None
        for uri in uris.values():
            if not self.s3.path(uri).is_file():
                raise StepFailed(f"model package {package.arn}: its baseline {uri} is not in the local S3 folder")
        return Baseline(uris["Statistics"], uris["Constraints"], package.arn)

    def _request(self, job: Job, baseline: Baseline | None) -> dict[str, Any]:
        """The step's processing request with what the service adds, and the stand-in's code and command."""
        from pipeline.definition.code_bundles import repository_bundle

        request = copy.deepcopy(job.arguments)
        outputs = (request.get("ProcessingOutputConfig") or {}).get("Outputs") or []
        if len(outputs) != 1 or "S3Output" not in outputs[0]:
            raise StepFailed("a QualityCheck step's request needs exactly one S3 output")
        bucket, _ = split_uri(outputs[0]["S3Output"]["S3Uri"])
        bundle, pipeline_prefix = repository_bundle("dataquality"), f"s3://{bucket}/{job.pipeline_name}"
        code = bundle.s3_prefix(pipeline_prefix)
        for uri, body in bundle.uploads(pipeline_prefix).items():
            if not self.s3.path(uri).is_file():
                self.s3.put_bytes(uri, body)
        inputs = list(request.get("ProcessingInputs") or [])
        inputs.append(_input("code", code, CODE_DIR))
        environment = dict(request.get("Environment") or {})
        if baseline is not None:
            for kind, uri in (("Constraints", baseline.constraints), ("Statistics", baseline.statistics)):
                inputs.append(_input(f"baseline_{kind.lower()}", uri, BASELINE_DIRS[kind]))
                environment[BASELINE_VARIABLES[kind]] = f"{BASELINE_DIRS[kind]}/{PurePosixPath(uri).name}"
        request["ProcessingInputs"] = inputs
        request["Environment"] = environment
        request["AppSpecification"] = {
            **request.get("AppSpecification", {}),
            "ContainerEntrypoint": ["python3", f"{CODE_DIR}/{bundle.entry_point}"],
            "ContainerArguments": ["--resource-config", RESOURCE_CONFIG, "--exit-message-file", EXIT_MESSAGE_FILE],
        }
        return request

    def _violations(self, uri: str) -> list[dict[str, str]]:
        path = self.s3.path(uri)
        try:
            return list(json.loads(path.read_text())["violations"])
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise StepFailed(f"the analyzer wrote no readable {VIOLATIONS} at {uri} ({error})") from None


def _flag(value: Any) -> bool:
    """A Boolean field as resolved (a parameter's value may arrive as its text)."""
    return value is True or str(value).lower() == "true"


def _input(name: str, uri: str, local_path: str) -> dict[str, Any]:
    return {
        "InputName": name,
        "S3Input": {"S3Uri": uri, "LocalPath": local_path, "S3DataType": "S3Prefix", "S3InputMode": "File"},
    }
