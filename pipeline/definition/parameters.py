"""Pipeline parameter overrides, type-checked once for run, start and schedule.

An override for a parameter the definition does not declare, a value that does not parse as the declared type
(Integer, Float, Boolean, String) or is not among its ``EnumValues`` is a ``ParameterError`` raised before
anything runs: locally against the built definition, on SageMaker against the deployed one. Ranges come from the
parameter table (``parameter_table.TABLE``).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.core.errors import ParameterError
from pipeline.definition.parameter_table import BY_NAME, PARAMETER_TYPES


def check_overrides(declared: list[dict[str, Any]], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The overrides converted to their declared types; ``ParameterError`` for an unknown name or a bad value."""
    by_name = {parameter["Name"]: parameter for parameter in declared}
    unknown = sorted(set(overrides) - set(by_name))
    if unknown:
        named = ", ".join(_with_suggestion(name, by_name) for name in unknown)
        raise ParameterError(
            f"unknown parameter(s) {named}; the pipeline declares: {', '.join(sorted(by_name)) or 'none'}"
        )
    values = {name: _value(by_name[name], value) for name, value in overrides.items()}
    defaults = {name: _value(p, p["DefaultValue"]) for name, p in by_name.items() if "DefaultValue" in p}
    check_ranges(values, {**defaults, **values})
    return values


def _with_suggestion(name: str, declared: Iterable[str]) -> str:
    """An unknown parameter's name with the declared one it most resembles (case aside), so a typo such as
    ``Epoch`` is answered with ``Epochs`` rather than only the full list."""
    by_lower = {known.lower(): known for known in declared}
    close = [by_lower[match] for match in difflib.get_close_matches(name.lower(), list(by_lower), n=2)]
    return f"{name} (did you mean {' or '.join(close)}?)" if close else name


def check_ranges(given: Mapping[str, Any], values: Mapping[str, Any]) -> None:
    """Each ``given`` number in its parameter's range (the table's), and the split fractions (``values``: given or
    default) leaving rows to train on; ``ParameterError`` naming the parameter, its value and the range."""
    for name, value in given.items():
        row = BY_NAME.get(name)
        if row is None or row.range is None or not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        if not row.range.contains(value):
            note = (
                " (0 would leave that split empty: every split is used by a later step)" if "Fraction" in name else ""
            )
            raise ParameterError(f"parameter {name}={value}: expected {row.range.describe()}, {row.help}{note}")
    fractions = {name: values[name] for name in ("ValidationFraction", "TestFraction") if name in values}
    if len(fractions) == 2 and set(fractions) & set(given) and sum(fractions.values()) >= 1:
        shown = " + ".join(f"{name}={value}" for name, value in fractions.items())
        raise ParameterError(
            f"parameters {shown} = {sum(fractions.values()):g}: the two splits must leave rows to train on "
            "(their sum below 1)"
        )


def resolve_parameters(declared: list[dict[str, Any]], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Each declared parameter's value: the override converted to its type, else its default."""
    values = check_overrides(declared, overrides)
    for parameter in declared:
        name = parameter["Name"]
        if name in values:
            continue
        if "DefaultValue" not in parameter:
            raise ParameterError(f"parameter {name} has no default value: give it a value")
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
