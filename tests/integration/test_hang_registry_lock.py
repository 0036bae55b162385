"""Issue 42, hangs: while the registry's write lock was held by another process, SIGINT, SIGTERM and SIGHUP were acted
on only when SQLite's 60 s busy timeout ended (in a Register step, or `llpipe models approve`). The lock is now
awaited in short slices that end at once when a stop is pending; real signals to real processes, waited for by
state (the lock held, the registry file open in the waiting process), never by elapsed time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.model_packages import request

from pipeline.local.executions import ExecutionStore
from pipeline.local.registry import LocalRegistry, RegistryError

LLPIPE = [sys.executable, "-m", "pipeline"]
GROUP = "linear-learner-models"  # the default group `llpipe models` reads
# far below the 60 s busy timeout: a process that waits for it fails the test
PROMPT_SECONDS = 20

HOLDER = """
import sqlite3, sys, pathlib, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute(sys.argv[3] if len(sys.argv) > 3 else "BEGIN IMMEDIATE")
pathlib.Path(sys.argv[2]).write_text("held")
time.sleep(600)
"""

REGISTER_STEP = """
import json, sys
from pathlib import Path
from pipeline.core.errors import Interrupted
from pipeline.local.executions import ExecutionStore
from pipeline.local.interpreter import Interpreter
from pipeline.local.jobs import local_runners
from pipeline.local.s3 import LocalS3
from pipeline.local.workdir import Workdir

root = Path(sys.argv[1])
s3 = LocalS3(root / "s3")
s3.put_bytes("s3://bkt/model.tar.gz", b"artifact")
arguments = json.loads(sys.argv[2])
definition = {
    "Version": "2020-12-01",
    "Parameters": [],
    "Steps": [{"Name": "Register", "Type": "RegisterModel", "Arguments": arguments}],
}
interpreter = Interpreter(
    runners=local_runners(Workdir(root), region="eu-west-1", account="123456789012"),
    store=ExecutionStore(root / "executions"),
    read_json=lambda uri: json.loads(s3.path(uri).read_text()),
    pipeline_name="lock-test",
)
try:
    record = interpreter.run(definition, {})
except Interrupted as stop:
    raise SystemExit(128 + stop.signal_number)
raise SystemExit(0 if record.status == "Succeeded" else 1)
"""


@pytest.fixture
def held_registry(tmp_path: Path) -> Iterator[Path]:
    """A work dir whose registry holds version 1 of the default group, its write lock held by another process."""
    db = tmp_path / "registry.db"
    LocalRegistry(db).register(request(GROUP), region="eu-west-1", account="123456789012")
    held = tmp_path / "held"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), str(held)])
    try:
        while not held.exists():
            assert holder.poll() is None, "the lock holder ended"
            time.sleep(0.05)
        yield tmp_path
    finally:
        holder.kill()
        holder.wait()


def _wait_until_open(process: subprocess.Popen, path: Path) -> None:
    """Until ``process`` has ``path`` open: it is then waiting for the lock."""
    while True:
        assert process.poll() is None, process.communicate()
        try:
            links = [os.readlink(fd) for fd in Path(f"/proc/{process.pid}/fd").iterdir()]
        except OSError:
            links = []
        if str(path) in links:
            return
        time.sleep(0.05)


def _stopped_in_time(process: subprocess.Popen, sent: signal.Signals) -> int:
    process.send_signal(sent)
    try:
        return process.wait(timeout=PROMPT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    pytest.fail(f"{sent.name} was not acted on within {PROMPT_SECONDS} s while the registry lock was awaited")


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_ends_a_register_step_waiting_for_the_lock_at_once(held_registry: Path, sent: signal.Signals) -> None:
    arguments = request(
        GROUP, InferenceSpecification={"Containers": [{"Image": "x", "ModelDataUrl": "s3://bkt/model.tar.gz"}]}
    )
    del arguments["ModelMetrics"]
    with subprocess.Popen(
        [sys.executable, "-c", REGISTER_STEP, str(held_registry), json.dumps(arguments)],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as process:
        _wait_until_open(process, held_registry / "registry.db")
        assert _stopped_in_time(process, sent) == 128 + sent
        [record] = ExecutionStore(held_registry / "executions").list()
        assert record.status == "Stopped" and record.steps["Register"].status == "Stopped"
        assert sent.name in record.failure_reason


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_ends_models_approve_waiting_for_the_lock_at_once(held_registry: Path, sent: signal.Signals) -> None:
    argv = [*LLPIPE, "models", "approve", "1", "--workdir", str(held_registry)]
    with subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, start_new_session=True) as process:
        _wait_until_open(process, held_registry / "registry.db")
        assert _stopped_in_time(process, sent) == 128 + sent
        assert f"llpipe models: stopped by {sent.name}" in process.stderr.read()  # type: ignore[union-attr]
        assert LocalRegistry(held_registry / "registry.db").describe(f"{GROUP}/1").approval_status != "Approved"


@pytest.mark.parametrize(
    ("command", "sent"),
    [(["models", "list"], signal.SIGINT), (["models", "describe", "1"], signal.SIGTERM), (["run"], signal.SIGINT)],
)
def test_a_stop_ends_a_read_waiting_for_an_exclusive_lock_at_once(
    tmp_path: Path, command: list[str], sent: signal.Signals
) -> None:
    """A writer holding the exclusive lock (committing) keeps readers out: a read's first query waited SQLite's
    whole busy timeout, unstoppable (``llpipe run``'s pre-run registry check took 58 s to act on Ctrl-C)."""
    db = tmp_path / "registry.db"
    LocalRegistry(db).register(request(GROUP), region="eu-west-1", account="123456789012")
    held = tmp_path / "held"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), str(held), "BEGIN EXCLUSIVE"])
    try:
        while not held.exists():
            assert holder.poll() is None, "the lock holder ended"
            time.sleep(0.05)
        argv = [*LLPIPE, *command, "--workdir", str(tmp_path)]
        with subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, start_new_session=True) as process:
            _wait_until_open(process, db)
            assert _stopped_in_time(process, sent) == 128 + sent
            assert f"stopped by {sent.name}" in process.stderr.read()  # type: ignore[union-attr]
    finally:
        holder.kill()
        holder.wait()


def test_a_stop_event_ends_the_wait_and_a_free_lock_is_taken(held_registry: Path) -> None:
    """The library's form: ``stop`` set while the lock is awaited raises a ``RegistryError`` saying so."""
    stop = threading.Event()
    raised: list[BaseException] = []

    def approve() -> None:
        try:
            LocalRegistry(held_registry / "registry.db", stop=stop).update_status(f"{GROUP}/1", "Approved")
        except RegistryError as error:
            raised.append(error)

    thread = threading.Thread(target=approve)
    thread.start()
    stop.set()
    thread.join(timeout=PROMPT_SECONDS)
    assert not thread.is_alive() and len(raised) == 1
    assert "stopped while waiting for the model registry's lock" in str(raised[0])


def test_a_lock_held_past_the_busy_timeout_is_said_to_be_held(
    held_registry: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pipeline.local.registry.BUSY_TIMEOUT_SECONDS", 0.5)
    db = held_registry / "registry.db"
    with pytest.raises(RegistryError) as error:
        LocalRegistry(db).update_status(f"{GROUP}/1", "Rejected")
    assert (
        str(error.value)
        == f"{db}: another process has held the model registry's lock for 0.5 s; try again when it has ended"
    )
    assert LocalRegistry(db).describe(f"{GROUP}/1").approval_status == "PendingManualApproval"  # reads go on
