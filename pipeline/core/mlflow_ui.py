"""MLflow's own UI over a local tracking store (the work dir's SQLite one by default): ``mlflow server`` as a child
process bound to 127.0.0.1, waited on until it answers ``/health``, stopped by its PID (its process group: the
server's web workers) with SIGTERM, SIGKILL if it lingers. What ``llpipe ui`` runs."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from pipeline.core import processes
from pipeline.core.errors import LlpipeError, UsageError, opt

START_SECONDS = 300.0  # a cold server migrates its database first: tens of seconds on a busy machine
STOP_SECONDS = 30.0
HOST = "127.0.0.1"


def mlflow_command() -> list[str]:
    """The ``mlflow`` command of this interpreter's environment (its script, else ``python -m mlflow``)."""
    script = Path(sys.executable).parent / "mlflow"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "mlflow"]


def free_port(port: int) -> int:
    """``port`` when nothing listens on it (0: any free one); a usage error naming ``--port`` otherwise."""
    with socket.socket() as probe:
        try:
            probe.bind((HOST, port))
        except OSError as error:
            raise UsageError(f"port {port} on {HOST} is taken ({error.strerror}): give another {opt('port')}") from None
        return int(probe.getsockname()[1])


@dataclass
class MlflowUi:
    """A running ``mlflow server`` of one store: its process, URL and log file."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path

    @classmethod
    def start(cls, store_uri: str, artifact_root: str | None, port: int, log: Path) -> MlflowUi:
        """Start serving ``store_uri`` on 127.0.0.1:``port`` (0: a free one); new experiments' artifacts go to
        ``artifact_root``. Returns at once: :meth:`wait_ready` waits for it to answer."""
        port = free_port(port)
        command = [*mlflow_command(), "server", "--host", HOST, "--port", str(port), "--workers", "1"]
        command += ["--backend-store-uri", store_uri]
        if artifact_root is not None:
            command += ["--default-artifact-root", artifact_root, "--no-serve-artifacts"]
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("wb") as output:
            process = processes.start(command, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        return cls(process, f"http://{HOST}:{port}", log)

    def wait_ready(self, seconds: float = START_SECONDS) -> None:
        """Until ``/health`` answers 200; an error with the end of its log when it exits or never answers."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise LlpipeError(f"mlflow server exited with {self.process.returncode}: {self._tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                time.sleep(0.5)
        raise LlpipeError(f"mlflow server at {self.url} did not answer /health in {seconds:g} s: {self._tail()}")

    def wait(self) -> int:
        """Until the server exits on its own (a stop signal to this process interrupts the wait)."""
        return self.process.wait()

    def stop(self) -> None:
        """SIGTERM to the server's process group (its PID), SIGKILL if it has not ended after a while."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                self.process.terminate()
            try:
                self.process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                processes.kill_group(self.process)
                self.process.wait()

    def _tail(self) -> str:
        lines = self.log.read_text(errors="replace").strip().splitlines() if self.log.is_file() else []
        return " | ".join(lines[-5:]) or f"no output (log: {self.log})"


__all__ = ["MlflowUi", "free_port", "mlflow_command"]
