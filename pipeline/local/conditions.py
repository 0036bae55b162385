"""Evaluation of a Condition step's conditions, with every condition type the SDK can emit.

Comparisons (Equals, GreaterThan, GreaterThanOrEqualTo, LessThan, LessThanOrEqualTo) take ``LeftValue`` and
``RightValue``; ``In`` takes ``QueryValue`` and ``Values``; ``Not`` wraps one ``Condition``; ``Or`` holds
``Conditions``. A step's list of conditions holds when all of them hold.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from pipeline.core.errors import ConditionError
from pipeline.local.expressions import Context, resolve

_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "Equals": operator.eq,
    "GreaterThan": operator.gt,
    "GreaterThanOrEqualTo": operator.ge,
    "LessThan": operator.lt,
    "LessThanOrEqualTo": operator.le,
}
CONDITION_TYPES = (*_COMPARISONS, "In", "Not", "Or")


def evaluate_all(conditions: list[dict[str, Any]], context: Context) -> bool:
    """Whether every condition holds (a Condition step's ``Conditions`` are combined with AND)."""
    return all(evaluate(condition, context) for condition in conditions)


def evaluate(condition: dict[str, Any], context: Context) -> bool:
    """Whether one condition holds once its values are resolved."""
    kind = condition.get("Type")
    if kind in _COMPARISONS:
        left = resolve(condition.get("LeftValue"), context)
        right = resolve(condition.get("RightValue"), context)
        left, right = _comparable(left, right, kind)
        try:
            return bool(_COMPARISONS[kind](left, right))
        except TypeError as error:
            raise ConditionError(f"{kind}: cannot compare {left!r} with {right!r}") from error
    if kind == "In":
        query = resolve(condition.get("QueryValue"), context)
        values = resolve(condition.get("Values", []), context)
        return any(_equal(query, value) for value in values)
    if kind == "Not":
        return not evaluate(condition["Condition"], context)
    if kind == "Or":
        return any(evaluate(inner, context) for inner in condition.get("Conditions", []))
    raise ConditionError(f"unknown condition type {kind!r}; supported: {', '.join(CONDITION_TYPES)}")


def _comparable(left: Any, right: Any, kind: str) -> tuple[Any, Any]:
    """Numbers compare as numbers even when one side arrived as a string (a JsonGet or a Join)."""
    if _is_number(left) and isinstance(right, str):
        return left, _number(right, kind)
    if _is_number(right) and isinstance(left, str):
        return _number(left, kind), right
    return left, right


def _equal(left: Any, right: Any) -> bool:
    left, right = _comparable(left, right, "In")
    return left == right


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(text: str, kind: str) -> float:
    try:
        return float(text)
    except ValueError as error:
        raise ConditionError(f"{kind}: {text!r} is not a number but is compared with one") from error


def check(condition: Any, where: str) -> None:
    """Fail before anything runs if a condition (or one nested in Not/Or) has a type this module cannot evaluate."""
    if not isinstance(condition, dict) or condition.get("Type") not in CONDITION_TYPES:
        kind = condition.get("Type") if isinstance(condition, dict) else condition
        raise ConditionError(f"{where}: unknown condition type {kind!r}; supported: {', '.join(CONDITION_TYPES)}")
    if condition["Type"] == "Not":
        check(condition.get("Condition"), where)
    if condition["Type"] == "Or":
        for inner in condition.get("Conditions", []):
            check(inner, where)
