"""A work dir copied elsewhere shows its own files: execution records keep paths relative to their folder, and an
older record's absolute paths are mapped into the copy (the original is deleted to prove nothing reads it)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.finished_run import FinishedRun

from pipeline import cli


def _copy_and_delete_original(finished_run: FinishedRun, tmp_path: Path) -> tuple[Path, Path]:
    original = finished_run.copy_to(tmp_path / "first")
    copy = tmp_path / "elsewhere" / "second"
    shutil.copytree(original, copy, symlinks=True)
    return original, copy


def _mark_logs(workdir: Path, execution_id: str) -> dict[str, str]:
    """Append a line naming ``workdir`` to each log of the execution: which copy a shown log came from."""
    marks = {}
    for log in sorted((workdir / "executions" / execution_id / "steps").glob("*/logs/*.log")):
        mark = f"log of {workdir.name}: {log.parent.parent.name}/{log.name}"
        with log.open("a") as handle:
            handle.write(mark + "\n")
        marks[str(log)] = mark
    return marks


def _show(workdir: Path, execution_id: str, capsys: pytest.CaptureFixture[str]) -> str:
    code = cli.main(["execution", "show", execution_id, "--logs", "--workdir", str(workdir)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out.replace("\n", "")  # a long path is wrapped on the terminal's width


def test_a_copied_work_dir_shows_its_own_logs(
    finished_run: FinishedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original, copy = _copy_and_delete_original(finished_run, tmp_path)
    record = json.loads((copy / "executions" / finished_run.execution_id / "execution.json").read_text())
    stored = [log for step in record["steps"] for log in step["logs"]]
    assert stored and not any(Path(log).is_absolute() for log in stored), stored
    marks = _mark_logs(copy, finished_run.execution_id)
    shutil.rmtree(original)

    shown = _show(copy, finished_run.execution_id, capsys)
    assert str(original) not in shown
    for path, mark in marks.items():
        assert path in shown and mark in shown


def test_an_older_record_with_absolute_paths_is_mapped_into_the_copy(
    finished_run: FinishedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original, copy = _copy_and_delete_original(finished_run, tmp_path)
    folder = f"{original}/executions/{finished_run.execution_id}"
    path = copy / "executions" / finished_run.execution_id / "execution.json"
    record = json.loads(path.read_text())
    for step in record["steps"]:  # as a record of the previous version held them: the original's absolute paths
        step["logs"] = [f"{folder}/{log}" for log in step["logs"]]
    path.write_text(json.dumps(record))
    marks = _mark_logs(copy, finished_run.execution_id)
    shutil.rmtree(original)

    shown = _show(copy, finished_run.execution_id, capsys)
    assert folder not in shown
    assert marks and all(mark in shown for mark in marks.values())


@pytest.mark.parametrize("delete_original", [True, False])
def test_a_copied_work_dir_names_its_own_mlflow_store(
    finished_run: FinishedRun, tmp_path: Path, delete_original: bool
) -> None:
    """The work dir's own MLflow store (``<workdir>/mlflow.db``), as ``mlflow.json`` names it once a run is logged."""
    from pipeline.api import get_execution

    original = finished_run.copy_to(tmp_path / "first")
    store = f"sqlite:///{original}/mlflow.db"
    (original / "mlflow.db").write_bytes(b"SQLite format 3\x00")
    logged = {"run_id": "r1", "experiment_id": "1", "tracking_uri": store, "url": "http://127.0.0.1:5000/#/x",
              "ui_command": f"mlflow ui --backend-store-uri {store}"}  # fmt: skip
    (original / "executions" / finished_run.execution_id / "mlflow.json").write_text(json.dumps(logged))
    copy = tmp_path / "elsewhere" / "second"
    shutil.copytree(original, copy, symlinks=True)
    if delete_original:
        shutil.rmtree(original)
    run = get_execution(finished_run.execution_id, workdir=copy).mlflow_run
    assert run is not None and run.tracking_uri == f"sqlite:///{copy}/mlflow.db"
    assert run.ui_command == f"mlflow ui --backend-store-uri sqlite:///{copy}/mlflow.db"
    assert str(original) not in json.dumps(run.to_dict())
