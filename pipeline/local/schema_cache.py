"""A local run's inferred schema, kept in the work dir by what decided it, so a rerun on the same data skips the
sample's parsing and the decision (pandas' import and a pass over every sampled value: most of what ``llpipe run``
itself spends on a small table).

An entry's key is the SHA-256 of everything :func:`~pipeline.definition.schema.sample_local` and
:func:`~pipeline.definition.schema_inference.infer` read: the bytes they sample of a CSV file (its first lines), a
Parquet file's size and change time (as the data version has them), the files' names and the folder's name, the rows
per file, the parameter values, the names the user gave, the pipeline prefix, the source of the code that decides
(``pipeline/definition``, ``pipeline/core``, ``containerlib``) and the versions of the libraries that read the
sample. Only a decision that succeeded is kept: a refused table is decided (and refused, with the same message)
again each run.

A decision made from CSV files alone is also kept in the user cache (``schemas/<key>.json`` under
:func:`~pipeline.core.files.user_cache_dir`): its key holds every byte the decision read, so a fresh work dir on the
same table (the bundled example, a test's table) copies it instead of deciding again (about 1.2 CPU-s on the
example). A Parquet file's key is its size and change time, which say nothing outside its work dir: such a decision
is kept in the work dir only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from pipeline.definition.schema_inference import Inferred

ENTRY_FORMAT = 1  # bumped when an entry's layout changes
CODE_PACKAGES = ("pipeline/definition", "pipeline/core", "containerlib")  # the code a decision runs, by repo path
LIBRARIES = ("pandas", "numpy", "pyarrow")  # what reads the sample (CSV through pandas, Parquet through Arrow)


def inferred(
    folder: Path,
    files: list[Path],
    base: Path,
    rows: int,
    values: Mapping[str, Any],
    given: set[str],
    pipeline_prefix: str,
) -> Inferred:
    """The schema decided from the first ``rows`` rows of ``files``: the entry in ``folder`` kept for the same
    inputs, else sampled and decided (and kept when the folder can be written)."""
    key = decision_key(files, base, rows, values, given, pipeline_prefix)
    entry = folder / f"{key}.json" if key else None
    shared = _shared_entry(key, files)
    if entry is not None:
        kept = _read(entry)
        if kept is not None:
            return kept
        kept = _read(shared) if shared is not None else None
        if kept is not None:
            _write(entry, kept)
            return kept
    from pipeline.definition.schema import sample_local
    from pipeline.definition.schema_inference import infer

    decided = infer(sample_local(files, base, rows), values, given, pipeline_prefix)
    for path in (entry, shared):
        if path is not None:
            _write(path, decided)
    return decided


def _shared_entry(key: str | None, files: list[Path]) -> Path | None:
    """Where the user cache keeps the decision of ``key``: only for CSV files, whose key holds the bytes decided
    from; None for a Parquet file (keyed by its size and change time) or a cache folder that cannot be named."""
    from containerlib.tables.files import is_parquet
    from pipeline.core.errors import ConfigError
    from pipeline.core.files import user_cache_dir

    if key is None or any(is_parquet(path) for path in files):
        return None
    try:
        return user_cache_dir() / "schemas" / f"{key}.json"
    except ConfigError:  # a file in the cache folder's place: the work dir's entry is enough
        return None


def decision_key(
    files: list[Path], base: Path, rows: int, values: Mapping[str, Any], given: set[str], pipeline_prefix: str
) -> str | None:
    """The SHA-256 naming a decision's inputs, or None when a file cannot be read (deciding says why)."""
    from containerlib.tables.files import is_gzip, is_parquet
    from containerlib.tables.sample import read_lines

    digest = hashlib.sha256()
    head = {
        "format": ENTRY_FORMAT,
        "code": code_digest(),
        "libraries": library_versions(),
        "source": base.resolve().name,
        "rows": rows,
        "values": {str(name): str(value) for name, value in values.items()},
        "value_types": {str(name): type(value).__name__ for name, value in values.items()},
        "given": sorted(given),
        "prefix": pipeline_prefix,
    }
    digest.update(json.dumps(head, sort_keys=True).encode())
    for path in files:
        name = path.relative_to(base).as_posix() if path.is_relative_to(base) else str(path)
        try:
            if is_parquet(path):  # its size and change time, as the data version has it: reading it whole would
                # take time and memory growing with the data on every run (a Parquet file can hold gigabytes)
                stat = path.stat()
                data = f"{stat.st_size}:{stat.st_mtime_ns}".encode()
            else:
                import gzip

                opener: Any = gzip.open if is_gzip(path) else open
                with opener(path, "rb") as handle:
                    data = read_lines(handle, rows + 1)
        except (OSError, EOFError):
            return None
        digest.update(json.dumps([name, len(data)]).encode())
        digest.update(data)
    return digest.hexdigest()


@cache
def code_digest() -> str:
    """The SHA-256 of the source files of :data:`CODE_PACKAGES`: each package's ``source_digest``, the one the
    definition cache keys its entries by."""
    from pipeline.definition.cache import source_digest

    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for package in CODE_PACKAGES:
        digest.update(f"{package}\0{source_digest(root / package)}".encode())
    return digest.hexdigest()


def library_versions() -> dict[str, str]:
    """The installed version of each of :data:`LIBRARIES` (without importing them)."""
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for library in LIBRARIES:
        try:
            versions[library] = version(library)
        except PackageNotFoundError:
            versions[library] = ""
    return versions


def _read(entry: Path) -> Inferred | None:
    """The decision kept in ``entry``, or None when there is none or it is not whole (then decided again)."""
    try:
        kept = json.loads(entry.read_text(encoding="utf-8"))
        body = kept["body"].encode("utf-8")
        if hashlib.sha256(body).hexdigest() != kept["body_sha256"]:
            return None
        return Inferred(kept["uri"], body, dict(kept["parameters"]), list(kept["notes"]), dict(kept["sample"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _write(entry: Path, decided: Inferred) -> None:
    """Keep ``decided`` in ``entry``; a folder that cannot be written keeps nothing (the run goes on)."""
    from pipeline.core.files import write_text_atomically

    document = {
        "uri": decided.uri,
        "body": decided.body.decode("utf-8"),
        "body_sha256": hashlib.sha256(decided.body).hexdigest(),
        "parameters": decided.parameters,
        "notes": decided.notes,
        "sample": decided.sample,
    }
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(entry, json.dumps(document, indent=1) + "\n")
    except OSError:
        pass
