"""The step tree of a pipeline definition JSON: its steps wherever they sit, and the steps a value reads.

A Condition step holds more steps in its ``IfSteps`` and ``ElseSteps``; the local plan, the cost of a local run and
a selective execution on SageMaker all walk that tree with :func:`walk_steps`. A value reads a step's properties
through ``{"Get": "Steps.<name>...."}`` (property files included), which :func:`referenced_steps` finds.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

BRANCHES = (("IfSteps", True), ("ElseSteps", False))


def walk_steps(
    steps: list[dict[str, Any]], branch: tuple[str, bool] | None = None
) -> Iterator[tuple[dict[str, Any], tuple[str, bool] | None]]:
    """Every step in definition order, each with its branch: None at the top level, else (the Condition step's name,
    the outcome that runs it); a Condition's branch steps follow it."""
    for step in steps:
        yield step, branch
        if step.get("Type") == "Condition":
            arguments = step.get("Arguments", {})
            for key, outcome in BRANCHES:
                yield from walk_steps(arguments.get(key, []), (step["Name"], outcome))


def own_arguments(step: dict[str, Any]) -> dict[str, Any]:
    """A step's arguments without a Condition's branches (those are steps of their own)."""
    arguments = dict(step.get("Arguments", {}))
    if step.get("Type") == "Condition":
        for key, _ in BRANCHES:
            arguments.pop(key, None)
    return arguments


# what every step type has at its top level; anything else there is a value of its own type (a QualityCheck step's
# SkipCheck, RegisterNewBaseline, SuppliedBaselineStatistics, ..., which may read parameters)
COMMON_STEP_KEYS = (
    "Name",
    "Type",
    "Arguments",
    "DependsOn",
    "DisplayName",
    "Description",
    "CacheConfig",
    "RetryPolicies",
    "PropertyFiles",
)


def step_fields(step: dict[str, Any]) -> dict[str, Any]:
    """A step's own top-level values beyond the keys every step has (e.g. a QualityCheck step's SkipCheck)."""
    return {key: value for key, value in step.items() if key not in COMMON_STEP_KEYS}


def referenced_steps(value: Any) -> set[str]:
    """Names X of every ``{"Get": "Steps.X...."}`` inside a value: the steps whose properties it reads."""
    if isinstance(value, dict):
        found = set()
        reference = value.get("Get") if len(value) == 1 else None  # an expression is an object of one member
        if isinstance(reference, str) and reference.startswith("Steps."):
            found.add(reference.split(".")[1])
        for item in value.values():
            found |= referenced_steps(item)
        return found
    if isinstance(value, list):
        return set().union(*(referenced_steps(item) for item in value)) if value else set()
    return set()


def upstream_steps(step: dict[str, Any]) -> set[str]:
    """The steps ``step`` runs after, as SageMaker orders them: its ``DependsOn`` and every step whose properties its
    own arguments or fields read (a Condition's branches are steps of their own; their Condition is not included)."""
    return set(step.get("DependsOn", [])) | referenced_steps(own_arguments(step)) | referenced_steps(step_fields(step))
