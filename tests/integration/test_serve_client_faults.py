"""``llpipe serve`` answers a client's fault with a 4xx, never a 500 (issue 42's Tracebacks class): numbers that
overflow the featurizer, JSON nested past the parser's recursion, a client that leaves mid-body; a capture folder
that cannot be written serves without capture, said once at start-up; names SageMaker refuses are refused. Over
real HTTP on 127.0.0.1, on one real local run of the drift table."""

from __future__ import annotations

import json
import logging
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import drift_table
from support.settings import fast

from pipeline import serve_local
from pipeline.api import run_local
from pipeline.api.execution import LocalExecution
from pipeline.api.serving import Predictor
from pipeline.core.errors import ServingError, UsageError

FAST = fast(Epochs=2)
ROW = {"tenure": 12, "minutes": 300.5, "calls": 4, "plan": "basic"}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, LocalExecution]:
    workdir = tmp_path_factory.mktemp("faults")
    execution = run_local(
        drift_table.table(), drift_table.LABEL, "binary_classifier", workdir=workdir, progress=False, **FAST
    )
    assert execution.status == "Succeeded", execution.failure_reason
    return workdir, execution


@pytest.fixture(scope="module")
def predictor(workdir: tuple[Path, LocalExecution]) -> Iterator[Predictor]:
    with serve_local("1", port=0, workdir=workdir[0], endpoint_name="faults") as running:
        yield running


def post(url: str, body: bytes, content_type: str) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": content_type}, method="POST")
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.parametrize(
    ("body", "content_type", "message"),
    [
        (json.dumps({**ROW, "minutes": 10**400}).encode(), "application/json", "'minutes' is 10000000000"),
        (json.dumps([ROW, {**ROW, "calls": -(10**330)}]).encode(), "application/json", "row 2, column 'calls'"),
        (json.dumps({**ROW, "tenure": 10**310}).encode() + b"\n", "application/jsonlines", "'tenure' is 1000000"),
        (b'{"tenure": 1e400, "minutes": 1, "calls": 1, "plan": "x"}', "application/json", "column 'tenure' is inf"),
        (b"tenure,minutes,calls,plan\n1e999,2,3,basic\n", "text/csv", "column 'tenure' is '1e999', not a finite"),
        (b'{"tenure": ' + b"9" * 5000 + b"}", "application/json", "the body is not JSON: Exceeds the limit"),
        (b"[" * 100_000 + b"]" * 100_000, "application/json", "the body is nested too deeply to parse"),
        (b'{"a":' * 50_000 + b"1" + b"}" * 50_000, "application/json", "the body is nested too deeply to parse"),
        (b"{}\n" + b"[" * 60_000 + b"]" * 60_000, "application/jsonlines", "JSON Lines line 2 is nested too deeply"),
    ],
    ids=[
        "int-1e400",
        "negative-int-row-2",
        "jsonlines-int",
        "float-literal",
        "csv",
        "digits",
        "lists",
        "objects",
        "jsonlines-nested",
    ],  # fmt: skip
)
def test_requests_that_overflow_or_recurse_are_400(
    predictor: Predictor, body: bytes, content_type: str, message: str
) -> None:
    status, answer = post(f"{predictor.url}/invocations", body, content_type)
    assert status == 400 and message in answer["message"], answer
    assert "cannot be featurized" not in answer["message"]  # named where it was found, not by the safety net


@pytest.mark.parametrize("sent", [b"", b"tenure,minutes", b"x" * 70_000])
def test_a_client_that_disconnects_mid_body_leaves_the_server_answering(predictor: Predictor, sent: bytes) -> None:
    host, port = predictor.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        head = b"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: text/csv\r\nContent-Length: 100000\r\n\r\n"
        sock.sendall(head + sent)
    time.sleep(0.2)
    status, answer = post(f"{predictor.url}/invocations", json.dumps(ROW).encode(), "application/json")
    assert status == 200 and set(answer["predictions"][0]) == {"score", "predicted_label", "label"}


def test_a_capture_folder_that_cannot_be_written_turns_capture_off_at_start_up(
    workdir: tuple[Path, LocalExecution], caplog: pytest.LogCaptureFixture
) -> None:
    """The endpoint's capture folder is a file (as a read-only work dir refuses the folder): the server starts,
    says once that capture is off, and answers every request 200."""
    root, execution = workdir
    (folder,) = (root / "s3").glob(f"*/*/{execution.id}")
    blocked = folder.parent / "datacapture" / "blocked"
    blocked.parent.mkdir(parents=True, exist_ok=True)
    blocked.write_text("not a folder")
    with caplog.at_level(logging.WARNING, logger="llpipe.serve"):
        with serve_local("1", port=0, workdir=root, endpoint_name="blocked") as running:
            for _ in range(3):
                assert post(f"{running.url}/invocations", json.dumps(ROW).encode(), "application/json")[0] == 200
    warnings = [record.getMessage() for record in caplog.records if record.name == "llpipe.serve"]
    assert len(warnings) == 1 and warnings[0].startswith(
        f"data capture off: cannot write capture files under {blocked}"
    )


@pytest.mark.parametrize(("option", "name"), [("endpoint_name", "../x"), ("variant", "a/../../b"), ("variant", "_")])
def test_names_sagemaker_refuses_are_refused_before_serving(
    workdir: tuple[Path, LocalExecution], option: str, name: str
) -> None:
    with pytest.raises(UsageError, match=r"is not a name SageMaker takes: expected \^\[a-zA-Z0-9\]") as error:
        serve_local("1", port=0, workdir=workdir[0], **{option: name})
    assert (error.value.option, error.value.value) == (option, name)


def test_a_port_out_of_range_is_named_by_the_api(workdir: tuple[Path, LocalExecution]) -> None:
    with pytest.raises(ServingError, match=r"port 70000: cannot listen on port 70000: expected a port, 0 to 65535"):
        with serve_local("1", port=70000, workdir=workdir[0], endpoint_name="ports"):
            pass


READ_ONLY_SERVE = """
import json, logging, sys, urllib.request
from pipeline import serve_local
logging.basicConfig(level=logging.WARNING, format="%(message)s")
with serve_local("1", port=0, workdir=sys.argv[1], endpoint_name="readonly") as running:
    for _ in range(2):
        request = urllib.request.Request(running.url + "/invocations", data=sys.argv[2].encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request) as response:
            print("STATUS", response.status)
"""


def test_serve_from_a_read_only_work_dir_answers_and_says_capture_is_off(workdir: tuple[Path, LocalExecution]) -> None:
    """The work dir mounted read-only (a private mount namespace: needs root or user namespaces)."""
    import os
    import shutil
    import subprocess
    import sys

    root = workdir[0]
    if shutil.which("unshare") is None:
        pytest.skip("no unshare to mount the work dir read-only")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("cannot make a mount namespace here")
    python = f"{sys.executable} -c '{READ_ONLY_SERVE}' {root} '{json.dumps(ROW)}'"
    script = f"mount --bind {root} {root} && mount -o remount,bind,ro {root} && {python}"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["STATUS", "200", "STATUS", "200"]
    assert "data capture off: cannot write capture files under" in done.stderr
    assert "(Read-only file system); requests are answered, not captured" in done.stderr
