"""Resolution of the definition's expressions: ``Get``, ``Std:Join`` and ``Std:JsonGet``.

A definition value is a JSON primitive, a list, an object of more values, or one of these expressions:
``{"Get": "Parameters.X"}``, ``{"Get": "Execution.PipelineExecutionId"}``, ``{"Get": "Steps.Name.Property.Path"}``,
``{"Std:Join": {"On": sep, "Values": [...]}}`` and ``{"Std:JsonGet": {"PropertyFile": {...} | "S3Uri": ..., "Path":
"a.b[0]"}}``. Anything else that looks like an expression is an error naming it, never passed through.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pipeline.core.errors import ExpressionError

FUNCTIONS = ("Std:Join", "Std:JsonGet")
EXECUTION_VARIABLES = (
    "PipelineExecutionId",
    "PipelineExecutionArn",
    "PipelineName",
    "PipelineArn",
    "StartDateTime",
    "CurrentDateTime",
)
_PATH_TOKEN = re.compile(r"\.?([A-Za-z_][A-Za-z0-9_\-]*)|\[(\d+)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]")
# When a list is indexed by a string, the element whose name field has that value is meant (Outputs['train']).
_NAME_FIELDS = ("OutputName", "MetricName", "InputName", "ChannelName", "Name")


@dataclass
class Context:
    """What expressions can read: parameter values, execution variables, finished steps' properties."""

    parameters: dict[str, Any]
    execution: dict[str, Any]
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)
    read_json: Callable[[str], Any] | None = None

    def load_json(self, uri: str) -> Any:
        """The JSON document at a URI (a property file), through the reader the runner provides."""
        if self.read_json is None:
            raise ExpressionError(f"cannot read {uri}: no JSON reader configured")
        return self.read_json(uri)


def is_expression(value: Any) -> bool:
    """Whether a JSON object is an expression (``Get`` or a ``Std:`` function) rather than plain data."""
    return isinstance(value, dict) and len(value) == 1 and ("Get" in value or next(iter(value)).startswith("Std:"))


def parse_path(path: str) -> list[str | int]:
    """``Outputs['train'].S3Output.S3Uri`` -> ``["Outputs", "train", "S3Output", "S3Uri"]``; integers for [n]."""
    tokens: list[str | int] = []
    position = 0
    while position < len(path):
        match = _PATH_TOKEN.match(path, position)
        if not match or match.end() == position:
            raise ExpressionError(f"cannot parse property path {path!r} at character {position}")
        name, index, quoted, double_quoted = match.groups()
        if index is not None:
            tokens.append(int(index))
        else:
            tokens.append(next(t for t in (name, quoted, double_quoted) if t is not None))
        position = match.end()
    return tokens


def walk_path(value: Any, tokens: list[str | int], description: str) -> Any:
    """Follow parsed path tokens through nested objects and lists; an absent member is an error."""
    for token in tokens:
        if isinstance(value, dict) and isinstance(token, str) and token in value:
            value = value[token]
        elif isinstance(value, list) and isinstance(token, int) and -len(value) <= token < len(value):
            value = value[token]
        elif isinstance(value, list) and isinstance(token, str):
            named = [item for item in value if isinstance(item, dict) and token in _named(item)]
            if not named:
                raise ExpressionError(f"{description}: no element named {token!r}")
            value = named[0]
        else:
            raise ExpressionError(f"{description}: no {token!r} there")
    return value


def _named(item: dict[str, Any]) -> set[Any]:
    return {item[name] for name in _NAME_FIELDS if name in item}


def to_text(value: Any) -> str:
    """How a resolved value is written into a string (Std:Join): booleans in lower case, as JSON writes them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def resolve(value: Any, context: Context) -> Any:
    """The value with every expression in it replaced by what it evaluates to."""
    if isinstance(value, list):
        return [resolve(item, context) for item in value]
    if not isinstance(value, dict):
        return value
    if not is_expression(value):
        return {key: resolve(item, context) for key, item in value.items()}
    ((key, body),) = value.items()
    if key == "Get":
        return _get(body, context)
    if key == "Std:Join":
        return to_text(resolve(body.get("On", ""), context)).join(
            to_text(resolve(item, context)) for item in body.get("Values", [])
        )
    if key == "Std:JsonGet":
        return _json_get(body, context)
    raise ExpressionError(f"unknown function {key!r}; the local backend supports Get, {', '.join(FUNCTIONS)}")


def _get(reference: Any, context: Context) -> Any:
    if not isinstance(reference, str):
        raise ExpressionError(f"Get expects a string, got {reference!r}")
    namespace, _, rest = reference.partition(".")
    if namespace == "Parameters":
        if rest not in context.parameters:
            raise ExpressionError(f"{reference}: no parameter named {rest!r}")
        return context.parameters[rest]
    if namespace == "Execution":
        if rest not in context.execution:
            raise ExpressionError(f"{reference}: unknown execution variable {rest!r}")
        return context.execution[rest]
    if namespace == "Steps":
        step_name, _, path = rest.partition(".")
        if step_name not in context.steps:
            raise ExpressionError(f"{reference}: step {step_name!r} has not run")
        return walk_path(context.steps[step_name], parse_path(path), reference)
    raise ExpressionError(f"{reference}: unknown Get namespace {namespace!r} (expected Parameters, Execution, Steps)")


def _json_get(body: dict[str, Any], context: Context) -> Any:
    if "PropertyFile" in body:
        uri = resolve(body["PropertyFile"], context)
    elif "S3Uri" in body:
        uri = resolve(body["S3Uri"], context)
    else:
        raise ExpressionError(f"Std:JsonGet needs PropertyFile or S3Uri, got keys {sorted(body)}")
    document = context.load_json(uri)
    path = resolve(body.get("Path", ""), context)
    return walk_path(document, parse_path(path), f"Std:JsonGet {path!r} in {uri}")


def expressions(value: Any) -> Iterator[dict[str, Any]]:
    """Every expression object inside a value, outermost first."""
    if isinstance(value, list):
        for item in value:
            yield from expressions(item)
    elif isinstance(value, dict):
        if is_expression(value):
            yield value
        for item in value.values():
            yield from expressions(item)


def check(value: Any, parameters: set[str], steps: set[str], where: str) -> None:
    """Fail before anything runs if a value uses an unknown function, parameter, execution variable or step."""
    for expression in expressions(value):
        ((key, body),) = expression.items()
        if key == "Get":
            if not isinstance(body, str):
                raise ExpressionError(f"{where}: Get expects a string, got {body!r}")
            namespace, _, rest = body.partition(".")
            known = {"Parameters": parameters, "Execution": set(EXECUTION_VARIABLES), "Steps": steps}
            labels = {"Parameters": "parameter", "Execution": "execution variable", "Steps": "step"}
            if namespace not in known:
                raise ExpressionError(f"{where}: unknown Get namespace in {body!r}")
            name = rest.split(".")[0] if namespace == "Steps" else rest
            if name not in known[namespace]:
                raise ExpressionError(f"{where}: {body!r} names no known {labels[namespace]} {name!r}")
            if namespace == "Steps":
                parse_path(rest.partition(".")[2])
        elif key not in FUNCTIONS:
            raise ExpressionError(f"{where}: unknown function {key!r}; supported: Get, {', '.join(FUNCTIONS)}")
