"""Planning a pipeline definition JSON (Version 2020-12-01): check all of it before anything runs, index its steps.

``plan`` names whatever the local backend cannot run (version, step types, expressions, conditions, property files,
dependencies, cycles) as a ``DefinitionError``; the ``Plan`` it returns is what ``interpreter.Interpreter`` schedules.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pipeline.core.errors import DefinitionError
from pipeline.core.steps import own_arguments, step_fields, upstream_steps, walk_steps
from pipeline.local import conditions, expressions

SUPPORTED_VERSION = "2020-12-01"
INLINE_TYPES = ("Condition", "Fail")


@dataclass(frozen=True)
class StepSpec:
    """One step of the definition, wherever it sits (top level or inside a Condition branch)."""

    name: str
    type: str
    definition: dict[str, Any]
    upstream: frozenset[str]
    branch: tuple[str, bool] | None = None  # (condition step, outcome that runs this step)

    @property
    def arguments(self) -> dict[str, Any]:
        return self.definition.get("Arguments", {})

    @property
    def fields(self) -> dict[str, Any]:
        """The step type's own top-level values (a QualityCheck step's SkipCheck ...), resolved like arguments."""
        return step_fields(self.definition)


@dataclass(frozen=True)
class Plan:
    """A checked definition: its parameters and its steps in definition order."""

    definition: dict[str, Any]
    parameters: list[dict[str, Any]]
    steps: dict[str, StepSpec]


def load_definition(text: str) -> dict[str, Any]:
    """Parse definition JSON text; ``DefinitionError`` when it is not a JSON object."""
    try:
        definition = json.loads(text)
    except json.JSONDecodeError as error:
        raise DefinitionError(f"the pipeline definition is not valid JSON: {error}") from None
    if not isinstance(definition, dict):
        raise DefinitionError("the pipeline definition must be a JSON object")
    return definition


def plan(definition: dict[str, Any], runnable_types: set[str]) -> Plan:
    """Check a definition and index its steps; ``DefinitionError`` naming whatever cannot run."""
    version = definition.get("Version")
    if version != SUPPORTED_VERSION:
        raise DefinitionError(f"definition Version {version!r} is not supported (expected {SUPPORTED_VERSION})")
    parameters = definition.get("Parameters", [])
    parameter_names = {parameter["Name"] for parameter in parameters}
    found = list(walk_steps(definition.get("Steps", [])))
    names = [step.get("Name") for step, _ in found]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise DefinitionError(f"duplicate step name(s): {', '.join(map(str, duplicates))}")
    known_types = set(runnable_types) | set(INLINE_TYPES)
    steps: dict[str, StepSpec] = {}
    for step, branch in found:
        name, kind = step.get("Name"), step.get("Type")
        if kind not in known_types:
            raise DefinitionError(
                f"step {name!r} has type {kind!r}, which the local backend cannot run "
                f"(supported: {', '.join(sorted(known_types))})"
            )
        arguments = own_arguments(step)  # a Condition's branches are steps of their own
        fields = step_fields(step)
        try:
            expressions.check(arguments, parameter_names, set(names), f"step {name}")
            expressions.check(fields, parameter_names, set(names), f"step {name}")
            if kind == "Condition":
                for condition in arguments.get("Conditions", []):
                    conditions.check(condition, f"step {name}")
        except ValueError as error:
            raise DefinitionError(str(error)) from None
        for file in step.get("PropertyFiles", []):
            if not {"PropertyFileName", "OutputName", "FilePath"} <= set(file):
                raise DefinitionError(f"step {name}: PropertyFiles entry {file} lacks a name, output or path")
        depends_on = set(step.get("DependsOn", []))
        unknown = sorted(depends_on - set(names))
        if unknown:
            raise DefinitionError(f"step {name} DependsOn unknown step(s): {', '.join(unknown)}")
        upstream = upstream_steps(step)
        if branch is not None:
            upstream.add(branch[0])
        steps[name] = StepSpec(name, kind, step, frozenset(upstream), branch)
    _check_acyclic(steps)
    return Plan(definition, parameters, steps)


def _check_acyclic(steps: dict[str, StepSpec]) -> None:
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "visiting":
            raise DefinitionError(f"dependency cycle: {' -> '.join([*path, name])}")
        state[name] = "visiting"
        for upstream in sorted(steps[name].upstream):
            visit(upstream, [*path, name])
        state[name] = "done"

    for name in steps:
        visit(name, [])
