"""The picture of the pipeline's DAG, from the definition JSON itself: the steps and edges SageMaker Studio shows,
each step with its status, duration and cache source when drawn for an execution.

``Execution.dag`` (local or SageMaker) and :func:`definition_dag` (the definition alone) return a :class:`Dag`,
which Jupyter shows as SVG (``_repr_svg_``), ``write`` saves as a file and ``llpipe`` prints in a terminal form.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.api.dag_svg import Box, duration_text, render_svg
from pipeline.core.dag import Graph, Layered, definition_graph, layered
from pipeline.core.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd

    from pipeline.definition.config import PipelineConfig

NOT_STARTED = "NotStarted"  # SageMaker's status of a step the execution has not reached (it lists no record of it)


__all__ = ["Dag", "StepState", "definition_dag", "execution_dag"]


@dataclass(frozen=True)
class StepState:
    """One step of an execution as the picture shows it: status as SageMaker names it, seconds it ran, and the id of
    the execution whose result a cache hit reused."""

    status: str
    seconds: float | None = None
    cache_source: str | None = None


@dataclass(frozen=True)
class Dag:
    """The DAG of a definition; with ``states`` (step name -> :class:`StepState`) that of one execution, a step
    without a state being NotStarted. ``svg()`` draws it, ``write(path)`` saves the SVG."""

    graph: Graph
    states: Mapping[str, StepState] | None = None
    title: str = ""

    @cached_property
    def layered(self) -> Layered:
        """The steps in layers, ordered for drawing (computed once)."""
        return layered(self.graph)

    def state(self, name: str) -> StepState | None:
        """A step's state; None when drawing the definition alone."""
        if self.states is None:
            return None
        return self.states.get(name) or StepState(NOT_STARTED)

    def box(self, name: str) -> Box:
        """What the step's box in the picture says."""
        kind = next(node.type for node in self.graph.nodes if node.name == name)
        state = self.state(name)
        if state is None:
            return Box(name, kind)
        tooltip = f"{name} ({kind}): {state.status}"
        return Box(name, kind, state.status, duration_text(state.seconds), state.cache_source, tooltip)

    def svg(self) -> str:
        """The picture as an SVG document."""
        return render_svg(self.layered, self.box, self.title)

    def _repr_svg_(self) -> str:
        return self.svg()

    def write(self, path: str | Path) -> Path:
        """Write the SVG to ``path`` (atomically); the path written."""
        from pipeline.core.files import write_text_atomically

        target = Path(path)
        try:
            write_text_atomically(target, self.svg())
        except OSError as error:  # name the path that failed when it is not the picture's (a parent that is a file)
            where = f": {error.filename}" if error.filename and Path(error.filename) != target else ""
            raise UsageError(f"cannot write the DAG picture to {target}: {error.strerror or error}{where}") from None
        return target


def _definition_dict(definition: Mapping[str, Any] | str) -> Mapping[str, Any]:
    if isinstance(definition, str):
        try:
            definition = json.loads(definition)
        except json.JSONDecodeError as error:
            raise UsageError(f"the pipeline definition is not valid JSON: {error}") from None
    if not isinstance(definition, Mapping) or not isinstance(definition.get("Steps"), list):
        raise UsageError("a pipeline definition is a JSON object with a Steps list")
    return definition


def definition_dag(
    definition: Mapping[str, Any] | str | None = None,
    config: PipelineConfig | None = None,
    title: str = "",
    **settings: Any,
) -> Dag:
    """The DAG of a definition JSON (a dict or its text), without statuses; with none given, of the definition built
    offline from ``config`` or the settings (as ``llpipe definition`` builds it), titled with the pipeline's name."""
    if definition is None:
        from pipeline.definition.build import build_definition

        if config is None:
            from pipeline.definition.config import load_config

            config = load_config(settings)
        definition = build_definition(config).definition_json
        title = title or f"Pipeline {config.pipeline_name}"
    return Dag(definition_graph(_definition_dict(definition)), None, title)


def execution_dag(definition: Mapping[str, Any] | str, steps: pd.DataFrame, title: str = "") -> Dag:
    """The DAG of an execution: the definition it ran and its steps table (``Execution.steps``: step, status,
    seconds, cache_hit)."""
    states = {
        str(row["step"]): StepState(
            str(row["status"]),
            None if row["seconds"] is None or row["seconds"] != row["seconds"] else float(row["seconds"]),
            row["cache_hit"] or None,
        )
        for row in steps.to_dict(orient="records")
    }
    return Dag(definition_graph(_definition_dict(definition)), states, title)
