"""No offset or scale of a column changes what a local run learns: a column 1e8 + N(0, 1) lost its spread in
float32 features (1e8 in steps of 8) and its folded weights swamped the others (AUC 0.754 where the baseline got
0.947). The schema centres such columns, Preprocess and the serving featurizer subtract the centre in float64, and
the model the service loads scores requests of the raw table as the model of the table without offsets does."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score
from support.partial_runs import UP_TO_THE_REPORT, partial_run
from support.settings import FAST

from containerlib.linear_learner.model import read_model
from pipeline.definition.config import load_config
from pipeline.local.data import user_data
from pipeline.local.runner import LocalRun, build_local_run
from pipeline.local.workdir import Workdir
from serving.featurizer import featurize
from serving.model import load_spec

ROWS = 3000
WEIGHTS = np.array([1.2, -0.9, 0.7, 0.5])
IDS = [f"row{row}" for row in range(ROWS)]  # split by id: the same test rows in the plain and the shifted tables


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> LocalRun:
    return build_local_run(load_config(env={}), Workdir(tmp_path_factory.mktemp("unused")))


def informative(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(ROWS, len(WEIGHTS)))
    return z, (z @ WEIGHTS + 0.8 * rng.logistic(size=ROWS) > 0).astype(int)


def run_table(built: LocalRun, folder: Path, frame: pd.DataFrame) -> tuple[float, float]:
    """(the run's test AUC from batch transform, the AUC of the served model on every row of the raw table)."""
    folder.mkdir()
    (folder / "data").mkdir()
    frame.to_csv(folder / "data" / "table.csv", index=False)
    run = partial_run(built, folder / "work", UP_TO_THE_REPORT)  # the data-quality check and registration learn nothing
    source = user_data(folder / "data", "y", "binary_classifier")
    record = run.prepare(source, {**FAST, "Epochs": "6", "IdColumn": "id"}, sample_rows=ROWS).execute()
    assert record.status == "Succeeded", record.failure_reason
    report_uri = record.steps["Evaluate"].properties["PropertyFiles"]["EvaluationReport"]
    report = json.loads(run.s3.path(report_uri).read_text())
    outputs = record.steps["Preprocess"].properties["ProcessingOutputConfig"]["Outputs"]
    (model_data,) = [item["S3Output"]["S3Uri"] for item in outputs if item["OutputName"] == "model"]
    spec = load_spec(run.s3.path(model_data) / "model.tar.gz")
    model = read_model(run.s3.path(record.steps["Train"].properties["ModelArtifacts"]["S3ModelArtifacts"]))
    rows = {column: frame[column].tolist() for column in spec.columns}  # a request's rows, as serving parses them
    scores, _ = model.predict(featurize(rows, spec))
    return report["gate"]["value"], roc_auc_score(frame["y"], scores)


@pytest.fixture(scope="module")
def plain(built: LocalRun, tmp_path_factory: pytest.TempPathFactory) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The table without offsets, run once for every parametrisation: (features, labels, its test AUC, its served
    AUC)."""
    z, y = informative(seed=6)
    frame = pd.DataFrame({f"x{index}": z[:, index] for index in range(z.shape[1])}).assign(y=y, id=IDS)
    expected_test, expected_served = run_table(built, tmp_path_factory.mktemp("offsets") / "plain", frame)
    assert expected_test > 0.85
    return z, y, expected_test, expected_served


@pytest.mark.parametrize(
    "columns",
    [
        [(1e4, 1e-6), (1e8, 1e-3), (1e12, 1e6), (-1e8, 1.0)],
        [(1e12, 1e-2), (-1e4, 1e6), (1e8, 1e-6), (3e12, 1.0)],
    ],
    ids=["offsets-1e4-1e8-1e12", "offsets-1e12-1e4-1e8"],
)
def test_offsets_and_scales_leave_the_auc_of_the_run_and_of_the_served_model(
    built: LocalRun, tmp_path: Path, columns: list[tuple[float, float]], plain: tuple
) -> None:
    z, y, expected_test, expected_served = plain
    shifted = pd.DataFrame(
        {f"x{index}": offset + scale * z[:, index] for index, (offset, scale) in enumerate(columns)}
    ).assign(y=y, id=IDS)
    test, served = run_table(built, tmp_path / "shifted", shifted)
    assert test == pytest.approx(expected_test, abs=0.01)
    assert served == pytest.approx(expected_served, abs=0.01)
