"""Data quality of served traffic: ``monitor_local`` checks an endpoint's captured requests of a time window, each
against the registered baseline of the version that served it, locally (:mod:`pipeline.local.monitor`), and reports
per version as an execution's data-quality check does (:func:`pipeline.api.data_quality.data_quality_view`), with a
plot per drifted feature.

    from pipeline.api.monitoring import monitor_local
    report = monitor_local("llpipe-local", start="2024-01-19T18:00:00Z", end="2024-01-19T19:00:00Z")
    report.violations, [(part.model_package_arn, part.requests, part.plots) for part in report.parts]
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.core.errors import UsageError
from pipeline.core.files import write_text_atomically

if TYPE_CHECKING:
    from pipeline.definition.config import PipelineConfig
    from pipeline.local.environments import ImageEnvironments

__all__ = ["TrafficReport", "VersionReport", "monitor_local", "parse_time", "window"]


@dataclass(frozen=True)
class VersionReport:
    """One monitoring job's outcome: the version whose requests it checked against that version's baseline, how
    many, the view, the plots, the record."""

    id: str
    model_package_arn: str
    requests: int | None  # None: every captured request of the window, checked against a version named by the caller
    view: dict[str, Any]
    record: Path
    plots: list[Path] = field(default_factory=list)
    unseen_categories: dict[str, int] = field(default_factory=dict)  # rows answered with a never-seen value
    sampling_percentage: float | list[float] | None = None  # data capture's; None when its records do not say
    note: str = ""  # that the figures are from a sample, and of what share of the requests

    @property
    def violations(self) -> list[dict[str, str]]:
        return list(self.view.get("violations") or [])

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "model_package_arn": self.model_package_arn,
            "requests": self.requests,
            "unseen_categories": self.unseen_categories,
            "data_quality": self.view,
            "record": str(self.record),
            "plots": [str(path) for path in self.plots],
            "sampling_percentage": self.sampling_percentage,
            "note": self.note,
        }


@dataclass(frozen=True)
class TrafficReport:
    """A window of an endpoint's traffic checked: one part per model package version that served it."""

    endpoint: str
    variant: str
    start: datetime
    end: datetime
    parts: list[VersionReport]
    notes: list[str] = field(default_factory=list)  # parts skipped, and why

    @property
    def violations(self) -> list[dict[str, str]]:
        return [item for part in self.parts for item in part.violations]

    def to_json(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "variant": self.variant,
            "start_time": self.start.isoformat(),
            "end_time": self.end.isoformat(),
            "parts": [part.to_json() for part in self.parts],
            "notes": self.notes,
        }


def parse_time(text: str | datetime, what: str) -> datetime:
    """A UTC time from ISO 8601 text (``2024-01-19T18:00:00Z``; no zone means UTC); ``what``: the option it came
    from (``start``, ``end``), which an error names."""
    if isinstance(text, datetime):
        moment = text
    else:
        try:
            moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            expected = "an ISO 8601 time such as 2024-01-19T18:00:00Z"
            raise UsageError(f"not {expected}", option=what, value=text, expected=expected) from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


def window(start: str | datetime | None, end: str | datetime | None) -> tuple[datetime, datetime]:
    """``[start, end)``; by default the hour before now (what an hourly schedule analyses)."""
    # capture stamps inferenceTime to the second: the default end is the next whole second, so a request answered
    # in this very second (its time truncated to it) is inside [start, end), not left out until the next run
    now = datetime.now(timezone.utc)
    finish = parse_time(end, "end") if end is not None else now.replace(microsecond=0) + timedelta(seconds=1)
    begin = parse_time(start, "start") if start is not None else finish - timedelta(hours=1)
    return begin, finish


def monitor_local(
    endpoint: str,
    *,
    start: str | datetime | None = None,
    end: str | datetime | None = None,
    variant: str = "AllTraffic",
    model_package: str | None = None,
    workdir: str | Path | None = None,
    config: PipelineConfig | None = None,
    environments: ImageEnvironments | None = None,
) -> TrafficReport:
    """Check ``endpoint``'s captured requests in ``[start, end)``, each against the baseline of the version that served
    it (``model_package``: all against that version's); the report is also written under each part's
    ``<workdir>/monitoring/<id>/``."""
    from pipeline.api._shared import DEFAULT_WORKDIR, load_settings
    from pipeline.api.data_quality import data_quality_view
    from pipeline.api.drift_plots import render_drift_plots
    from pipeline.local.monitor import monitor_traffic
    from pipeline.local.s3 import LocalS3
    from pipeline.local.workdir import Workdir

    folder = Workdir.at(Path(workdir if workdir is not None else DEFAULT_WORKDIR))
    config = config or load_settings({})
    begin, finish = window(start, end)
    notes: list[str] = []
    runs = monitor_traffic(
        folder, config, endpoint, begin, finish, variant, model_package, environments, on_skip=notes.append
    )
    s3 = LocalS3(folder.s3)

    def read(uri: str) -> Any:
        path = s3.path(uri)
        return json.loads(path.read_text()) if path.is_file() else None

    parts = []
    for run in runs:
        view = data_quality_view(run.properties, read) or {}
        plots: list[Path] = []
        if view.get("violations"):
            current, baseline = read(view["statistics"]), read(view["checked_statistics"])
            plots = render_drift_plots(current or {}, baseline or {}, view["violations"], run.folder / "plots")
        parts.append(
            VersionReport(
                run.id,
                run.package_arn,
                run.requests,
                view,
                run.folder,
                plots,
                run.unseen_categories,
                run.sampling_percentage,
                run.note,
            )
        )
    report = TrafficReport(endpoint, variant, begin, finish, parts, notes)
    for part in parts:
        write_text_atomically(part.record / "report.json", json.dumps(report.to_json(), indent=2) + "\n")
    return report
