"""PNG plots of data-quality violations: for each feature a violation names, its baseline distribution beside the
new data's (numeric: the share of values in the same bins, from both KLL sketches; String: the share of each value).

A feature only one side has (a missing or an extra column) has nothing to compare and gets no plot.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.api.plots import new_figure, save_figure

__all__ = ["plot_name", "render_drift_plots"]

NUMERIC_TYPES = ("Integral", "Fractional")
BINS = 20
MOST_FREQUENT = 12


def plot_name(feature: str) -> str:
    """``data-quality-<feature>.png`` with the feature's name made safe for a file name."""
    return f"data-quality-{re.sub(r'[^A-Za-z0-9_.-]+', '_', feature).strip('_') or 'feature'}.png"


def render_drift_plots(
    current: Mapping[str, Any], baseline: Mapping[str, Any], violations: Sequence[Mapping[str, str]], folder: Path
) -> list[Path]:
    """One plot per feature with a violation that both statistics describe, in the violations' order."""
    ours = {feature["name"]: feature for feature in current.get("features", [])}
    theirs = {feature["name"]: feature for feature in baseline.get("features", [])}
    checks: dict[str, list[str]] = {}
    for item in violations:
        checks.setdefault(item["feature_name"], []).append(item["constraint_check_type"])
    paths = []
    for name, kinds in checks.items():
        if name not in ours or name not in theirs:
            continue
        folder.mkdir(parents=True, exist_ok=True)
        figure = _figure_for(name, theirs[name], ours[name], kinds)
        paths.append(save_figure(figure, folder / plot_name(name)))
    return paths


def _figure_for(name: str, baseline: Mapping[str, Any], current: Mapping[str, Any], checks: list[str]) -> Any:
    figure = new_figure(6.5, 4.2)
    axes = figure.add_subplot()
    if baseline.get("inferred_type") in NUMERIC_TYPES and current.get("inferred_type") in NUMERIC_TYPES:
        edges, shares = _numeric_shares(baseline, current)
        width = (edges[1] - edges[0]) * 0.42 if len(edges) > 1 and edges[1] > edges[0] else 0.4
        centers = (edges[:-1] + edges[1:]) / 2 if len(edges) > 1 else np.zeros(1)
        axes.bar(centers - width / 2, shares[0], width=width, label="baseline", color="tab:blue")
        axes.bar(centers + width / 2, shares[1], width=width, label="new data", color="tab:orange")
        axes.set_xlabel(name)
    else:
        values, shares = _categorical_shares(baseline, current)
        positions = np.arange(len(values))
        axes.bar(positions - 0.2, shares[0], width=0.4, label="baseline", color="tab:blue")
        axes.bar(positions + 0.2, shares[1], width=0.4, label="new data", color="tab:orange")
        axes.set_xticks(positions)
        axes.set_xticklabels(values, rotation=45, ha="right")
    axes.set_ylabel("share of present values")
    axes.set_title(f"{name}: {', '.join(checks)}", fontsize=10)
    # a fixed corner: "best" searches the bars for the emptiest place, which matplotlib warns about (an error under
    # the suite's filterwarnings) when the search takes over a second on a busy machine
    axes.legend(loc="upper right", framealpha=0.8)
    return figure


def _sketch(feature: Mapping[str, Any]) -> Any:
    from dataquality.kll import KLLSketch

    sketch = feature["numerical_statistics"]["distribution"]["kll"]["sketch"]
    return KLLSketch.from_data(sketch["data"], sketch["parameters"]["k"], sketch["parameters"]["c"])


def _numeric_shares(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Equal-width bins over both ranges, and each side's share of its values in each bin."""
    low = min(baseline["numerical_statistics"]["min"], current["numerical_statistics"]["min"])
    high = max(baseline["numerical_statistics"]["max"], current["numerical_statistics"]["max"])
    edges = np.linspace(low, high, BINS + 1) if high > low else np.array([low, low + 1.0])
    shares = []
    for feature in (baseline, current):
        sketch = _sketch(feature)
        below = sketch.rank_exclusive(edges)
        below[-1] = sketch.rank(edges[-1:])[0]
        shares.append(np.diff(below) / max(sketch.weight, 1.0))
    return edges, shares


def _categorical_shares(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> tuple[list[str], list[np.ndarray]]:
    """The most frequent values of either side, and each side's share of each."""
    counts = []
    for feature in (baseline, current):
        section = feature.get("string_statistics") or {}
        buckets = ((section.get("distribution") or {}).get("categorical") or {}).get("buckets") or []
        counts.append({str(bucket["value"]): float(bucket["count"]) for bucket in buckets})
    totals = [sum(side.values()) or 1.0 for side in counts]
    ranked = sorted(set(counts[0]) | set(counts[1]), key=lambda v: (-(counts[0].get(v, 0) + counts[1].get(v, 0)), v))
    values = ranked[:MOST_FREQUENT]
    shares = [np.array([side.get(v, 0.0) / total for v in values]) for side, total in zip(counts, totals, strict=True)]
    return values, shares
