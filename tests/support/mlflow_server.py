"""A real MLflow tracking server for tests: ``mlflow server`` as a child process on 127.0.0.1 with its own SQLite
store and artifact folder, waited on by polling ``/health``, stopped by its PID."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

SERVER_START_SECONDS = 180  # a cold `mlflow server` migrates its database first; slow on a shared machine


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
                time.sleep(1)
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
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, cwd=folder)
    return Server(process, f"http://127.0.0.1:{port}", log)
