"""``pipeline.plan``: the capacity plan of an input (a local folder or file, an S3 prefix, or a stated size).

The input is measured here (a folder's files and their rows, an S3 prefix's objects through ListObjectsV2), then
:mod:`pipeline.core.capacity` computes each step's fleet, volume, bytes, memory, time and cost from its documented
figures, under the parameter table's defaults (``pipeline.definition.parameter_table``) with the choices given here,
sized as ``llpipe run``, ``start`` and ``schedule`` size the definition.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from containerlib.s3_uri import split_s3_uri
from pipeline.core.capacity import TYPE_PARAMETERS, CapacityPlan, InputSize, estimated_rows
from pipeline.core.capacity import plan as capacity_plan
from pipeline.core.errors import UsageError, opt
from pipeline.core.s3_listing import list_objects
from pipeline.definition.parameter_table import defaults

__all__ = ["measure_folder", "measure_s3", "parse_rows", "parse_size", "plan"]

_UNITS = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}
_BINARY = {"KI": 2**10, "MI": 2**20, "GI": 2**30, "TI": 2**40, "PI": 2**50}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][0-9]+)?)\s*([KMGTP]I?)?B?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """``1TB`` (10**12), ``500GiB`` (2**30 each), ``2.5e9``: a size in bytes."""
    match = _SIZE.match(str(text))
    if not match:
        raise UsageError(f"{opt('bytes', repr(text))}: expected a size such as 1TB, 500GB, 64GiB or 2.5e9")
    unit = (match.group(2) or "").upper()
    value = float(match.group(1)) * (_BINARY[unit] if unit in _BINARY else _UNITS[unit])
    if value < 1:
        raise UsageError(f"{opt('bytes', repr(text))}: expected at least one byte")
    return round(value)


def parse_rows(text: str) -> int:
    """``5e9``, ``5000000000`` or ``5,000,000,000``: a row count of at least 1."""
    try:
        rows = float(str(text).replace(",", "").replace("_", ""))
    except ValueError:
        raise UsageError(f"{opt('rows', repr(text))}: expected a number of rows such as 5e9") from None
    if rows < 1 or rows != rows:
        raise UsageError(f"{opt('rows', repr(text))}: expected at least one row")
    return round(rows)


def measure_folder(path: Path) -> InputSize:
    """A local file or folder: its files' bytes, and its rows (CSV lines after each header, Parquet's metadata)."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{path}: no such file or folder to plan for")
    files = sorted(
        p for p in ([path] if path.is_file() else path.rglob("*")) if p.is_file() and not p.name.startswith(".")
    )
    if not files:
        raise UsageError(f"{path}: no files to plan for")
    rows = sum(_rows(file) for file in files)
    objects = tuple(
        (file.relative_to(path).as_posix() if path.is_dir() else file.name, file.stat().st_size) for file in files
    )
    size = sum(bytes_ for _, bytes_ in objects)
    return InputSize(size, max(rows, 1), len(files), f"local {path}", objects=objects)


def _rows(file: Path) -> int:
    if file.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        return int(pq.ParquetFile(file).metadata.num_rows)
    lines, last = 0, b"\n"
    with file.open("rb") as handle:
        while chunk := handle.read(1 << 22):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    lines += last != b"\n"  # a last line without its newline
    return max(lines - 1, 0)  # the header


def measure_s3(uri: str, s3: Any) -> InputSize:
    """An S3 prefix: its objects' bytes and count, from ListObjectsV2 (every page); rows estimated from bytes."""
    try:
        bucket, prefix = split_s3_uri(uri)
    except ValueError:
        raise UsageError(f"{uri!r}: expected s3://bucket/prefix") from None
    objects = [
        (item["Key"], int(item["Size"])) for item in list_objects(s3, bucket, prefix) if not item["Key"].endswith("/")
    ]
    if not objects:
        raise UsageError(f"{uri}: no objects under the prefix to plan for")
    size = sum(bytes_ for _, bytes_ in objects)
    return InputSize(size, estimated_rows(size), len(objects), uri, rows_estimated=True, objects=tuple(objects))


def plan(
    source: str | Path | None = None,
    *,
    bytes: int | str | None = None,  # noqa: A002 - the flag's name
    rows: int | str | None = None,
    training_instances: int | None = None,
    processing_instances: int | None = None,
    instance_types: Mapping[str, str] | None = None,
    prices: Mapping[str, float] | None = None,
    s3: Any = None,
    config: Any = None,
) -> CapacityPlan:
    """The capacity plan of ``source`` (a local path or ``s3://bucket/prefix``) or of a stated ``bytes`` (``"1TB"``)
    and ``rows`` (estimated from the bytes when not given). ``s3`` is an S3 client (default: the configured
    session's); ``instance_types`` maps step names to types; ``prices`` USD per instance-hour by type."""
    if (source is None) == (bytes is None):
        raise UsageError(f"plan needs an input: a local folder, an s3:// prefix, or {opt('bytes')} (and {opt('rows')})")
    stated_rows = None if rows is None else parse_rows(str(rows))
    if bytes is not None:
        size_bytes = parse_size(str(bytes))
        estimated = stated_rows is None
        size = InputSize(
            size_bytes, stated_rows or estimated_rows(size_bytes), None, "a stated size", rows_estimated=estimated
        )
    elif str(source).startswith("s3://"):
        if s3 is None:
            from pipeline.definition.config import load_config
            from pipeline.sagemaker import aws

            s3 = aws.session(config or load_config()).client("s3")
        with _aws_call(f"ListObjectsV2 {source}"):
            size = measure_s3(str(source), s3)
    else:
        size = measure_folder(Path(source))
    if stated_rows is not None and bytes is None:
        size = InputSize(size.bytes, stated_rows, size.files, size.source, objects=size.objects)
    values: dict[str, Any] = defaults()
    given = set()
    for name, count in (
        ("TrainingInstanceCount", training_instances),
        ("ProcessingInstanceCount", processing_instances),
    ):
        if count is not None:
            values[name] = count
            given.add(name)
    for step, instance_type in (instance_types or {}).items():
        if step not in TYPE_PARAMETERS:
            raise UsageError(f"{opt('instance_type', repr(step))}: expected one of {', '.join(TYPE_PARAMETERS)}")
        values[TYPE_PARAMETERS[step]] = instance_type
    return capacity_plan(size, values, given, prices=prices)


def _aws_call(what: str) -> Any:
    from pipeline.sagemaker.aws import call

    return call(what)
