"""The analyzer's settings: the environment variables a Model Monitor job (or a QualityCheck step) gives it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from dataquality import AnalyzerError
from dataquality.capture import parse_time
from dataquality.dataset import DatasetFormat

STATISTICS = "statistics.json"
CONSTRAINTS = "constraints.json"
VIOLATIONS = "constraint_violations.json"
UNSUPPORTED = ("record_preprocessor_script", "post_analytics_processor_script")


@dataclass(frozen=True)
class Settings:
    dataset_source: Path
    dataset_format: DatasetFormat
    output_path: Path
    baseline_constraints: Path | None = None
    baseline_statistics: Path | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    categorical_drift_method: str | None = None
    publish_cloudwatch_metrics: bool = False

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> Settings:
        def required(name: str) -> str:
            value = environ.get(name, "").strip()
            if not value:
                raise AnalyzerError(f"the environment variable {name} is required")
            return value

        def optional(name: str) -> str | None:
            return environ.get(name, "").strip() or None

        for name in UNSUPPORTED:
            if optional(name):
                raise AnalyzerError(f"{name} is not supported by the local analyzer")
        start, end = optional("start_time"), optional("end_time")
        constraints, statistics = optional("baseline_constraints"), optional("baseline_statistics")
        settings = cls(
            dataset_source=Path(required("dataset_source")),
            dataset_format=DatasetFormat.parse(required("dataset_format")),
            output_path=Path(required("output_path")),
            baseline_constraints=Path(constraints) if constraints else None,
            baseline_statistics=Path(statistics) if statistics else None,
            start_time=parse_time(start, "start_time") if start else None,
            end_time=parse_time(end, "end_time") if end else None,
            categorical_drift_method=optional("categorical_drift_method"),
            publish_cloudwatch_metrics=(optional("publish_cloudwatch_metrics") or "Disabled") == "Enabled",
        )
        if settings.start_time and settings.end_time and settings.start_time >= settings.end_time:
            raise AnalyzerError(f"start_time {start} is not before end_time {end}")
        return settings
