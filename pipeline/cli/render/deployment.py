"""Deployments on the terminal: progress lines, what a deployment did, and what each stage serves."""

from __future__ import annotations

import sys
from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any

from pipeline.core.deployment import Live, Outcome
from pipeline.core.safe_text import printable, redact


def progress_printer(to_stderr: bool = False) -> Any:
    """A progress callback printing ``HH:MM:SS message`` lines (UTC), flushed at once (CodeBuild shows them live);
    on stderr when stdout carries JSON."""

    def show(message: str) -> None:
        stream = sys.stderr if to_stderr else sys.stdout
        print(f"{datetime.now(timezone.utc):%H:%M:%S} {message}", file=stream, flush=True)

    return show


def outcome_json(outcome: Outcome) -> dict[str, Any]:
    """Everything the outcome holds, JSON-ready (times as ISO 8601)."""
    values = asdict(outcome)
    values["exit_code"] = outcome.exit_code
    return _iso(values)


def live_json(live: Live | None, stage: str, endpoint: str) -> dict[str, Any]:
    if live is None:
        return {"stage": stage, "endpoint": endpoint, "status": None}
    return _iso({**asdict(live), "smoke_test_passed": live.passed})


def _iso(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _iso(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_iso(item) for item in value]
    return value.isoformat() if isinstance(value, datetime) else value


def print_outcome(outcome: Outcome) -> None:
    """The result in a line, then the checks of the smoke test, what serves now, and the version's provenance."""
    done = {"deployed": "deployed", "unchanged": "unchanged (no-op)", "skipped": "skipped (older)"}
    mark = done.get(outcome.status, f"FAILED ({outcome.status})")
    version, smoke = outcome.version, outcome.smoke
    print(f"{outcome.stage}: {mark}: version {version.version} of {version.group} on {outcome.endpoint}")
    if smoke is None:
        print(f"  {printable(redact(outcome.message), newlines=True)}")
    else:
        if smoke.quality is not None:
            q = smoke.quality
            verdict = "ok" if q.passed else "worse: refused"
            measured = f"{q.metric} {q.candidate:.4f} vs live {q.live:.4f} (tolerance {q.tolerance:g})"
            print(f"  quality      {measured}: {verdict}")
        for note in smoke.notes:
            print(f"  note         {note}")
        if smoke.error:
            error = printable(redact(smoke.error))
            print(f"  smoke test   {smoke.rows} rows: the endpoint answered with an error: {error}")
        elif smoke.consistency is not None:
            c = smoke.consistency
            found = "as batch transform" if c.passed else f"{c.mismatch_count} differ: {'; '.join(c.mismatches)}"
            print(f"  smoke test   {smoke.rows} rows answered {found}")
        if outcome.restored:
            print(f"  now          {outcome.restored}")
        elif outcome.status == "deployed":
            print(f"  now          {outcome.endpoint} serves version {version.version}; the pass is recorded")
        elif outcome.status == "refused" and outcome.previous is not None:
            print(f"  now          {outcome.endpoint} serves version {outcome.previous.version}, unchanged")
    print(f"  model package {version.package_arn}")
    if version.execution_arn:
        print(f"  trained by    {version.execution_arn}")
    if outcome.previous is not None and outcome.previous.package_arn != version.package_arn:
        print(f"  previous      version {outcome.previous.version} ({outcome.previous.handle})")


# Below this width the table cut the endpoint's name and URL to "linear-l…" / "http://1…" (an 80-column terminal,
# or a pipe, which rich takes as 80 columns): each stage is then a block of lines.
ENDPOINTS_TABLE_MIN_WIDTH = 140


def endpoints_lines(rows: list[tuple[str, str, Live | None]]) -> list[str]:
    """Each stage as lines: stage, endpoint, status and version; its URL, the execution and since when; the smoke
    test. Nothing is cut: long values wrap."""
    lines = ["Endpoints"]
    for stage, endpoint, live in rows:
        if live is None:
            lines.append(f"{stage}  {endpoint}  not deployed")
            continue
        status = live.status + (f": {live.failure_reason}" if live.failure_reason else "")
        version = "" if live.version is None else f"  version {live.version}"
        lines.append(f"{stage}  {endpoint}  {status}{version}")
        if live.url:
            lines.append(f"  url: {live.url}")
        if live.execution_arn:
            since = f", since {live.since:%Y-%m-%d %H:%M:%S} UTC" if live.since else ""
            lines.append(f"  execution: {live.execution_arn.rsplit('/', 1)[-1]}{since}")
        lines.append(f"  smoke test: {live.smoke_test or 'not passed'}")
    return lines


def endpoints_table(rows: list[tuple[str, str, Live | None]]) -> Any:
    """A rich table: stage, endpoint, status, version, trained by, since, smoke test."""
    from rich.table import Table

    table = Table(title="Endpoints", title_justify="left")
    for column in ("stage", "endpoint", "status", "version", "execution", "since (UTC)", "smoke test"):
        table.add_column(column)
    for stage, endpoint, live in rows:
        if live is None:
            table.add_row(stage, endpoint, "not deployed", "", "", "", "")
            continue
        status = live.status + (f": {live.failure_reason}" if live.failure_reason else "")
        table.add_row(
            stage,
            f"{endpoint}\n{live.url}" if live.url else endpoint,
            status,
            "" if live.version is None else str(live.version),
            (live.execution_arn or "").rsplit("/", 1)[-1],
            f"{live.since:%Y-%m-%d %H:%M:%S}" if live.since else "",
            live.smoke_test or "not passed",
        )
    return table
