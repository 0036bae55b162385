"""A pipeline definition JSON as a graph, the one SageMaker Studio draws, and its layers for drawing it.

Nodes are the steps wherever they sit (a Condition's branch steps included). An edge runs from X to a step that
depends on X as SageMaker orders them: X in its ``DependsOn``, a ``{"Get": "Steps.X...."}`` anywhere in its arguments
or its own top-level values, or X the Condition whose ``IfSteps`` (label ``true``) or ``ElseSteps`` (``false``) hold
it. :func:`layered` places the steps in layers by longest path, with a waypoint in each layer a long edge crosses, and
orders each layer to reduce crossings; the SVG picture and the terminal form both draw from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from pipeline.core.errors import DefinitionError
from pipeline.core.steps import upstream_steps, walk_steps

ORDERING_SWEEPS = 8  # down-and-up barycentre sweeps; the order with the fewest crossings seen is kept


@dataclass(frozen=True)
class Node:
    """One step: its name and its type as the definition spells it (Processing, Training, Condition, Fail ...)."""

    name: str
    type: str


@dataclass(frozen=True)
class Edge:
    """``target`` runs after ``source``; ``label`` is ``true``/``false`` for a Condition's branch, else empty."""

    source: str
    target: str
    label: str = ""


@dataclass(frozen=True)
class Graph:
    """The steps in definition order and the edges between them (sorted by target, then source, in that order)."""

    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]

    def upstream(self, name: str) -> list[Edge]:
        """The edges into one step."""
        return [edge for edge in self.edges if edge.target == name]


def definition_graph(definition: Mapping[str, Any]) -> Graph:
    """The graph of a definition JSON (a dict); ``DefinitionError`` when a step reads or depends on a step the
    definition does not have, or names repeat."""
    found = list(walk_steps(list(definition.get("Steps", []))))
    nodes = tuple(Node(str(step.get("Name")), str(step.get("Type"))) for step, _ in found)
    order = {node.name: index for index, node in enumerate(nodes)}
    if len(order) != len(nodes):
        names = [node.name for node in nodes]
        raise DefinitionError(f"duplicate step name(s): {', '.join(sorted({n for n in names if names.count(n) > 1}))}")
    edges: dict[tuple[str, str], Edge] = {}
    for step, branch in found:
        name = str(step["Name"])
        sources = upstream_steps(step)
        unknown = sorted(sources - set(order))
        if unknown:
            raise DefinitionError(f"step {name} depends on or reads unknown step(s): {', '.join(unknown)}")
        for source in sources:
            edges[(source, name)] = Edge(source, name)
        if branch is not None:  # the branch's labelled edge wins over a plain one from the same Condition
            edges[(branch[0], name)] = Edge(branch[0], name, "true" if branch[1] else "false")
    ordered = sorted(edges.values(), key=lambda edge: (order[edge.target], order[edge.source]))
    return Graph(nodes, tuple(ordered))


@dataclass(frozen=True)
class Layered:
    """The graph in layers, top to bottom. Each layer lists its slots in drawing order: step names, and waypoints
    (ids in ``waypoints``) where edges cross a layer they do not stop in; the long edges of one step share one
    waypoint per layer, so they run down together as one lane. ``routes`` gives every edge's slots from its source
    to its target, one per layer."""

    graph: Graph
    layers: tuple[tuple[str, ...], ...]
    routes: dict[Edge, tuple[str, ...]]
    waypoints: frozenset[str]

    @property
    def links(self) -> list[tuple[str, str]]:
        """Every distinct (upper slot, lower slot) pair the routes pass between neighbouring layers."""
        return _links(self.routes)


