"""The capacity plan as plain lines of at most 80 columns: a row per step, its notes, Train's scaling curve."""

from __future__ import annotations

import textwrap

from pipeline.core.capacity import GB, CapacityPlan

WIDTH = 80

COLUMNS = ("step", "instances", "volume", "down", "write", "memory", "time", "cost")
WIDTHS = (10, 18, 8, 7, 7, 8, 6, 7)  # one space between columns: 78 columns


def plan_lines(plan: CapacityPlan) -> list[str]:
    """The table of steps, each step's notes, the training curve and where more instances stop paying."""
    size = plan.input
    rows = f"{size.rows:,} rows" + (" (estimated from the bytes)" if size.rows_estimated else "")
    files = "" if size.files is None else f", {size.files:,} file(s)"
    lines = [*_wrap(f"Capacity plan for {size.source}: {_bytes(size.bytes)}, {rows}{files}"), ""]
    lines += [_row(COLUMNS), "(down, write and memory: per host; volume: each host's)"]
    for step in plan.steps:
        memory = _bytes(step.peak_memory_bytes) + ("" if step.memory_fits else "!")
        lines.append(
            _row(
                (
                    step.step,
                    f"{step.instance_count} x {step.instance_type.removeprefix('ml.')}",
                    f"{step.volume_gb:,} GB",
                    _bytes(step.download_bytes),
                    _bytes(step.write_bytes),
                    memory,
                    _duration(step.seconds),
                    _usd(step.cost_usd),
                )
            )
        )
    lines.append(_row(("total", "", "", "", "", "", _duration(plan.seconds), _usd(plan.cost_usd))))
    notes = [(step.step, note) for step in plan.steps for note in step.notes]
    if notes:
        lines.append("")
        lines += [line for step, note in notes for line in _wrap(f"{step}: {note}")]
        if any(not step.memory_fits for step in plan.steps):
            lines.append("(!: peak memory above 80% of the instance's)")
    lines += ["", "Train on SageMaker (SIGMOD 2020 fit), by instance count:"]
    lines.append(f"{'instances':>10}{'time':>10}{'speedup':>10}{'efficiency':>12}{'cost':>10}")
    for point in plan.training_curve:
        lines.append(
            f"{point.instances:>10,}{_duration(point.seconds):>10}{point.speedup:>9.1f}x"
            f"{point.efficiency:>12.0%}{'$' + format(point.cost_usd, ',.2f'):>10}"
        )
    lines += _wrap(
        f"More training instances stop paying past {plan.max_paying_instances:,}: efficiency falls below "
        f"{plan.efficiency_floor:.0%}."
    )
    lines += _wrap("Sources of every figure: llpipe plan --json (figures), docs/guides/scaling.md.")
    return lines


def _wrap(text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, subsequent_indent="  ")


def _row(cells: tuple[str, ...]) -> str:
    first, *rest = cells
    cells = [f"{first:<{WIDTHS[0]}}", *(f"{c:>{w}}" for c, w in zip(rest, WIDTHS[1:], strict=True))]
    return " ".join(cells).rstrip()


def _bytes(value: float) -> str:
    """Decimal units, as S3 and VolumeSizeInGB count."""
    for unit, scale in (("PB", 10**6 * GB), ("TB", 1000 * GB), ("GB", GB), ("MB", 10**6), ("kB", 1000)):
        if value >= scale:
            scaled = value / scale
            return f"{scaled:.{0 if scaled >= 100 else 1 if scaled >= 10 else 2}f} {unit}"
    return f"{value:.0f} B"


def _usd(value: float) -> str:
    return f"${value:,.0f}" if value >= 1000 else f"${value:.2f}"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds // 60:.0f}m{seconds % 60:02.0f}s"
    return f"{seconds // 3600:.0f}h{seconds % 3600 // 60:02.0f}m"
