"""The model's largest coefficients for ``llpipe execution show``: feature name, weight, standardised weight."""

from __future__ import annotations

from typing import Any

TOP = 10  # features shown, the largest standardised weights first


def coefficients_table(report: dict[str, Any], top: int = TOP) -> Any:
    """A rich table of the ``top`` features by |standardised weight| and the bias; None without the section."""
    from rich.table import Table

    section = report.get("coefficients")
    if not isinstance(section, dict) or not section.get("features"):
        return None
    ranked = section.get("ranked_by", "weight")
    shown = section["features"][:top]
    title = (
        f"Coefficients: the {len(shown)} largest of {section['feature_count']} by |{ranked.replace('_', ' ')}|"
        " (the report lists them all)"
    )
    table = Table(title=title, title_justify="left")
    table.add_column("feature", overflow="fold")
    table.add_column("weight", justify="right")
    table.add_column("standardised", justify="right")
    for row in shown:
        table.add_row(row["feature"], _number(row["weight"]), _number(row.get("standardised_weight")))
    table.add_row("(bias)", _number(section.get("bias")), "", style="dim")
    return table


def _number(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return " ".join(f"{item:+.4f}" for item in value)
    return f"{value:+.4f}"