def longest_path_layers(graph: Graph) -> dict[str, int]:
    """Each step's layer: 0 without upstream steps, else one below its lowest upstream step; ``DefinitionError``
    naming a dependency cycle."""
    upstream = {node.name: [edge.source for edge in graph.upstream(node.name)] for node in graph.nodes}
    layer: dict[str, int] = {}
    visiting: list[str] = []

    def place(name: str) -> int:
        if name in layer:
            return layer[name]
        if name in visiting:
            raise DefinitionError(f"dependency cycle: {' -> '.join([*visiting[visiting.index(name) :], name])}")
        visiting.append(name)
        layer[name] = 1 + max((place(source) for source in upstream[name]), default=-1)
        visiting.pop()
        return layer[name]

    for node in graph.nodes:
        place(node.name)
    return layer


def layered(graph: Graph) -> Layered:
    """The graph in longest-path layers with waypoints for long edges, each layer ordered by barycentre sweeps."""
    layer = longest_path_layers(graph)
    slots: list[list[str]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for node in graph.nodes:
        slots[layer[node.name]].append(node.name)
    routes: dict[Edge, tuple[str, ...]] = {}
    waypoints: set[str] = set()
    for edge in graph.edges:
        route = [edge.source]
        for crossed in range(layer[edge.source] + 1, layer[edge.target]):
            # one lane per source and layer, which a step's long edges share; no step is named so ([A-Za-z0-9_-])
            waypoint = f"{edge.source}@{crossed}"
            if waypoint not in waypoints:
                slots[crossed].append(waypoint)
                waypoints.add(waypoint)
            route.append(waypoint)
        routes[edge] = (*route, edge.target)
    ordered = _order(slots, _links(routes))
    return Layered(graph, tuple(tuple(layer) for layer in ordered), routes, frozenset(waypoints))


def _links(routes: Mapping[Edge, tuple[str, ...]]) -> list[tuple[str, str]]:
    return list(dict.fromkeys(pair for route in routes.values() for pair in pairwise(route)))


def _order(slots: list[list[str]], links: list[tuple[str, str]]) -> list[list[str]]:
    """Reorder each layer by the mean position of its neighbours in the layer above (down sweeps) or below (up
    sweeps); the order with the fewest crossings wins, the definition's order on ties."""
    above: dict[str, list[str]] = {}
    below: dict[str, list[str]] = {}
    for upper, lower in links:
        above.setdefault(lower, []).append(upper)
        below.setdefault(upper, []).append(lower)
    best, best_crossings = [list(layer) for layer in slots], crossings(slots, links)
    current = [list(layer) for layer in slots]
    for sweep in range(ORDERING_SWEEPS):
        down = sweep % 2 == 0
        indices = range(1, len(current)) if down else range(len(current) - 2, -1, -1)
        for index in indices:
            reference = current[index - 1 if down else index + 1]
            current[index] = _by_barycentre(current[index], reference, above if down else below)
        count = crossings(current, links)
        if count < best_crossings:
            best, best_crossings = [list(layer) for layer in current], count
    return best


def _by_barycentre(layer: list[str], reference: list[str], neighbours: Mapping[str, list[str]]) -> list[str]:
    """A layer sorted by the mean position of each slot's neighbours in the reference layer (its own position when
    it has none there), ties kept in the current order."""
    position = {slot: index for index, slot in enumerate(reference)}
    old = {slot: index for index, slot in enumerate(layer)}

    def barycentre(slot: str) -> float:
        near = [position[n] for n in neighbours.get(slot, []) if n in position]
        return sum(near) / len(near) if near else float(old[slot])

    return sorted(layer, key=lambda slot: (barycentre(slot), old[slot]))


def crossings(layers: list[list[str]] | tuple[tuple[str, ...], ...], links: list[tuple[str, str]]) -> int:
    """How many pairs of links between the same two neighbouring layers cross, with the slots in the given order."""
    position = {slot: index for layer in layers for index, slot in enumerate(layer)}
    depth = {slot: index for index, layer in enumerate(layers) for slot in layer}
    count = 0
    for first in range(len(links)):
        for second in range(first + 1, len(links)):
            (a, b), (c, d) = links[first], links[second]
            if depth[a] == depth[c] and (position[a] - position[c]) * (position[b] - position[d]) < 0:
                count += 1
    return count
