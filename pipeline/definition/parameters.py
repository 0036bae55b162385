"""Pipeline parameter overrides (``--param Name=Value``), parsed and type-checked once for run, start and schedule.

An override for a parameter the definition does not declare, a value that does not parse as the declared type
(Integer, Float, Boolean, String) or is not among its ``EnumValues`` is a ``ParameterError`` raised before
anything runs: locally against the built definition, on SageMaker against the deployed one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.core.errors import ParameterError

PARAMETER_TYPES = ("String", "Integer", "Float", "Boolean")


def parse_overrides(pairs: Iterable[str]) -> dict[str, str]:
    """``["A=1", "B=x=y"]`` -> ``{"A": "1", "B": "x=y"}``; an item without ``=`` or a repeated name is an error."""
    overrides: dict[str, str] = {}
    for pair in pairs:
        name, separator, value = pair.partition("=")
        if not separator or not name.strip():
            raise ParameterError(f"--param expects Name=Value, got {pair!r}")
        if name.strip() in overrides:
            raise ParameterError(f"--param {name.strip()} given twice")
        overrides[name.strip()] = value
    return overrides


def check_overrides(declared: list[dict[str, Any]], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The overrides converted to their declared types; ``ParameterError`` for an unknown name or a bad value."""
    by_name = {parameter["Name"]: parameter for parameter in declared}
    unknown = sorted(set(overrides) - set(by_name))
    if unknown:
        raise ParameterError(
            f"unknown parameter(s) {', '.join(unknown)}; the pipeline declares: {', '.join(sorted(by_name)) or 'none'}"
        )
    return {name: _value(by_name[name], value) for name, value in overrides.items()}


def resolve_parameters(declared: list[dict[str, Any]], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Each declared parameter's value: the override converted to its type, else its default."""
    values = check_overrides(declared, overrides)
    for parameter in declared:
        name = parameter["Name"]
        if name in values:
            continue
        if "DefaultValue" not in parameter:
            raise ParameterError(f"parameter {name} has no default value; pass --param {name}=VALUE")
        values[name] = _value(parameter, parameter["DefaultValue"])
    return {parameter["Name"]: values[parameter["Name"]] for parameter in declared}


def _value(parameter: Mapping[str, Any], value: Any) -> Any:
    """One value as its parameter's type, checked against its ``EnumValues``."""
    name, kind = parameter["Name"], parameter.get("Type", "String")
    if kind not in PARAMETER_TYPES:
        raise ParameterError(f"parameter {name} has unknown type {kind!r}; expected one of {PARAMETER_TYPES}")
    converted = convert(name, kind, value)
    allowed = parameter.get("EnumValues")
    if allowed and converted not in allowed:
        raise ParameterError(f"parameter {name} must be one of {', '.join(map(str, allowed))}, got {converted!r}")
    return converted


def convert(name: str, kind: str, value: Any) -> Any:
    """A value as the declared parameter type; ``ParameterError`` naming the parameter when it does not fit."""
    try:
        if kind == "Integer":
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            return int(value)
        if kind == "Float":
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if kind == "Boolean":
            if isinstance(value, bool):
                return value
            if str(value).lower() in ("true", "false"):
                return str(value).lower() == "true"
            raise ValueError
        return str(value)
    except ValueError:
        raise ParameterError(f"parameter {name} is {kind}: {value!r} is not a valid {kind.lower()}") from None
