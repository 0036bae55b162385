"""What SageMaker would refuse, refused before anything runs: every request field the definition fills from a
pipeline parameter is checked against the field's shape in botocore's model of the SageMaker API (enums, string
lengths, patterns, numeric bounds), and every parameter value against StartPipelineExecution's (a value holds at
most 1,024 characters). The local backend runs what the service would not start (an instance type outside
``ProcessingInstanceType``'s enum, a value of 1,100 characters): "what passes locally is what deploys" needs the
service's own rules, and botocore ships them, updated with each release, so nothing here is a copy of them.

A field is checked when its value is a parameter (``{"Get": "Parameters.X"}``) or a ``Std:Join`` of parameters and
literals (its joined text); fields that read step properties are known only while the pipeline runs.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pipeline.core.errors import ParameterError, opt
from pipeline.core.steps import own_arguments, walk_steps

# a step type of the definition -> the API request its arguments are (a QualityCheck step runs a processing job)
OPERATIONS = {
    "Processing": "CreateProcessingJob",
    "QualityCheck": "CreateProcessingJob",
    "ClarifyCheck": "CreateProcessingJob",
    "Training": "CreateTrainingJob",
    "Transform": "CreateTransformJob",
    "Model": "CreateModel",
    "RegisterModel": "CreateModelPackage",
    "Tuning": "CreateHyperParameterTuningJob",
}
SHOWN_ENUM = 12  # an enum this long or shorter is listed in the message; a longer one is named by its shape
PARAMETER_SHAPE = "Parameter"  # StartPipelineExecution's PipelineParameters member: Name, Value


def service_model() -> Any:
    """botocore's model of the SageMaker API (shipped with botocore, read offline; parsed once per process)."""
    from pipeline.core.botocore_session import new_botocore_session

    return new_botocore_session().get_service_model("sagemaker")


