"""A local run is prepared once: one plan, one set of job runners, one resolution of the parameters, one check of
the hyperparameters, and each data file pre-scanned once (and sampled once for the schema), then executed."""

from __future__ import annotations

import functools
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pipeline.api._shared import execute_local, local_source
from pipeline.api.execution import LocalExecution
from pipeline.definition import schema
from pipeline.definition.config import load_config
from pipeline.linear_learner import hyperparameters
from pipeline.local import interpreter, preflight, runner
from pipeline.local.workdir import Workdir


def three_files(folder: Path) -> list[Path]:
    """A binary table of 5 features in a CSV, a gzipped CSV and a Parquet file."""
    rng = np.random.default_rng(7)
    frame = pd.DataFrame(rng.normal(size=(240, 5)), columns=[f"x{i}" for i in range(5)])
    frame["y"] = (frame["x0"] + 0.5 * frame["x1"] > 0).astype(int)
    folder.mkdir()
    paths = [folder / "a.csv", folder / "b.csv.gz", folder / "c.parquet"]
    frame.iloc[0::3].to_csv(paths[0], index=False)
    frame.iloc[1::3].to_csv(paths[1], index=False, compression="gzip")
    frame.iloc[2::3].to_parquet(paths[2], index=False)
    return paths


def counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, calls: list[tuple]) -> None:
    """Replace ``module.name`` by a wrapper that records each call's positional arguments."""
    original = getattr(module, name)

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)


def test_a_local_run_prepares_once_and_pre_scans_each_data_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, image_environment: Any
) -> None:
    files = three_files(tmp_path / "data")
    calls: dict[str, list[tuple]] = {name: [] for name in ("scan", "sample", "plan", "runners", "resolve", "check")}
    counting(monkeypatch, preflight, "scan_files", calls["scan"])  # the pre-scan: it reads every file
    counting(monkeypatch, schema, "sample_local", calls["sample"])  # the schema's sample: the first rows of each
    counting(monkeypatch, runner, "load_definition", calls["plan"])
    counting(monkeypatch, runner, "local_runners", calls["runners"])
    counting(monkeypatch, interpreter, "resolve_parameters", calls["resolve"])
    counting(monkeypatch, hyperparameters, "parse_hyperparameters", calls["check"])  # the trainer's own, in-process
    workdir = Workdir.at(tmp_path / "work")
    source = local_source(tmp_path / "data", "y", "binary_classifier", workdir)
    # the data is 5 features wide: Preprocess refuses FeatureDim=3, so the run ends after its first job
    execution = execute_local(load_config(env={}), workdir, source, {"FeatureDim": "3"}, sample_rows=100)

    assert isinstance(execution, LocalExecution) and execution.status == "Failed"
    assert execution.record.steps["Preprocess"].status == "Failed", "the run was executed, not only prepared"
    assert "the data has 5 features" in execution.record.steps[
        "Preprocess"
    ].failure_reason and "--feature-dim (pipeline parameter FeatureDim) is 3" in (
        execution.record.steps["Preprocess"].failure_reason
    )
    scanned = Counter(path for (paths,) in calls["scan"] for path in paths)
    assert scanned == Counter(files), "each data file is pre-scanned exactly once"
    sampled = Counter(path for (paths, *_rest) in calls["sample"] for path in paths)
    assert sampled == Counter(files), "and sampled once for the schema"
    assert {name: len(made) for name, made in calls.items() if name not in ("scan", "sample")} == {
        "plan": 1,
        "runners": 1,
        "resolve": 1,
        "check": 1,
    }
    assert execution.parameters["SchemaUrl"].endswith(".json") and execution.parameters["FeatureDim"] == "3"
