"""Model Monitor's analyzer image, stood in for: a processing request for the image made runnable locally.

The image holds its own code; locally it is this repository's ``dataquality`` bundle, written to the local S3 folder
as the other bundles are and mounted as a ``code`` input, run with the scikit-learn image's environment (Python 3.9,
numpy, pandas). The service gives the analyzer the baseline to check against as inputs and the
``baseline_constraints`` / ``baseline_statistics`` variables; the request gets those too. Used by the QualityCheck
step and by ``llpipe monitor``'s monitoring job.
"""

from __future__ import annotations

import copy
import json
from pathlib import PurePosixPath
from typing import Any

from pipeline.core.images import DEFAULT_PROCESSING_IMAGE
from pipeline.core.names import EXIT_MESSAGE_FILE, RESOURCE_CONFIG
from pipeline.local.jobs.contract import StepFailed
from pipeline.local.s3 import LocalS3

CODE_DIR = "/opt/ml/processing/input/code"
BASELINE_DIRS = {
    "Constraints": "/opt/ml/processing/baseline/constraints",
    "Statistics": "/opt/ml/processing/baseline/stats",
}
BASELINE_VARIABLES = {"Constraints": "baseline_constraints", "Statistics": "baseline_statistics"}
STATISTICS, CONSTRAINTS, VIOLATIONS = "statistics.json", "constraints.json", "constraint_violations.json"
# the interpreter the analyzer stands in with: the scikit-learn image's
STAND_IN_ENVIRONMENT = f"local/{DEFAULT_PROCESSING_IMAGE.repository}:{DEFAULT_PROCESSING_IMAGE.version}"


def s3_input(name: str, uri: str, local_path: str) -> dict[str, Any]:
    return {
        "InputName": name,
        "S3Input": {"S3Uri": uri, "LocalPath": local_path, "S3DataType": "S3Prefix", "S3InputMode": "File"},
    }


def stand_in_request(
    s3: LocalS3, request: dict[str, Any], pipeline_prefix: str, baseline: dict[str, str] | None
) -> dict[str, Any]:
    """``request`` (a processing request naming the analyzer image) with the stand-in's code and command and, given
    ``baseline`` (``{"Statistics": uri, "Constraints": uri}``), its files as the service hands them over."""
    from pipeline.definition.code_bundles import repository_bundle

    request = copy.deepcopy(request)
    bundle = repository_bundle("dataquality")
    for uri, body in bundle.uploads(pipeline_prefix).items():
        if not s3.path(uri).is_file():
            s3.put_bytes(uri, body)
    inputs = [*(request.get("ProcessingInputs") or []), s3_input("code", bundle.s3_prefix(pipeline_prefix), CODE_DIR)]
    environment = dict(request.get("Environment") or {})
    for kind in ("Constraints", "Statistics"):
        if baseline is not None:
            inputs.append(s3_input(f"baseline_{kind.lower()}", baseline[kind], BASELINE_DIRS[kind]))
            environment[BASELINE_VARIABLES[kind]] = f"{BASELINE_DIRS[kind]}/{PurePosixPath(baseline[kind]).name}"
    request["ProcessingInputs"] = inputs
    request["Environment"] = environment
    request["AppSpecification"] = {
        **request.get("AppSpecification", {}),
        "ContainerEntrypoint": ["python3", f"{CODE_DIR}/{bundle.entry_point}"],
        "ContainerArguments": ["--resource-config", RESOURCE_CONFIG, "--exit-message-file", EXIT_MESSAGE_FILE],
    }
    return request


def output_uri(request: dict[str, Any]) -> str:
    """The analyzer's one S3 output (where statistics.json, constraints.json and the violations land)."""
    outputs = (request.get("ProcessingOutputConfig") or {}).get("Outputs") or []
    if len(outputs) != 1 or "S3Output" not in outputs[0]:
        raise StepFailed("the analyzer's request needs exactly one S3 output")
    return str(outputs[0]["S3Output"]["S3Uri"]).rstrip("/")


def read_violations(s3: LocalS3, uri: str) -> list[dict[str, str]]:
    try:
        return list(json.loads(s3.path(uri).read_text())["violations"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise StepFailed(f"the analyzer wrote no readable {VIOLATIONS} at {uri} ({error})") from None
