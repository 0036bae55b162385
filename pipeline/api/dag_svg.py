"""The pipeline's DAG drawn as SVG, top to bottom as SageMaker Studio draws it, with no graph-drawing dependency.

Steps sit in the layers of :func:`pipeline.core.dag.layered`; each is a box with its name, type and, for an
execution, its status colour, duration and the execution a cache hit took its result from. Long edges of one step
run down one shared lane; a Condition's branches carry ``true``/``false``. Pure text out: the same string in a file,
in Jupyter and in the docs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from html import escape
from itertools import pairwise

from pipeline.core.dag import Edge, Layered

BOX_WIDTH, BOX_HEIGHT = 212, 78
COMPACT_HEIGHT = 46  # a box of the definition alone: name and type only
LANE_WIDTH = 12  # a waypoint's width in its layer
BOX_GAP, LANE_GAP = 28, 10  # horizontal space beside a box, beside a lane
LAYER_GAP = 58  # vertical space between layers, where edges bend
MARGIN, TITLE_HEIGHT = 20, 30
PLACEMENT_SWEEPS = 6
FONT = "font-family:Helvetica,Arial,sans-serif"

# status -> (fill, stroke, dashed): SageMaker's step statuses; None is the definition without an execution
COLOURS: dict[str | None, tuple[str, str, bool]] = {
    "Succeeded": ("#e6f4ea", "#1e8e3e", False),
    "Failed": ("#fce8e6", "#d93025", False),
    "Executing": ("#e8f0fe", "#1a73e8", False),
    "Starting": ("#e8f0fe", "#1a73e8", True),
    "Stopping": ("#fef7e0", "#e37400", True),
    "Stopped": ("#fef7e0", "#e37400", False),
    "Skipped": ("#f1f3f4", "#9aa0a6", True),
    "NotStarted": ("#ffffff", "#9aa0a6", True),
    "Pending": ("#ffffff", "#9aa0a6", True),
    None: ("#ffffff", "#5f6368", False),
}


__all__ = ["Box", "duration_text", "place", "render_svg"]


@dataclass(frozen=True)
class Box:
    """What one step's box says: status None when drawing the definition alone."""

    name: str
    type: str
    status: str | None = None
    duration: str = ""
    cache_source: str | None = None
    tooltip: str = ""


def duration_text(seconds: float | None) -> str:
    """``12.3 s``, ``4 min 05 s``, ``1 h 02 min``; empty when unknown."""
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def _fit(text: str, pixels: float, char_width: float) -> str:
    """The text cut with an ellipsis to about ``pixels`` wide (an estimate: SVG has no text measuring)."""
    most = max(4, int(pixels / char_width))
    return text if len(text) <= most else text[: most - 1] + "…"


def _width(slot: str, layered: Layered) -> float:
    return LANE_WIDTH if slot in layered.waypoints else BOX_WIDTH


def _gap(left: str, right: str, layered: Layered) -> float:
    lanes = left in layered.waypoints and right in layered.waypoints
    return (_width(left, layered) + _width(right, layered)) / 2 + (LANE_GAP if lanes else BOX_GAP)


def place(layered: Layered) -> dict[str, float]:
    """Each slot's centre x: layers packed in order, then pulled toward their neighbours' mean x in alternating
    sweeps, never closer than their gaps."""
    above: dict[str, list[str]] = {}
    below: dict[str, list[str]] = {}
    for upper, lower in layered.links:
        above.setdefault(lower, []).append(upper)
        below.setdefault(upper, []).append(lower)
    x: dict[str, float] = {}
    for layer in layered.layers:
        _settle(layer, {slot: 0.0 for slot in layer}, x, layered)
    for sweep in range(PLACEMENT_SWEEPS):
        neighbours = above if sweep % 2 == 0 else below
        order = layered.layers if sweep % 2 == 0 else tuple(reversed(layered.layers))
        for layer in order:
            wanted = {}
            for slot in layer:
                near = [x[n] for n in neighbours.get(slot, [])]
                wanted[slot] = sum(near) / len(near) if near else x[slot]
            _settle(layer, wanted, x, layered)
    left = min((x[slot] - _width(slot, layered) / 2 for slot in x), default=0.0)
    return {slot: value - left + MARGIN for slot, value in x.items()}


def _settle(layer: tuple[str, ...], wanted: Mapping[str, float], x: dict[str, float], layered: Layered) -> None:
    """Put a layer's slots as near their wanted x as their order and gaps allow (pushed right, then shifted back
    by the mean displacement)."""
    placed: list[float] = []
    for index, slot in enumerate(layer):
        least = placed[-1] + _gap(layer[index - 1], slot, layered) if placed else -float("inf")
        placed.append(max(wanted[slot], least))
    shift = sum(value - wanted[slot] for slot, value in zip(layer, placed, strict=True)) / len(layer) if layer else 0.0
    for slot, value in zip(layer, placed, strict=True):
        x[slot] = value - shift


def _ports(
    layered: Layered, x: Mapping[str, float]
) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], float]]:
    """Where each link leaves its upper slot and enters its lower one: a box's links spread over the middle of its
    bottom (top) side in the order of the slots they go to (come from); a lane's all at its centre."""
    links = layered.links
    out: dict[tuple[str, str], float] = {}
    into: dict[tuple[str, str], float] = {}
    for ends, side, other in ((out, 0, 1), (into, 1, 0)):
        by_slot: dict[str, list[tuple[str, str]]] = {}
        for link in links:
            by_slot.setdefault(link[side], []).append(link)
        for slot, own in by_slot.items():
            own.sort(key=lambda link: x[link[other]])
            if slot in layered.waypoints:
                ends.update({link: x[slot] for link in own})
                continue
            span = BOX_WIDTH * 0.6
            for index, link in enumerate(own):
                offset = (index + 0.5) / len(own) - 0.5 if len(own) > 1 else 0.0
                ends[link] = x[slot] + offset * span
    return out, into


