"""``llpipe monitor`` over the training file itself reports no drift, on a real local run, a real local server and
real requests of the training rows: a float32 Parquet file whose columns take few distinct values (the baseline's
sample holds their float32 text, ``3.9``; a client sends the float64 text of the same numbers, ``3.900000095367432``,
and before the baseline and the traffic were compared at two precisions: every value's mass drifted).

Also: each window has its own report (a later window in the same hour no longer overwrites the earlier one's), and a
sampled capture says that its figures are from a sample, and of what percentage."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.settings import FAST

from pipeline import cli
from pipeline.api import run_local
from pipeline.api.serving import serve_local

FEATURES = ["rate", "level", "amount", "plan"]
LABEL = "bought"


def training_table(rows: int = 500, seed: int = 7) -> pd.DataFrame:
    """Float32 columns of few repeated values none of which float32 holds exactly, a continuous float32 column, text."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "rate": rng.choice([3.9, 1.1, 2.7, 0.3], rows).astype(np.float32),
            "level": rng.choice([0.1, 0.2, 0.7], rows, p=[0.5, 0.3, 0.2]).astype(np.float32),
            "amount": rng.gamma(3.0, 17.3, rows).astype(np.float32),
            "plan": rng.choice(["basic", "plus"], rows),
        }
    )
    score = frame["rate"] - 2.0 * frame["level"] + 0.01 * frame["amount"] + (frame["plan"] == "plus")
    frame[LABEL] = np.where(score + rng.normal(0, 0.4, rows) > np.median(score), "yes", "no")
    return frame


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    root = tmp_path_factory.mktemp("monitor-training-file")
    frame = training_table()
    data = root / "data"
    data.mkdir()
    frame.to_parquet(data / "table.parquet", index=False)
    execution = run_local(
        data / "table.parquet", LABEL, "binary_classifier", workdir=root / "work", progress=False, **FAST
    )
    assert execution.status == "Succeeded", execution.failure_reason
    return root / "work", pd.read_parquet(data / "table.parquet")


def _send(workdir: Path, endpoint: str, frame: pd.DataFrame, rows_per_request: int = 50, **options: object) -> None:
    """The rows as clients send them: JSON records of the float32 values (their float64 text) and CSV of the same."""
    records = frame[FEATURES].to_dict(orient="records")
    as_float64 = frame[FEATURES].astype({name: "float64" for name in ("rate", "level", "amount")})
    with serve_local("1", port=0, workdir=workdir, endpoint_name=endpoint, **options) as running:
        for start in range(0, len(records) // 2, rows_per_request):
            batch = records[start : start + rows_per_request]
            running.invoke(json.dumps(batch).encode(), "application/json", "application/json")
        for start in range(len(records) // 2, len(records), rows_per_request):
            body = as_float64.iloc[start : start + rows_per_request].to_csv(index=False, header=False).encode()
            running.invoke(body, "text/csv", "application/json")


def _monitor(workdir: Path, endpoint: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict]:
    code = cli.main(["monitor", "--endpoint", endpoint, "--model-package", "1", "--workdir", str(workdir), *extra])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if "--json" in extra else {"text": captured.out})


def test_the_training_rows_served_and_monitored_show_no_drift(
    trained: tuple[Path, pd.DataFrame], image_environment: object, capsys: pytest.CaptureFixture[str]
) -> None:
    workdir, frame = trained
    sent = f"{frame['rate'].iloc[0]!r}"
    assert len(str(float(frame["rate"].iloc[0]))) > 10, sent  # the float64 text of a float32: many digits
    _send(workdir, "training-rows", frame)
    code, report = _monitor(workdir, "training-rows", capsys, "--json")
    (part,) = report["parts"]
    assert part["data_quality"]["violations"] == [], part["data_quality"]["violations"]
    assert code == 0
    assert part["data_quality"]["item_count"] == len(frame)


def test_a_drifted_discrete_column_is_still_found(
    trained: tuple[Path, pd.DataFrame], image_environment: object, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same precision does not blind the check: a column whose values moved is still drift."""
    workdir, frame = trained
    moved = frame.assign(level=np.where(frame["level"] < 0.15, np.float32(0.7), frame["level"]).astype(np.float32))
    _send(workdir, "moved-level", moved)
    code, report = _monitor(workdir, "moved-level", capsys, "--json")
    (part,) = report["parts"]
    found = {(item["feature_name"], item["constraint_check_type"]) for item in part["data_quality"]["violations"]}
    assert code == 1 and ("level", "baseline_drift_check") in found
    assert {name for name, _ in found} == {"level"}


def test_each_window_has_its_own_report_and_a_sample_says_so(
    trained: tuple[Path, pd.DataFrame], image_environment: object, capsys: pytest.CaptureFixture[str]
) -> None:
    workdir, frame = trained
    # 50 requests, each kept with probability 0.4 (unseeded, as served): none kept once in 10^11 runs; with 10 requests
    # of 50 rows, once in 165, and the monitor then found no capture at all
    _send(workdir, "sampled", frame, rows_per_request=10, capture_percentage=40)
    now = datetime.now(timezone.utc).replace(microsecond=0)
    end = now + timedelta(seconds=2)
    windows = [(end - timedelta(minutes=50), end), (end - timedelta(minutes=30), end + timedelta(seconds=1))]
    reports = []
    for start, stop in windows:
        window = ["--start", start.isoformat(), "--end", stop.isoformat()]
        code, report = _monitor(workdir, "sampled", capsys, "--json", *window)
        (part,) = report["parts"]
        assert code == 0
        assert part["sampling_percentage"] == 40
        assert "sample" in part["note"] and "40%" in part["note"]
        reports.append(part["data_quality"]["violation_report"])
    assert len(set(reports)) == 2, "a later window of the same hour keeps the earlier one's report"
    for uri in reports:
        assert (workdir / "s3" / uri.removeprefix("s3://")).is_file()
    code, shown = _monitor(workdir, "sampled", capsys)
    assert code == 0 and "40% sample" in " ".join(shown["text"].split())
