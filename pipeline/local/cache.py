"""Step caching with SageMaker's semantics.

A step whose ``CacheConfig`` is enabled reuses the latest successful run of the same step of the same pipeline, ended
within ``ExpireAfter`` (an ISO 8601 duration; none means no expiry), whose cache-key attributes, once resolved, are
equal. The attributes are the ones SageMaker documents per step type; outputs are not part of the key, so a hit
returns the earlier run's properties (its output locations) unchanged.

A step that ran with a key writes ``outputs.json`` in its step folder: the key and the fingerprint of every file under
its output locations (:mod:`pipeline.core.verified`). A hit is taken only while those files are as written; a changed,
truncated, added or missing file makes the step run again, with a note naming the entry and the file.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from pipeline.core import verified
from pipeline.core.files import write_text_atomically
from pipeline.core.names import StepStatus
from pipeline.local.executions import ExecutionStore, StepRecord

CACHE_KEY_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "Processing": ("AppSpecification", "Environment", "ProcessingInputs"),
    "Training": (
        "AlgorithmSpecification",
        "CheckpointConfig",
        "DebugHookConfig",
        "DebugRuleConfigurations",
        "Environment",
        "HyperParameters",
        "InputDataConfig",
    ),
    "Transform": ("DataProcessing", "Environment", "ModelName", "TransformInput"),
    "Tuning": ("HyperParameterTuningJobConfig", "TrainingJobDefinition", "TrainingJobDefinitions"),
}
# of a tuning step's training job definition(s), only these children count (not the output path, role, instances)
_TRAINING_JOB_DEFINITION_KEYS = (
    "AlgorithmSpecification",
    "HyperParameterRanges",
    "InputDataConfig",
    "StaticHyperParameters",
    "TuningObjective",
)
OUTPUTS_FILE = "outputs.json"  # in a step's folder: its cache key and its outputs' fingerprints
_DURATION = re.compile(
    r"^P(?:(?P<years>\d+)Y)?(?:(?P<months>\d+)M)?(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$"
)


def parse_duration(text: str) -> timedelta:
    """An ISO 8601 duration such as ``P30D`` or ``PT1H30M``; a year is 365 days and a month 30, as an upper bound."""
    match = _DURATION.match(text or "")
    if not match or text in ("P", "PT") or text.endswith("T"):
        raise ValueError(f"ExpireAfter {text!r} is not an ISO 8601 duration (for example P30D or PT12H)")
    parts = {name: float(value) for name, value in match.groupdict().items() if value}
    days = parts.get("years", 0) * 365 + parts.get("months", 0) * 30 + parts.get("weeks", 0) * 7
    return timedelta(
        days=days + parts.get("days", 0),
        hours=parts.get("hours", 0),
        minutes=parts.get("minutes", 0),
        seconds=parts.get("seconds", 0),
    )


def cache_key(step_type: str, arguments: dict[str, Any]) -> str | None:
    """The hash of a step's resolved cache-key attributes, or None when the step type is never cached."""
    attributes = CACHE_KEY_ATTRIBUTES.get(step_type)
    if attributes is None:
        return None
    selected = {name: _key_part(name, arguments.get(name)) for name in attributes}
    canonical = json.dumps([step_type, selected], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _key_part(name: str, value: Any) -> Any:
    if name == "TrainingJobDefinition" and isinstance(value, dict):
        return {key: value.get(key) for key in _TRAINING_JOB_DEFINITION_KEYS}
    if name == "TrainingJobDefinitions" and isinstance(value, list):
        return [_key_part("TrainingJobDefinition", item) for item in value]
    return value


def output_uris(properties: dict[str, Any]) -> list[str]:
    """The S3 locations a cached step's properties point at: what a cache hit hands to the steps after it."""
    uris = [
        output["S3Output"]["S3Uri"]
        for output in (properties.get("ProcessingOutputConfig") or {}).get("Outputs", [])
        if (output.get("S3Output") or {}).get("S3Uri")
    ]
    artifact = (properties.get("ModelArtifacts") or {}).get("S3ModelArtifacts")
    transform = (properties.get("TransformOutput") or {}).get("S3OutputPath")
    return uris + [uri for uri in (artifact, transform) if uri] + _tuning_artifacts(properties)


def _tuning_artifacts(properties: dict[str, Any]) -> list[str]:
    """A tuning job's completed training jobs' models, where ``get_top_model_s3_uri`` finds them."""
    output = ((properties.get("TrainingJobDefinition") or {}).get("OutputDataConfig") or {}).get("S3OutputPath")
    if not output:
        return []
    return [
        f"{output.rstrip('/')}/{summary['TrainingJobName']}/output/model.tar.gz"
        for summary in properties.get("TrainingJobSummaries") or []
        if summary.get("TrainingJobStatus") == "Completed"
    ]


def caching_enabled(step: dict[str, Any]) -> bool:
    """Whether the step definition turns caching on."""
    config = step.get("CacheConfig") or {}
    return bool(config.get("Enabled"))


def find_hit(
    store: ExecutionStore,
    pipeline_name: str,
    step: dict[str, Any],
    key: str,
    current_execution: str,
    at: datetime | None = None,
) -> tuple[str, StepRecord] | None:
    """The latest successful earlier run of this step with the same key and still within ExpireAfter."""
    expire_after = (step.get("CacheConfig") or {}).get("ExpireAfter")
    limit = parse_duration(expire_after) if expire_after else None
    at = at or datetime.now(timezone.utc)
    for record in store.list():
        if record.id == current_execution or record.pipeline_name != pipeline_name:
            continue
        previous = record.steps.get(step["Name"])
        succeeded = previous is not None and previous.status == StepStatus.SUCCEEDED
        if not succeeded or previous.cache_key != key or not previous.end_time:
            continue
        if limit is not None and at - datetime.fromisoformat(previous.end_time) > limit:
            continue
        return previous.cache_hit_source or record.id, previous
    return None


def output_files(properties: dict[str, Any], local_path: Callable[[str], Path]) -> dict[str, Path]:
    """Every file under the step's output locations, by its S3 URI (``local_path`` maps a URI to this machine)."""
    files = {}
    for uri in output_uris(properties):
        for name, path in verified.files_under(local_path(uri)).items():
            files[uri if name == "." else f"{uri.rstrip('/')}/{name}"] = path
    return files


def record_outputs(folder: Path, key: str, properties: dict[str, Any], local_path: Callable[[str], Path]) -> None:
    """Write the step's ``outputs.json``: what a later hit checks before reusing these outputs."""
    entry = {"key": key, "files": verified.fingerprint(output_files(properties, local_path))}
    write_text_atomically(folder / OUTPUTS_FILE, json.dumps(entry, indent=1) + "\n")


def changed_outputs(
    folder: Path, key: str, properties: dict[str, Any], local_path: Callable[[str], Path]
) -> str | None:
    """Why the outputs recorded in ``folder`` are no longer what the step wrote, or None when they are (or when the
    step ran before outputs were recorded: nothing to check them against)."""
    try:
        entry = json.loads((folder / OUTPUTS_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        return f"{OUTPUTS_FILE} is not readable ({type(error).__name__})"
    if not isinstance(entry, dict) or entry.get("key") != key:
        return f"{OUTPUTS_FILE} was written for another cache key"
    return verified.first_change(entry.get("files"), output_files(properties, local_path))
