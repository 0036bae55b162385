"""A real MLflow tracking server for tests: ``mlflow server`` as a child process on 127.0.0.1 with its own SQLite
store and artifact folder, waited on by polling ``/health``, stopped by its PID."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.api.tracking import seed_sqlite_store
from pipeline.core.mlflow_ui import JOB_EXECUTION_ENV, POLL_SECONDS

SERVER_START_SECONDS = 180  # tens of seconds on a shared machine (imports)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Server:
    """An ``mlflow server`` subprocess on 127.0.0.1 with its own SQLite store and artifact folder."""

    process: subprocess.Popen[bytes]
    uri: str
    log: Path

    def wait_healthy(self) -> None:
        deadline = time.monotonic() + SERVER_START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"mlflow server exited with {self.process.returncode}: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.uri}/health", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                time.sleep(POLL_SECONDS)
        pytest.fail(f"mlflow server at {self.uri} not healthy after {SERVER_START_SECONDS} s: {self.log.read_text()}")

    def stop(self) -> None:
        """SIGTERM by PID (the server stops its uvicorn and job runner children), SIGKILL if it lingers."""
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_server(folder: Path) -> Server:
    port = free_port()
    log = folder / "server.log"
    command = [
        str(Path(sys.executable).parent / "mlflow"),
        "server",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
        "--backend-store-uri",
        f"sqlite:///{folder / 'server.db'}",
        "--artifacts-destination",
        str(folder / "artifacts"),
    ]
    seed_sqlite_store(f"sqlite:///{folder / 'server.db'}")  # migrated already, as llpipe's runs make their stores
    environment = {**os.environ, JOB_EXECUTION_ENV: "false"}  # as llpipe ui's: the runs logged here use no jobs
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, cwd=folder, env=environment)
    return Server(process, f"http://127.0.0.1:{port}", log)
