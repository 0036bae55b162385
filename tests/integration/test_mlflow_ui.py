"""``llpipe ui`` (issue 41): MLflow's server on the work dir's own SQLite store, bound to 127.0.0.1, answering over
real HTTP with the runs and artifacts in the store, and stopped with its command by SIGTERM (exit 0, the server's
process gone, its port closed)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient

from pipeline.api.tracking import seed_sqlite_store

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENT = "linear-learner-pipeline"  # the default pipeline's experiment, as the local runs name it


def populate(workdir: Path) -> dict[str, str]:
    """Two runs with an artifact each in ``<workdir>/mlflow.db`` (artifacts beside it, as the local logger keeps
    them): run name -> run id."""
    uri = f"sqlite:///{workdir / 'mlflow.db'}"
    seed_sqlite_store(uri)  # as a local run makes it: a copy of a migrated empty store
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment(EXPERIMENT, artifact_location=(workdir / "mlartifacts").as_uri())
    runs = {}
    for epochs in (3, 4):
        run = client.create_run(experiment, run_name=f"execution-{epochs}")
        client.log_param(run.info.run_id, "Epochs", str(epochs))
        client.log_dict(run.info.run_id, {"epochs": epochs}, "evaluation.json")
        client.set_terminated(run.info.run_id)
        runs[run.info.run_name] = run.info.run_id
    return runs


def request(url: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    data = None if body is None else json.dumps(body).encode()
    sent = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(sent, timeout=30) as answer:
        return json.loads(answer.read())


def test_llpipe_ui_serves_the_work_dirs_runs_and_stops_on_sigterm(tmp_path: Path) -> None:
    workdir = tmp_path / ".llpipe"
    workdir.mkdir()
    runs = populate(workdir)
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    environment.pop("MLFLOW_TRACKING_URI", None)
    command = [sys.executable, "-m", "pipeline", "ui", "--workdir", str(workdir), "--port", "0"]
    ui = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
    try:
        first = ui.stdout.readline() if ui.stdout else ""  # printed once the server answers /health
        assert first.startswith(f"MLflow UI of sqlite:///{workdir / 'mlflow.db'}: http://127.0.0.1:"), first + (
            ui.stderr.read() if ui.poll() is not None and ui.stderr else ""
        )
        url = first.rsplit(": ", 1)[1].strip()
        experiment_line = ui.stdout.readline() if ui.stdout else ""
        pid_line = ui.stdout.readline() if ui.stdout else ""
        server_pid = int(pid_line.split("server PID ", 1)[1].split(",", 1)[0])
        experiment = request(f"{url}/api/2.0/mlflow/experiments/get-by-name?experiment_name={EXPERIMENT}")
        experiment_id = experiment["experiment"]["experiment_id"]
        assert experiment_line.strip() == f"experiment {EXPERIMENT}: {url}/#/experiments/{experiment_id}"
        found = request(f"{url}/api/2.0/mlflow/runs/search", {"experiment_ids": [experiment_id]})
        assert {run["info"]["run_name"]: run["info"]["run_id"] for run in found["runs"]} == runs
        epochs = {run["info"]["run_name"]: run["data"]["params"] for run in found["runs"]}
        assert epochs["execution-3"] == [{"key": "Epochs", "value": "3"}]
        listed = request(f"{url}/api/2.0/mlflow/artifacts/list?run_id={runs['execution-4']}")
        assert [item["path"] for item in listed["files"]] == ["evaluation.json"]
        with urllib.request.urlopen(f"{url}/", timeout=30) as page:
            assert b"<title>MLflow</title>" in page.read()
    finally:
        ui.send_signal(signal.SIGTERM)
        out, err = ui.communicate(timeout=120)
    assert ui.returncode == 0, err
    assert out.splitlines()[-1] == "stopped"
    with pytest.raises(ProcessLookupError):
        os.kill(server_pid, 0)  # the server was ended (and reaped) with its command
    port = int(url.rsplit(":", 1)[1])
    with socket.socket() as probe, pytest.raises(ConnectionRefusedError):
        probe.connect(("127.0.0.1", port))


def test_a_taken_port_is_refused_naming_the_option(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from pipeline.cli import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        code = main(["ui", "--workdir", str(tmp_path), "--port", str(port)])
    assert code == 2
    message = capsys.readouterr().err.strip()
    assert message.startswith(f"llpipe ui: port {port} on 127.0.0.1 is taken (")
    assert message.endswith("): give another --port")


def test_a_tracking_server_is_its_own_ui(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from pipeline.cli import main

    code = main(["ui", "--workdir", str(tmp_path), "--tracking-uri", "http://127.0.0.1:5999/"])
    assert code == 0
    assert capsys.readouterr().out == "MLflow UI: http://127.0.0.1:5999 (the tracking server's own)\n"
