"""Pipeline parameter overrides (``--param Name=Value``), parsed and type-checked once for run, start and schedule.

An override for a parameter the definition does not declare, a value that does not parse as the declared type
(Integer, Float, Boolean, String) or is not among its ``EnumValues`` is a ``ParameterError`` raised before
anything runs: locally against the built definition, on SageMaker against the deployed one.
"""

from __future__ import annotations

import difflib
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


# name -> (lowest, highest, whether the bounds are included, what the value is): the ranges this pipeline's
# parameters take, checked wherever overrides are (run, start, schedule) so a bad value never reaches a job
RANGES: dict[str, tuple[float, float | None, bool, str]] = {
    "TrainingInstanceCount": (1, None, True, "the number of training instances"),
    "ProcessingInstanceCount": (1, None, True, "the number of Preprocess instances"),
    "HashBuckets": (1, 1 << 16, True, "the indicator columns each categorical column is hashed into"),
    "ValidationFraction": (0, 1, False, "the share of rows in the validation split (Train's early stopping)"),
    "TestFraction": (0, 1, False, "the share of rows in the test split (Evaluate scores it)"),
    "ChampionTolerance": (0, None, True, "how much worse than the champion a new model may be"),
}


def check_ranges(given: Mapping[str, Any], values: Mapping[str, Any]) -> None:
    """Each ``given`` value in its parameter's range, and the split fractions (``values``: given or default) leaving
    rows to train on; ``ParameterError`` naming the parameter, its value and the range."""
    for name, value in given.items():
        if name not in RANGES or not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        low, high, closed, meaning = RANGES[name]
        inside = value == value and (value >= low if closed else value > low)  # NaN is never inside
        inside = inside and (high is None or (value <= high if closed else value < high))
        if not inside:
            bounds = (
                f"at least {low}" + (f" and at most {high:,}" if high is not None else "")
                if closed
                else f"greater than {low}" + (f" and less than {high}" if high is not None else "")
            )
            note = (
                " (0 would leave that split empty: every split is used by a later step)" if "Fraction" in name else ""
            )
            raise ParameterError(f"parameter {name}={value}: expected {bounds}, {meaning}{note}")
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
