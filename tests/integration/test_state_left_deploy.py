"""Issue 42, state left: SIGINT during a local `llpipe deploy`, between stopping the stage's server and the new one
answering, left the stage down (no server, a state naming a dead pid). A roll-out that is interrupted now leaves
the stage served: by the new version when it came up, else by the previous one started again. Real signals to a
real `llpipe deploy`, sent when its progress says it is at that point (a log line, not a delay)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import botocore.config
import pytest
from support import drift_table
from support.finished_run import FinishedRun

from pipeline import cli
from pipeline.definition.config import load_config
from pipeline.local.endpoints import LocalEndpoints
from pipeline.local.registry import LocalRegistry
from pipeline.local.workdir import Workdir

FEATURES = ["tenure", "minutes", "calls", "plan"]
LLPIPE = [sys.executable, "-m", "pipeline"]


@pytest.fixture(scope="module")
def staged(finished_run: FinishedRun, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A copy of the session's finished run (the drift table, version 1 registered) with a second approved version
    registered from the first's request (the same model), and staging serving version 1."""
    workdir = finished_run.copy_to(tmp_path_factory.mktemp("interrupted-deploy") / "work")
    registry = LocalRegistry(workdir / "registry.db")
    with sqlite3.connect(workdir / "registry.db") as db:
        (request,) = db.execute("SELECT request FROM model_packages WHERE version = 1").fetchone()
    metrics = registry.list_packages()[0].metrics
    registry.register(json.loads(request), metrics=metrics, region="us-east-1", account="111122223333")
    for version in ("1", "2"):
        assert cli.main(["models", "approve", version, "--workdir", str(workdir)]) == 0
    assert cli.main(["deploy", "--stage", "staging", "--workdir", str(workdir), "--port", "0", "--json"]) == 0
    yield workdir
    LocalEndpoints(Workdir.at(workdir), load_config(env={})).undeploy("staging")


def _servers(workdir: Path) -> list[int]:
    """The pids of `llpipe serve` processes of ``workdir``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"serve" in command and str(workdir).encode() in command:
                found.append(int(entry.name))
    return found


def _staging(workdir: Path) -> dict:
    listed = subprocess.run([*LLPIPE, "endpoints", "--workdir", str(workdir), "--json"], capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    return {entry["stage"]: entry for entry in json.loads(listed.stdout)}["staging"]


@pytest.mark.parametrize(
    ("sent", "at"),
    [
        (signal.SIGINT, "starting "),  # the old server stopped, the new one starting: the window of the issue
        (signal.SIGTERM, "starting "),
        (signal.SIGINT, "stopping "),  # while the old server is being stopped
    ],
)
def test_an_interrupted_roll_out_leaves_the_stage_served(staged: Path, sent: signal.Signals, at: str) -> None:
    before = _staging(staged)
    assert before["status"] == "InService"
    target = "2" if before["version"] == 1 else "1"
    argv = [*LLPIPE, "deploy", "--stage", "staging", "--model-package", target, "--workdir", str(staged), "--json"]
    argv += ["--quality-tolerance", "1"]
    with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as process:
        said = []
        assert process.stderr is not None
        for line in process.stderr:
            said.append(line)
            if line.strip().partition(" ")[2].startswith(at):  # after the time stamp
                process.send_signal(sent)
                break
        else:
            pytest.fail(f"the deploy never said {at!r}: {''.join(said)}")
        said.append(process.stderr.read())
        assert process.wait(timeout=120) == 128 + sent, "".join(said)
    after = _staging(staged)
    assert after["status"] == "InService", (after, "".join(said))  # before: the state named a dead server
    assert after["version"] in (1, 2) and after["url"] == before["url"]  # the same port for the clients
    assert _servers(staged) == [int(after["handle"].split()[1])]  # one server: none left orphaned
    client = boto3.client(
        "sagemaker-runtime",
        endpoint_url=after["url"],
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
        config=botocore.config.Config(retries={"max_attempts": 1}),
    )
    rows = drift_table.table(rows=3)[FEATURES].to_csv(index=False).encode()
    answer = client.invoke_endpoint(EndpointName=after["endpoint"], Body=rows, ContentType="text/csv")
    assert len(json.loads(answer["Body"].read())["predictions"]) == 3
    assert os.path.exists(staged / "registry.db")
