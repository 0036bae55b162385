"""One analysis: the data set profiled (two passes), ``statistics.json`` and ``constraints.json`` written and, given
a baseline, ``constraint_violations.json``; each file written whole (a temporary name, then renamed)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataquality import AnalyzerError
from dataquality.constraints import suggest_constraints
from dataquality.dataset import chunks
from dataquality.jackson import dumps
from dataquality.profile import ColumnProfile
from dataquality.settings import CONSTRAINTS, STATISTICS, VIOLATIONS, Settings
from dataquality.statistics import statistics_document
from dataquality.values import classify
from dataquality.violations import check


@dataclass(frozen=True)
class Outcome:
    statistics: dict[str, Any]
    constraints: dict[str, Any]
    violations: list[dict[str, str]] | None  # None: no baseline given


def read_json(path: Path, what: str) -> dict[str, Any]:
    """A baseline file (or the one file of that name in a folder)."""
    if path.is_dir():
        path = path / (CONSTRAINTS if what == "baseline_constraints" else STATISTICS)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise AnalyzerError(f"{what} {path}: cannot be read as JSON ({error})") from None
    if not isinstance(document, dict) or not isinstance(document.get("features"), list):
        raise AnalyzerError(f"{what} {path}: expected an object with a features list")
    return document


def analyze(settings: Settings) -> Outcome:
    baseline = reference = None
    if settings.baseline_constraints:
        baseline = read_json(settings.baseline_constraints, "baseline_constraints")
    if settings.baseline_statistics:
        reference = read_json(settings.baseline_statistics, "baseline_statistics")
    columns = [feature["name"] for feature in (baseline or reference or {}).get("features", []) if "name" in feature]

    def read() -> Any:
        return chunks(settings.dataset_source, settings.dataset_format, columns, settings.start_time, settings.end_time)

    profiles: dict[str, ColumnProfile] = {}
    rows = 0
    for _, frame in read():  # first pass: each column's types, hence its inferred type
        for name in frame.columns:
            if str(name) not in profiles:
                profiles[str(name)] = ColumnProfile(str(name))
                profiles[str(name)].count_missing(rows)  # the rows of earlier files without it
        for name, profile in profiles.items():
            if name in frame.columns:
                profile.count_types(classify(frame[name].reset_index(drop=True)))
            else:
                profile.count_missing(len(frame))
        rows += len(frame)
    if not rows:
        window = f" between {settings.start_time} and {settings.end_time}" if settings.start_time else ""
        raise AnalyzerError(f"no records in {settings.dataset_source}{window}: nothing to analyze")
    for feature in (baseline or {}).get("features", []):
        domain = (feature.get("string_constraints") or {}).get("domains")
        if feature.get("name") in profiles and domain:
            profiles[feature["name"]].domain = frozenset(str(value) for value in domain)
    for _, frame in read():  # second pass: the statistics of each column's type
        for name in frame.columns:
            profiles[str(name)].accumulate(classify(frame[name].reset_index(drop=True)))
    statistics = statistics_document(profiles.values(), rows)
    constraints = suggest_constraints(statistics)
    violations = check(profiles, baseline, reference, settings.categorical_drift_method) if baseline else None
    settings.output_path.mkdir(parents=True, exist_ok=True)
    _write(settings.output_path / STATISTICS, statistics)
    _write(settings.output_path / CONSTRAINTS, constraints)
    if violations is not None:
        _write(settings.output_path / VIOLATIONS, {"violations": violations})
    return Outcome(statistics, constraints, violations)


def _write(path: Path, document: dict[str, Any]) -> None:
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(dumps(document), encoding="utf-8")
    os.replace(partial, path)