def render_svg(layered: Layered, box: Callable[[str], Box], title: str = "") -> str:
    """The whole picture as an SVG document; ``box(name)`` says what each step's box shows."""
    x = place(layered)
    boxes = {slot: box(slot) for layer in layered.layers for slot in layer if slot not in layered.waypoints}
    tall = BOX_HEIGHT if any(item.status is not None for item in boxes.values()) else COMPACT_HEIGHT
    heading = MARGIN + (TITLE_HEIGHT if title else 0)
    top_of = [heading + index * (tall + LAYER_GAP) for index in range(len(layered.layers))]
    depth = {slot: index for index, layer in enumerate(layered.layers) for slot in layer}
    width = max((x[slot] + _width(slot, layered) / 2 for slot in x), default=0.0) + MARGIN
    width = max(width, MARGIN * 2 + len(title) * 7.5)
    height = (top_of[-1] + tall if top_of else heading) + MARGIN
    out, into = _ports(layered, x)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" style="{FONT}">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#5f6368"/></marker></defs>',
        f'<rect width="{width:.0f}" height="{height:.0f}" fill="#ffffff"/>',
    ]
    if title:
        parts.append(f'<text x="{MARGIN}" y="{MARGIN + 16}" font-size="16" font-weight="bold">{escape(title)}</text>')
    for edge, route in layered.routes.items():
        parts.append(_edge_path(edge, route, x, [(top, top + tall) for top in top_of], depth, out, into))
    for edge, route in layered.routes.items():
        if edge.label:  # beside the edge where it leaves the Condition, where its branches are still apart
            link = (route[0], route[1])
            parts.append(
                f'<text class="label" x="{out[link] + 5:.1f}" y="{top_of[depth[edge.source]] + tall + 14:.1f}" '
                f'font-size="11" fill="#3c4043" font-style="italic">{escape(edge.label)}</text>'
            )
    for layer in layered.layers:
        for slot in layer:
            if slot not in layered.waypoints:
                parts.append(_box_svg(boxes[slot], x[slot] - BOX_WIDTH / 2, top_of[depth[slot]], tall))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _edge_path(
    edge: Edge,
    route: tuple[str, ...],
    x: Mapping[str, float],
    bands: list[tuple[float, float]],
    depth: Mapping[str, int],
    out: Mapping[tuple[str, str], float],
    into: Mapping[tuple[str, str], float],
) -> str:
    """One edge: vertical through each lane, a smooth S-bend across each gap between layers, an arrow at its end."""
    commands = []
    for upper, lower in pairwise(route):
        start_x, end_x = out[(upper, lower)], into[(upper, lower)]
        start_y = bands[depth[upper]][1]
        end_y = bands[depth[lower]][0]
        if not commands:
            commands.append(f"M{start_x:.1f},{start_y:.1f}")
        bend = (end_y - start_y) / 2
        commands.append(f"C{start_x:.1f},{start_y + bend:.1f} {end_x:.1f},{end_y - bend:.1f} {end_x:.1f},{end_y:.1f}")
        if lower != route[-1]:  # a lane: straight down through its layer
            commands.append(f"L{end_x:.1f},{bands[depth[lower]][1]:.1f}")
    dashed = ' stroke-dasharray="5,3"' if edge.label == "false" else ""
    return (
        f'<path class="edge" data-source="{escape(edge.source)}" data-target="{escape(edge.target)}" '
        f'd="{" ".join(commands)}" fill="none" stroke="#5f6368" stroke-width="1.4"{dashed} marker-end="url(#arrow)"/>'
    )


def _box_svg(box: Box, left: float, top: float, height: float) -> str:
    """One step's box: a group with its rectangle and up to four lines of text."""
    fill, stroke, dashed = COLOURS.get(box.status, COLOURS["NotStarted"])
    dash = ' stroke-dasharray="6,3"' if dashed else ""
    inner = BOX_WIDTH - 20
    lines = [
        f'<text x="{left + 10:.1f}" y="{top + 20:.1f}" font-size="14" font-weight="bold" fill="#202124">'
        f"{escape(_fit(box.name, inner, 8.4))}</text>",
        f'<text x="{left + 10:.1f}" y="{top + 36:.1f}" font-size="11" fill="#5f6368">'
        f"{escape(_fit(box.type, inner, 6.4))}</text>",
    ]
    if box.status is not None:
        status = box.status + (f" · {box.duration}" if box.duration else "")
        lines.append(
            f'<text class="status" x="{left + 10:.1f}" y="{top + 54:.1f}" font-size="12" font-weight="bold" '
            f'fill="{stroke}">{escape(_fit(status, inner, 7.2))}</text>'
        )
    if box.cache_source:
        lines.append(
            f'<text class="cache" x="{left + 10:.1f}" y="{top + 70:.1f}" font-size="11" fill="#3c4043">'
            f"{escape(_fit('cached from ' + box.cache_source, inner, 6.4))}</text>"
        )
    tooltip = f"<title>{escape(box.tooltip)}</title>" if box.tooltip else ""
    return (
        f'<g class="step" data-step="{escape(box.name)}" data-status="{escape(box.status or "")}">{tooltip}'
        f'<rect x="{left:.1f}" y="{top:.1f}" width="{BOX_WIDTH}" height="{height}" rx="8" fill="{fill}" '
        f'stroke="{stroke}" stroke-width="1.8"{dash}/>' + "".join(lines) + "</g>"
    )
