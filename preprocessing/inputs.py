"""The job's inputs: the data files under the input folder and how messages name them, and the decided schema."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from containerlib.hosts import Host
from containerlib.schema_document import document_problem
from containerlib.tables.files import is_data_name, visible_files
from preprocessing import PreprocessError


@dataclass(frozen=True)
class InputNames:
    """How messages name the input files: by where they came from (``--input-source``, the input's S3 URI), else by
    their path here. A user knows s3://bucket/in/d.csv, not /opt/ml/processing/input/data/d.csv.

    The inverse of SageMaker's S3Prefix download: the object under the prefix lands at its key after the prefix (a
    prefix that is a whole key lands at its last part)."""

    input_dir: Path
    source: str | None = None

    def __call__(self, path: Path) -> str:
        if not self.source or not path.is_relative_to(self.input_dir):
            return str(path)
        relative = path.relative_to(self.input_dir).as_posix()
        if relative == "." or self.source.endswith("/" + relative):
            return self.source
        return self.source + ("" if self.source.endswith("/") else "/") + relative


def list_input_files(input_dir: Path, host: Host, name: str | None = None) -> list[Path]:
    """Every data file under ``input_dir`` (CSV, optionally gzip, or Parquet: the rule of
    :mod:`containerlib.tables.files`, hidden and ``_`` files and folders skipped), sorted. ``name`` is the folder's
    name in messages (default: its path)."""
    name = name or str(input_dir)
    if not input_dir.is_dir():
        raise PreprocessError(f"input dir {input_dir} does not exist or is not a folder")
    candidates = visible_files(input_dir)
    files = [path for path in candidates if is_data_name(path.name)]
    ignored = [path for path in candidates if not is_data_name(path.name)]
    if ignored:
        print(
            f"[{host.name}] ignoring {len(ignored)} file(s) that are not CSV or Parquet, e.g. {ignored[0]}", flush=True
        )
    if not files:
        if host.count > 1:
            raise PreprocessError(
                f"host {host.name} ({host.index + 1} of {host.count}) received no CSV or Parquet files under "
                f"{name}: there are more processing instances than input objects (with ShardedByS3Key each "
                "instance needs at least one object); use fewer instances or split the input into more files"
            )
        raise PreprocessError(f"no CSV (.csv, .csv.gz) or Parquet (.parquet, .pq) files under {name}")
    return files


def load_decided(path: Path | None) -> dict[str, Any]:
    """The schema the client decided (``--schema``: the JSON file, or a folder holding exactly one); {} without.

    Keys used: ``feature_columns``, ``categorical_columns``, ``label_column``, ``label_values``, ``num_classes``,
    ``id_column``; a missing or null key means "not decided" (the built-in default schema decides nothing)."""
    if path is None:
        return {}
    if path.is_dir():
        found = sorted(p for p in path.rglob("*.json") if p.is_file())
        if len(found) != 1:
            raise PreprocessError(
                f"--schema (pipeline parameter SchemaUrl) {path}: expected exactly one .json file in this folder, "
                f"found {len(found)}"
            )
        path = found[0]
    try:
        decided = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise PreprocessError(
            f"--schema (pipeline parameter SchemaUrl) {path}: not a readable JSON file ({error})"
        ) from error
    problem = document_problem(decided)
    if problem is not None:
        raise PreprocessError(f"--schema (pipeline parameter SchemaUrl) {path}: {problem}")
    return decided
