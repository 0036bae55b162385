"""MLflow's own UI over a local tracking store (the work dir's SQLite one by default): ``mlflow server`` as a child
process bound to 127.0.0.1, waited on until it answers ``/health``, stopped by its PID (its process group: the
server's web workers) with SIGTERM, SIGKILL if it lingers. What ``llpipe ui`` runs."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from pipeline.core import processes
from pipeline.core.errors import LlpipeError, UsageError, opt

START_SECONDS = 300.0  # a cold server migrates its database first: tens of seconds on a busy machine
STOP_SECONDS = 30.0
POLL_SECONDS = 0.1  # between /health probes while it starts: a refused connection costs next to nothing
HOST = "127.0.0.1"
# MLflow's server also starts a job runner (its GenAI scorers, online scoring, trace archival: processes that import
# MLflow again, seconds of CPU while the server comes up); the runs it shows here use none of it. Off unless the
# environment says otherwise.
JOB_EXECUTION_ENV = "MLFLOW_SERVER_ENABLE_JOB_EXECUTION"
GET_BY_NAME = "/api/2.0/mlflow/experiments/get-by-name"


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
        environment = {JOB_EXECUTION_ENV: "false", **os.environ}
        with log.open("wb") as output:
            process = processes.start(
                command, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=environment
            )
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
                time.sleep(POLL_SECONDS)
        raise LlpipeError(f"mlflow server at {self.url} did not answer /health in {seconds:g} s: {self._tail()}")

    def experiment_id(self, name: str) -> str | None:
        """The id of the experiment ``name`` as the running server reads its store, None when it has none: asked
        over its REST API, so this process need not import MLflow (seconds) to look it up."""
        query = urllib.parse.urlencode({"experiment_name": name})
        try:
            with urllib.request.urlopen(f"{self.url}{GET_BY_NAME}?{query}", timeout=30) as got:
                return str(json.loads(got.read())["experiment"]["experiment_id"])
        except urllib.error.HTTPError as error:
            body = error.read().decode(errors="replace")
            if error.code == 404 and "RESOURCE_DOES_NOT_EXIST" in body:
                return None
            raise LlpipeError(f"mlflow server at {self.url} could not look up experiment {name!r}: {body}") from None

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
