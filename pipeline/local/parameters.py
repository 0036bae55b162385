"""Pipeline parameters: the definition's declared defaults plus ``Name=Value`` overrides, validated up front.

An override for a parameter the definition does not declare, a value that does not parse as the declared type
(Integer, Float, Boolean, String) or is not among its ``EnumValues`` is a ``ParameterError`` raised before
anything runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

PARAMETER_TYPES = ("String", "Integer", "Float", "Boolean")


class ParameterError(ValueError):
    """An override the definition cannot take."""


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


def resolve_parameters(declared: list[dict[str, Any]], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Each declared parameter's value: the override converted to its type, else its default."""
    by_name = {parameter["Name"]: parameter for parameter in declared}
    unknown = sorted(set(overrides) - set(by_name))
    if unknown:
        raise ParameterError(
            f"unknown parameter(s) {', '.join(unknown)}; the pipeline declares: {', '.join(sorted(by_name)) or 'none'}"
        )
    values: dict[str, Any] = {}
    for name, parameter in by_name.items():
        kind = parameter.get("Type", "String")
        if kind not in PARAMETER_TYPES:
            raise ParameterError(f"parameter {name} has unknown type {kind!r}; expected one of {PARAMETER_TYPES}")
        if name in overrides:
            values[name] = convert(name, kind, overrides[name])
        elif "DefaultValue" in parameter:
            values[name] = convert(name, kind, parameter["DefaultValue"])
        else:
            raise ParameterError(f"parameter {name} has no default value; pass --param {name}=VALUE")
        allowed = parameter.get("EnumValues")
        if allowed and values[name] not in allowed:
            choices = ", ".join(map(str, allowed))
            raise ParameterError(f"parameter {name} must be one of {choices}, got {values[name]!r}")
    return values


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
