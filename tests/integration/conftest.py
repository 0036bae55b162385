"""Fixtures of the integration tier: one finished local run shared by the tests that read one, one MLflow server
shared by the tests that log to one."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator

import pytest
from support import drift_table
from support.finished_run import FinishedRun, drift_frame, locked
from support.mlflow_server import Server, start_server
from support.settings import FAST


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> FinishedRun:
    """The shared finished run, built once per session: under xdist the workers share the run's base temp folder (as
    ``definition_cache_of_this_session`` shares the definitions), the first to take the lock runs it, the other
    waits and reads what it recorded."""
    from pipeline.api import run_local

    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = tmp_path_factory.getbasetemp().parent / "llpipe-finished-run"
        root.mkdir(exist_ok=True)
    else:
        root = tmp_path_factory.mktemp("llpipe-finished-run")
    frame = drift_frame()
    workdir, done = root / "work", root / "finished.json"
    with locked(root / ".lock"):
        if not done.exists():
            shutil.rmtree(workdir, ignore_errors=True)  # what a failed attempt left
            execution = run_local(
                frame, drift_table.LABEL, "binary_classifier", workdir=workdir, progress=False, **FAST
            )
            assert execution.status == "Succeeded", execution.failure_reason
            done.write_text(json.dumps({"execution_id": execution.id}))
    return FinishedRun(workdir, json.loads(done.read_text())["execution_id"], frame)


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A real ``mlflow server`` on 127.0.0.1 for the session, started (not yet healthy: call ``wait_healthy()`` when
    it is needed, so a module can run something else while it comes up) and stopped by its PID at the end. Its
    users (conftest.py's MLFLOW_SERVER_MODULES, on one xdist worker) each log to experiments of their own names."""
    server = start_server(tmp_path_factory.mktemp("mlflow-server"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def moto_aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto's AWS in this process, with fake credentials and no endpoint or profile of the user's: the CloudFormation
    stacks' tests (test_infra*.py) create their stacks in it."""
    from moto import mock_aws

    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        yield
