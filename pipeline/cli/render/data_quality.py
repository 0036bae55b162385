"""The data-quality check on a terminal: what the baseline holds, what it was checked against, the violations."""

from __future__ import annotations

from collections import Counter
from typing import Any

SHORT = 8  # features listed in the one-line summary of types


def print_data_quality(view: dict[str, Any] | None, console: Any, features: bool = False) -> None:
    """The check's outcome and violations; with ``features``, a table of every feature of the baseline."""
    from rich.table import Table

    if not view:
        return
    types = Counter(feature["type"] for feature in view["features"])
    kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(types.items()))
    incomplete = [feature["name"] for feature in view["features"] if (feature["completeness"] or 0) < 1]
    missing = f"; missing values in {', '.join(incomplete[:SHORT])}" if incomplete else ""
    console.print(
        f"Data quality: {view['item_count']} records, {len(view['features'])} features ({kinds}){missing}",
        soft_wrap=True,
    )
    if view["violations"] is None:
        console.print("  check skipped: this run's baseline was calculated, not compared", soft_wrap=True)
    elif not view["violations"]:
        console.print(f"  [green]no violations[/green] against {view['checked_against'] or 'the baseline'}")
    else:
        console.print(
            f"  [red]{len(view['violations'])} violation(s)[/red] against {view['checked_against'] or 'the baseline'}",
            soft_wrap=True,
        )
        table = Table(title="Data-quality violations", title_justify="left")
        for column in ("feature", "check", "description"):
            table.add_column(column, overflow="fold")
        for item in view["violations"]:
            table.add_row(item["feature_name"], item["constraint_check_type"], item["description"])
        console.print(table)
    if features:
        console.print(feature_table(view["features"]))


def feature_table(features: list[dict[str, Any]]) -> Any:
    """Each feature of a baseline: type, completeness, and its numbers or its most frequent values."""
    from rich.table import Table

    table = Table(title="Data-quality baseline", title_justify="left")
    for column in ("feature", "type", "complete", "mean", "std", "min", "max", "values"):
        table.add_column(column, justify="left" if column in ("feature", "type", "values") else "right")
    for feature in features:
        completeness = feature["completeness"]
        numbers = [_number(feature.get(key)) for key in ("mean", "std_dev", "min", "max")]
        values = ""
        if "distinct_count" in feature:
            top = ", ".join(f"{value} ({count})" for value, count in feature["top"])
            values = f"{int(feature['distinct_count'] or 0)} distinct: {top}"
        table.add_row(
            str(feature["name"]),
            str(feature["type"]),
            "" if completeness is None else f"{completeness:.1%}",
            *numbers,
            values,
        )
    return table


def _number(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, (int, float)) else ""
