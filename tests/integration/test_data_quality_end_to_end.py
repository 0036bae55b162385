"""The data-quality check end to end, locally: the real definition, Preprocess's baseline sample, the analyzer's job,
the registry. A first run calculates and registers the baseline (the shared finished run, a copy of its work dir);
once approved, a scheduled-style run on the same table broken as feeds break (a column gone constant, a category
replaced) fails at DataQuality naming both and registers nothing; the unchanged table passes and its version carries
the approved baseline forward."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from support import drift_table
from support.finished_run import FinishedRun
from support.settings import FAST

from pipeline import cli
from pipeline.api import run_local
from pipeline.api.execution import LocalExecution
from pipeline.cli.render.summary import print_summary, summarise
from pipeline.local.executions import ExecutionRecord, ExecutionStore
from pipeline.local.registry import LocalRegistry
from pipeline.local.s3 import LocalS3
from pipeline.local.workdir import Workdir


def execute_as_run(workdir: Path, frame: Any) -> ExecutionRecord:
    """As ``llpipe run`` with no data-quality switches (as a schedule starts it): the schema inferred from the data,
    at the shared run's settings, so the unchanged table's Preprocess is the shared run's."""
    execution = run_local(frame, drift_table.LABEL, "binary_classifier", workdir=workdir, progress=False, **FAST)
    return ExecutionStore(workdir / "executions").load(execution.id)


def read(s3: LocalS3, uri: str) -> Any:
    return json.loads(s3.path(uri).read_text())


def test_a_broken_feed_fails_the_check_and_registers_nothing_an_unchanged_one_passes(
    finished_run: FinishedRun, tmp_path: Path, image_environment: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    workdir = finished_run.copy_to(tmp_path / "work")
    s3 = LocalS3(Workdir(workdir).s3)
    registry = LocalRegistry(Workdir(workdir).registry_db)

    # 1. nothing approved yet (the shared run, the first on this table): the check is skipped, this run's baseline
    # calculated and registered for drift checks
    first = ExecutionStore(workdir / "executions").load(finished_run.execution_id)
    assert first.status == "Succeeded", first.failure_reason
    assert first.parameters["SkipDataQualityCheck"] is True and first.parameters["RegisterNewDataQualityBaseline"]
    assert any("no approved version" in note for note in first.steps["DataQuality"].notes)
    # before: "registered as the one to check later runs against", also on runs the gate then failed
    assert any("to the registry, if it passes the gate" in note for note in first.steps["DataQuality"].notes)
    (version_1,) = registry.list_packages()
    check = first.steps["DataQuality"].properties
    calculated = {
        "Statistics": check["CalculatedBaselineStatistics"],
        "Constraints": check["CalculatedBaselineConstraints"],
    }
    assert version_1.data_quality == version_1.drift_check_data_quality == calculated
    statistics = read(s3, calculated["Statistics"])
    # the raw columns a served request carries, in the schema's order: no label
    assert [feature["name"] for feature in statistics["features"]] == ["tenure", "minutes", "calls", "plan"]
    assert [feature["inferred_type"] for feature in statistics["features"]] == [
        "Integral",
        "Fractional",
        "Integral",
        "String",
    ]
    assert statistics["dataset"]["item_count"] == 600
    constraints = read(s3, calculated["Constraints"])
    assert constraints["features"][3]["string_constraints"] == {"domains": ["basic", "plus", "premium"]}
    assert cli.main(["models", "approve", "1", "--workdir", str(workdir)]) == 0

    # 2. the same table, broken, run as a schedule runs it: fails at DataQuality naming both, nothing trained
    second = execute_as_run(workdir, drift_table.drifted(finished_run.frame))
    assert second.status == "Failed"
    assert second.steps["DataQuality"].status == "Failed"
    reason = second.steps["DataQuality"].failure_reason
    assert f"against the baseline of {version_1.arn}" in reason
    assert "baseline_drift_check on 'minutes'" in reason and "categorical_values_check on 'plan'" in reason
    assert "'legacy'" in reason
    assert second.steps["Train"].status == "Skipped" and second.steps["Register"].status == "Skipped"
    assert [package.version for package in registry.list_packages()] == [1]
    execution = LocalExecution(second, s3)
    found = {(item["feature_name"], item["constraint_check_type"]) for item in execution.data_quality["violations"]}
    assert found == {
        ("minutes", "baseline_drift_check"),
        ("plan", "categorical_values_check"),
        ("plan", "baseline_drift_check"),
    }
    assert [path.name for path in execution.plots] == ["data-quality-minutes.png", "data-quality-plan.png"]
    console = Console(record=True, width=200)
    print_summary(summarise(execution), console)
    shown = console.export_text()
    assert (
        "Data-quality violations" in shown and "3 violation(s) against" in shown and "categorical_values_check" in shown
    )

    # 3. the table as it was: the check passes, the new version carries the approved baseline forward
    third = execute_as_run(workdir, finished_run.frame)
    assert third.status == "Succeeded", third.failure_reason
    assert "SkipDataQualityCheck" in third.parameters and third.parameters["SkipDataQualityCheck"] is False
    assert third.steps["Preprocess"].cache_hit_source == first.id  # the same data version as the first run
    assert read(s3, third.steps["DataQuality"].properties["ViolationReport"]) == {"violations": []}
    version_2 = registry.describe(f"{version_1.group}/2")
    assert version_2.drift_check_data_quality == version_1.drift_check_data_quality
    check = third.steps["DataQuality"].properties
    assert version_2.data_quality == {
        "Statistics": check["CalculatedBaselineStatistics"],
        "Constraints": check["CalculatedBaselineConstraints"],
    }
