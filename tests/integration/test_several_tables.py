"""Issue 42, several tables in one work dir: every run registered into one model package group, so once one table's
version was approved every other table's run failed at DataQuality, after Preprocess, with a violation per column
(34 on the bundled example against a churn table) and no word of the cause or the way out. Now, in the default
group, such a run runs in a group of the table's own (a name derived from its columns and label) and says so; in a
group the user chose it is refused before anything runs, naming the columns and the way out (a group of the table's
own, or the switches that make it the group's new model); `llpipe models list` says what each version was trained on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from support import drift_table
from support.finished_run import FinishedRun
from support.settings import FAST

from pipeline import cli
from pipeline.api._shared import local_source
from pipeline.core.errors import UsageError
from pipeline.definition.config import load_config
from pipeline.local.example_data import EXAMPLE_LABEL_COLUMN, write_example_data
from pipeline.local.registry import LocalRegistry
from pipeline.local.runner import build_local_run
from pipeline.local.s3 import LocalS3
from pipeline.local.table_groups import table_group_name
from pipeline.local.workdir import Workdir

GROUP = "linear-learner-models"  # the default group
CHOSEN = "clinic-models"  # a group the user chose
FEATURES = ["tenure", "minutes", "calls", "plan"]


def approve_version_of(workdir: Workdir, columns: list[str], group: str = GROUP) -> None:
    """An approved version of ``group`` whose data-quality baseline describes ``columns`` (as DataQuality registers
    it), without a run."""
    s3 = LocalS3(workdir.s3)
    constraints = "s3://llpipe-local/linear-learner-pipeline/e0/dataquality/constraints.json"
    s3.put_bytes(constraints, json.dumps({"version": 0.0, "features": [{"name": name} for name in columns]}).encode())
    sources = {"Statistics": {"S3Uri": constraints}, "Constraints": {"S3Uri": constraints}}
    request = {
        "ModelPackageGroupName": group,
        "ModelApprovalStatus": "Approved",
        "InferenceSpecification": {"Containers": [{"Image": "linear-learner:1", "ModelDataUrl": "s3://b/m.tar.gz"}]},
        "ModelMetrics": {"ModelDataQuality": sources},
        "DriftCheckBaselines": {"ModelDataQuality": sources},
    }
    LocalRegistry(workdir.registry_db).register(request, region="us-east-1", account="111122223333")


def prepare(workdir: Workdir, frame: Any, overrides: dict[str, str] | None = None, **settings: Any) -> Any:
    """The run decided up to the point it would start (schema inferred, checks done), nothing executed."""
    source = local_source(frame, drift_table.LABEL, "binary_classifier", workdir)
    local_run = build_local_run(load_config(settings, env={}), workdir)
    return local_run.prepare(source, overrides or {}, 10_000)


@pytest.mark.parametrize(
    ("approved", "missing", "new"),
    [
        (FEATURES + ["region"], "1 column(s) (region)", "no column"),  # a column less than the approved version
        (FEATURES[:3], "no column", "1 column(s) (plan)"),  # a column more
        ([f"x{i}" for i in range(8)], "8 column(s) (x0, x1, x2, x3, x4 and 3 more)", "4 column(s) (tenure, minutes"),
    ],
)
def test_other_columns_than_the_chosen_groups_approved_version_are_refused_before_anything_runs(
    tmp_path: Path, approved: list[str], missing: str, new: str
) -> None:
    workdir = Workdir.at(tmp_path)
    approve_version_of(workdir, approved, CHOSEN)
    with pytest.raises(UsageError) as refused:
        prepare(workdir, drift_table.table(rows=200), model_package_group=CHOSEN)
    message = str(refused.value)
    own = table_group_name(CHOSEN, FEATURES, drift_table.LABEL)
    assert message.startswith(
        f"the data's feature columns differ from those of version 1 of model package group {CHOSEN}, the approved "
        f"version its DataQuality step checks this run against (the data lacks {missing}"
    )
    assert f"has {new}" in message
    assert (
        f"each table needs a model package group of its own; run this table in its own group with "
        f"model package group {own} (or the config setting model_package_group), or make it this group's "
        "new model with parameter SkipDataQualityCheck=true and parameter RegisterNewDataQualityBaseline=true"
    ) in message
    assert not workdir.executions.exists() and not list(LocalS3(workdir.s3).path("s3://llpipe-local").glob("*/input"))


@pytest.mark.parametrize(
    ("overrides", "settings"),
    [
        ({}, {"model_package_group": "churn"}),  # a group of its own
        ({"SkipDataQualityCheck": "true", "RegisterNewDataQualityBaseline": "true"}, {"model_package_group": CHOSEN}),
    ],
)
def test_either_way_out_is_taken(tmp_path: Path, overrides: dict[str, str], settings: dict[str, str]) -> None:
    workdir = Workdir.at(tmp_path)
    approve_version_of(workdir, ["mean_radius", "mean_texture"], CHOSEN)
    prepared = prepare(workdir, drift_table.table(rows=200), overrides, **settings)
    assert prepared.values["SkipDataQualityCheck"] in (True, "true")
    assert prepared.run.config.model_package_group == settings["model_package_group"]  # where it was asked to be


def test_in_the_default_group_another_table_runs_in_a_group_of_its_own_and_says_so(tmp_path: Path) -> None:
    workdir = Workdir.at(tmp_path)
    approve_version_of(workdir, ["mean_radius", "mean_texture"])
    prepared = prepare(workdir, drift_table.table(rows=200))
    own = table_group_name(GROUP, FEATURES, drift_table.LABEL)
    assert prepared.run.config.model_package_group == own
    definition = prepared.run.definition_json  # DataQuality, Evaluate's champion and Register name the group
    assert definition.count(f'"{own}"') == 3 and f'"{GROUP}"' not in definition
    assert prepared.values["SkipDataQualityCheck"] in (True, "true")  # its group's first run: a new baseline
    assert prepared.warnings[0] == (
        f"this table's feature columns differ from those of the approved version of model package group {GROUP}: it "
        f"runs in a group of its own, {own}; give that group to the commands that read the registry (models, "
        "deploy, serve, monitor), or choose one with the config setting model_package_group"
    )


def test_the_same_columns_in_another_order_are_the_same_table(tmp_path: Path) -> None:
    workdir = Workdir.at(tmp_path)
    approve_version_of(workdir, list(reversed(FEATURES)))
    prepared = prepare(workdir, drift_table.table(rows=200))
    assert prepared.values["SkipDataQualityCheck"] in (False, "false")  # checked against it, as before


def test_the_group_name_of_a_table_is_stable_short_and_valid() -> None:
    name = table_group_name(GROUP, FEATURES, "churned")
    assert name == table_group_name(GROUP, FEATURES, "churned") and name.startswith(f"{GROUP}-")
    assert len(name) == len(GROUP) + 9
    assert table_group_name(GROUP, FEATURES, "other") != name
    assert table_group_name(GROUP, list(reversed(FEATURES)), "churned") != name  # the order is the schema's
    assert len(table_group_name("g" * 63, FEATURES, "churned")) == 63


def test_two_tables_in_one_work_dir_end_to_end(
    finished_run: FinishedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's case, with the tables the other way round: a churn table's version approved (the shared finished
    run, in a copy of its work dir), then the bundled example: before, the second table failed at DataQuality with
    a violation per column; now it runs in a group of its own and says so; `models list --all-groups` says what each
    version was trained on."""
    work = finished_run.copy_to(tmp_path / "work")
    assert cli.main(["models", "approve", "1", "--workdir", str(work)]) == 0
    [example, *_] = write_example_data(tmp_path / "example")
    example_columns = [name for name in pd.read_csv(example, nrows=0).columns if name != EXAMPLE_LABEL_COLUMN]
    argv = ["run", "--workdir", str(work), "--quiet", *[f"--param={k}={v}" for k, v in FAST.items()]]
    capsys.readouterr()
    assert cli.main(argv) == 0
    own = table_group_name(GROUP, example_columns, EXAMPLE_LABEL_COLUMN)
    assert f"it runs in a group of its own, {own}; give that group to the commands" in capsys.readouterr().err
    assert cli.main(["models", "list", "--all-groups", "--json", "--workdir", str(work)]) == 0
    listed = {view["group"]: view for view in json.loads(capsys.readouterr().out)}
    assert sorted(listed) == sorted([GROUP, own])
    assert listed[GROUP]["trained_on"]["columns"] == FEATURES and listed[GROUP]["trained_on"]["label"] == "churned"
    assert listed[own]["trained_on"]["columns"][:2] == ["mean_radius", "mean_texture"]
    assert len(listed[own]["trained_on"]["columns"]) == 30 and listed[own]["trained_on"]["label"] == "label"
    assert listed[own]["trained_on"]["data"].startswith(
        "s3://llpipe-local/linear-learner-pipeline/input/breast-cancer-"
    )
    assert cli.main(["models", "list", "--all-groups", "--workdir", str(work)]) == 0
    table = capsys.readouterr().out
    assert "4 columns, label churned" in table and "30 columns, label label" in table
