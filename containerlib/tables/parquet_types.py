"""Which Parquet column types a table may hold: flat values only (numbers, text, booleans, dates and times), since
every column becomes a feature, the label or the id; nested ones (struct, list, map) are refused by name."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from containerlib.errors import TableError


def check_flat_columns(schema: Any, name: str, columns: Collection[str] | None = None) -> None:
    """``TableError`` naming the file and every nested column of the Arrow ``schema`` (of ``columns`` if given)."""
    import pyarrow as pa

    nested = [
        f"{field.name!r} ({field.type})"
        for field in schema
        if (columns is None or field.name in columns) and pa.types.is_nested(field.type)
    ]
    if nested:
        raise TableError(
            f"{name}: column(s) {', '.join(nested)} hold nested Parquet values (struct, list or map); each column "
            "must hold one number, text, boolean or timestamp per row: flatten them into columns of their own, or "
            "write the file without them"
        )
