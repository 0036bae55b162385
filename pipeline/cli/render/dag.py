"""The DAG in a terminal: the steps layer by layer (the SVG picture's layers, top to bottom), each with its type,
status, duration, cache source and the steps it runs after (a Condition's branch marked ``true``/``false``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.api.dag import Dag

STATUS_STYLES = {
    "Succeeded": ("✓", "green"),
    "Failed": ("✗", "red"),
    "Executing": ("▶", "yellow"),
    "Starting": ("▶", "yellow"),
    "Stopping": ("■", "red"),
    "Stopped": ("■", "red"),
    "Skipped": ("○", "dim"),
    "NotStarted": ("○", "dim"),
    "Pending": ("○", "dim"),
}


def dag_table(dag: Dag) -> Any:
    """A rich Table of the DAG: one row per step in layer order, its name over its type, its status over its cache
    source; reads at 80 columns (the upstream steps wrap)."""
    from rich.markup import escape
    from rich.table import Table, box

    from pipeline.api.dag_svg import duration_text

    drawn = dag.layered
    with_states = dag.states is not None
    table = Table(title=dag.title or None, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("#", justify="right")
    table.add_column("step", overflow="fold")
    if with_states:
        table.add_column("status", overflow="fold")
    table.add_column("after", overflow="fold", ratio=1)
    types = {node.name: node.type for node in dag.graph.nodes}
    for number, layer in enumerate(drawn.layers, start=1):
        for name in (slot for slot in layer if slot not in drawn.waypoints):
            after = ", ".join(
                escape(edge.source + (f" ({edge.label})" if edge.label else "")) for edge in dag.graph.upstream(name)
            )
            cells = [str(number), f"[bold]{escape(name)}[/bold]\n[dim]{escape(types[name])}[/dim]"]
            state = dag.state(name)
            if state is not None:
                mark, style = STATUS_STYLES.get(state.status, ("?", ""))
                text = f"{mark} {state.status}"
                text += f" {duration_text(state.seconds)}" if state.seconds is not None else ""
                text = f"[{style}]{escape(text)}[/{style}]" if style else escape(text)
                if state.cache_source:
                    text += f"\ncached from {escape(state.cache_source)}"
                cells.append(text)
            table.add_row(*cells, after or "-")
    return table
