"""Files whose names hold ``?``, ``#``, ``%``, spaces or unicode go through a local run whole: a file ``a?b.csv`` was
staged as the object ``a`` (the URI parsed as a URL) and then skipped by Preprocess, a third of the rows dropped."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.partial_runs import UP_TO_THE_REPORT, partial_run
from support.settings import FAST

from pipeline.definition.config import load_config
from pipeline.local.data import user_data
from pipeline.local.runner import LocalRun, build_local_run
from pipeline.local.workdir import Workdir

NAMES = ["q?x=1.csv", "frag#ment.csv.gz", "per%25cent and space.parquet", "ünï 漢.csv", "both?#%.pq"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> LocalRun:
    return build_local_run(load_config(env={}), Workdir(tmp_path_factory.mktemp("unused")))


def write(folder: Path, names: list[str], seed: int) -> int:
    """One table per name (rows of different counts), in the format its suffix says; returns the rows written."""
    rng = np.random.default_rng(seed)
    total = 0
    for index, name in enumerate(names):
        rows = 120 + 37 * index
        x = rng.normal(size=(rows, 2))
        frame = pd.DataFrame({"x1": x[:, 0], "x2": x[:, 1], "y": (x[:, 0] > 0).astype(int)})
        if name.endswith((".parquet", ".pq")):
            frame.to_parquet(folder / name, index=False)
        else:
            frame.to_csv(folder / name, index=False)
        total += rows
    return total


def test_every_row_of_files_with_url_characters_in_their_names_is_read(built: LocalRun, tmp_path: Path) -> None:
    folder = tmp_path / "data"
    (folder / "sub?dir#1").mkdir(parents=True)
    total = write(folder, NAMES[:3], seed=3) + write(folder / "sub?dir#1", NAMES[3:], seed=4)
    run = partial_run(built, tmp_path / "work", UP_TO_THE_REPORT)  # the names reach the predictions' row ids
    prepared = run.prepare(user_data(folder, "y", "binary_classifier"), {**FAST, "ProcessingInstanceCount": "2"})
    record = prepared.execute()
    assert record.status == "Succeeded", record.failure_reason
    outputs = record.steps["Preprocess"].properties["ProcessingOutputConfig"]["Outputs"]
    (summary_uri,) = [item["S3Output"]["S3Uri"] for item in outputs if item["OutputName"] == "summary"]
    summaries = [json.loads(path.read_text()) for path in run.s3.path(summary_uri).glob("*.json")]
    assert len(summaries) == 2
    assert sum(summary["rows_read"] for summary in summaries) == total
    read = sorted(name for summary in summaries for name in summary["input_files"])
    assert read == sorted([*NAMES[:3], *(f"sub?dir#1/{name}" for name in NAMES[3:])])