def definition_steps(definition: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    """(name, type, own arguments) of every step of a definition, a Condition's branches included."""
    return [
        (str(step.get("Name")), str(step.get("Type")), own_arguments(step))
        for step, _ in walk_steps(definition.get("Steps", []))
    ]


def check_definition(definition: Mapping[str, Any], overrides: Mapping[str, Any]) -> None:
    """:func:`check_service_limits` of a definition run with ``overrides`` (each declared default otherwise)."""
    from pipeline.definition.parameters import check_overrides

    declared = list(definition.get("Parameters", []))
    values = {item["Name"]: item["DefaultValue"] for item in declared if "DefaultValue" in item}
    values.update(check_overrides(declared, overrides))
    check_service_limits(definition_steps(definition), values)


def check_service_limits(
    steps: Iterable[tuple[str, str, Mapping[str, Any]]], values: Mapping[str, Any], model: Any = None
) -> None:
    """``steps``: (name, type, arguments) of each step; ``values``: every parameter's value. ``ParameterError`` naming
    the parameter, its value, the request field it fills and what the service allows, for the first refused.

    Without ``model``, botocore's own (:func:`service_model`), and the same steps and values checked against the same
    botocore before pass without parsing it again (:func:`passed_before`): most runs check the definition they ran."""
    steps = list(steps)
    memo = passed_before(steps, values) if model is None else None
    if memo is not None and memo.exists():
        return
    _check(steps, values, model or service_model())
    if memo is not None:
        with contextlib.suppress(OSError):
            memo.parent.mkdir(parents=True, exist_ok=True)
            memo.touch()


def passed_before(steps: list[tuple[str, str, Mapping[str, Any]]], values: Mapping[str, Any]) -> Path | None:
    """The marker a pass of these steps and values leaves in the user cache dir, named by the SHA-256 of them, of
    this module's source and of botocore's version and model paths (only a pass is kept: a refusal is checked, and
    said alike, every time); None when there is no cache dir to keep it in."""
    from importlib.metadata import version

    from pipeline.core.errors import ConfigError
    from pipeline.core.files import user_cache_dir

    try:
        folder = user_cache_dir() / "service-limits"
        models = Path("~/.aws/models").expanduser()
        checked = {
            "steps": [list(step) for step in steps],
            "values": {str(name): [type(value).__name__, value] for name, value in values.items()},
            "code": hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
            "botocore": version("botocore"),
            "data_path": os.environ.get("AWS_DATA_PATH", ""),
            "user_models": models.stat().st_mtime_ns if models.exists() else None,
        }
    except (ConfigError, OSError, ImportError):  # no cache dir, or botocore's version unknown: checked each time
        return None
    key = hashlib.sha256(json.dumps(checked, sort_keys=True, default=repr).encode()).hexdigest()
    return folder / f"passed-{key}"


def _check(steps: list[tuple[str, str, Mapping[str, Any]]], values: Mapping[str, Any], model: Any) -> None:
    """:func:`check_service_limits` against ``model``."""
    value_shape = model.shape_for(PARAMETER_SHAPE).members["Value"]
    for name, value in values.items():
        problem = _refusal(value_shape, _text(value))
        if problem:
            raise _error(name, value, "a pipeline parameter value (StartPipelineExecution)", problem)
    for step, kind, arguments in steps:
        operation = OPERATIONS.get(kind)
        if operation is None:
            continue
        shape = model.operation_model(operation).input_shape
        for path, field_shape, names, text in _filled(arguments, shape, values, []):
            problem = _refusal(field_shape, text)
            if problem:
                field = ".".join(str(part) for part in path)
                parameter = names[0]
                raise _error(parameter, values.get(parameter), f"{step}'s {operation} field {field}", problem)


def _filled(
    value: Any, shape: Any, values: Mapping[str, Any], path: list[Any]
) -> Iterable[tuple[list[Any], Any, list[str], Any]]:
    """(path, shape, parameters read, value as sent) of every field whose value is filled from parameters."""
    if shape is None:
        return
    if isinstance(value, dict) and set(value) == {"Get"}:
        reference = str(value["Get"])
        if reference.startswith("Parameters.") and reference[len("Parameters.") :] in values:
            name = reference[len("Parameters.") :]
            yield path, shape, [name], values[name]
        return
    if isinstance(value, dict) and set(value) == {"Std:Join"}:
        join = value["Std:Join"]
        parts, names = [], []
        for part in join.get("Values", []):
            if isinstance(part, dict):
                reference = str(part.get("Get", "")) if set(part) == {"Get"} else ""
                name = reference[len("Parameters.") :] if reference.startswith("Parameters.") else None
                if name is None or name not in values:
                    return  # a step property or another function: known only while running
                names.append(name)
                part = values[name]
            parts.append(_text(part))
        if names:
            yield path, shape, names, str(join.get("On", "")).join(parts)
        return
    kind = shape.type_name
    if kind == "structure" and isinstance(value, dict):
        for key, item in value.items():
            yield from _filled(item, shape.members.get(key), values, [*path, key])
    elif kind == "map" and isinstance(value, dict):
        for key, item in value.items():
            yield from _filled(item, shape.value, values, [*path, key])
    elif kind == "list" and isinstance(value, list):
        for index, item in enumerate(value):
            yield from _filled(item, shape.member, values, [*path, index])


def _text(value: Any) -> str:
    """A parameter value as the service receives it in a string field."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _refusal(shape: Any, value: Any) -> str | None:
    """What the shape's rules refuse in ``value`` (None: allowed)."""
    rules = shape.metadata
    kind = shape.type_name
    if kind == "string":
        text = _text(value)
        enum = list(getattr(shape, "enum", None) or rules.get("enum") or [])
        if enum and text not in enum:
            if len(enum) <= SHOWN_ENUM:
                return f"expected one of {', '.join(enum)}"
            close = difflib.get_close_matches(text, enum, n=4)
            near = f" (the nearest: {', '.join(close)})" if close else ""
            return (
                f"expected one of the {len(enum)} values of its shape {shape.name}{near}; botocore's SageMaker "
                "model lists them all"
            )
        if "max" in rules and len(text) > rules["max"]:
            return f"{len(text):,} characters where the service takes at most {rules['max']:,}"
        if "min" in rules and len(text) < rules["min"]:
            return f"{len(text)} characters where the service needs at least {rules['min']}"
        pattern = rules.get("pattern")
        if pattern and not _matches(pattern, text):
            return f"does not match the service's pattern {pattern} ({shape.name})"
    elif kind in ("integer", "long", "float", "double") and not isinstance(value, bool):
        try:
            number = float(value)
        except (TypeError, ValueError):
            return f"expected a number ({shape.name})"
        if "min" in rules and number < rules["min"]:
            return f"expected at least {rules['min']:,}"
        if "max" in rules and number > rules["max"]:
            return f"expected at most {rules['max']:,}"
    return None


def _matches(pattern: str, text: str) -> bool:
    """Whether ``text`` matches a botocore (Java-flavoured) pattern whole; a pattern Python cannot read passes."""
    try:
        return re.fullmatch(pattern, text, flags=re.DOTALL) is not None
    except re.error:
        return True


def _error(name: str, value: Any, where: str, problem: str) -> ParameterError:
    shown = _text(value)
    shown = shown if len(shown) <= 80 else f"{shown[:60]}... ({len(shown):,} characters)"
    return ParameterError(
        f"{opt(name, shown)}: SageMaker would refuse it as {where}: {problem}",
        option=name,
        value=shown,
    )
