"""A stopped Preprocess job (SIGTERM, as SageMaker stops a job; SIGHUP; SIGINT) removes what it had written, like a
failed one, and exits 128 + the signal. Before, SIGTERM's default action ended the process at once: the work folder
(shards half written) and empty output folders were left behind.

Each case runs the real job in a child process, on a real table, and sends the signal from inside the job at a
chosen stage (the process signals itself from the thread that does that stage), so the stop lands exactly there
whatever the machine's speed."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPOSITORY = Path(__file__).resolve().parents[2]

CHILD = """
import os, signal, sys
from preprocessing import conversion, job, shards
from preprocessing.command import main

stage, signum, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
calls = {"count": 0}

def signalling(function):  # the second call of the stage's function sends the signal first
    def call(*args, **kwargs):
        calls["count"] += 1
        if calls["count"] == 2:
            os.kill(os.getpid(), signum)
        return function(*args, **kwargs)
    return call

if stage == "converting":  # on a converting thread
    job.convert_chunk = signalling(conversion.convert_chunk)
elif stage == "dealing":  # on the main thread
    shards.ShardBuffer.add = signalling(shards.ShardBuffer.add)
elif stage == "writing":  # on a shard-writing thread
    shards._write_shard = signalling(shards._write_shard)
sys.exit(main(argv))
"""


def _table(folder: Path) -> Path:
    folder.mkdir()
    rng = np.random.default_rng(3)
    values = rng.normal(size=(2_000, 4)).round(4)
    lines = ["a,b,c,d,label"] + [",".join(map(str, row)) + f",{int(row.sum() > 0)}" for row in values]
    (folder / "table.csv").write_text("\n".join(lines) + "\n")
    return folder


@pytest.mark.parametrize(
    ("stage", "signum", "message"),
    [
        ("converting", signal.SIGTERM, "preprocess: stopped by SIGTERM"),
        ("dealing", signal.SIGHUP, "preprocess: stopped by SIGHUP"),
        ("writing", signal.SIGTERM, "preprocess: stopped by SIGTERM"),
        ("dealing", signal.SIGINT, "preprocess: interrupted (SIGINT)"),
    ],
)
def test_a_stopped_job_leaves_nothing_and_exits_with_the_signal(
    tmp_path: Path, stage: str, signum: int, message: str
) -> None:
    output = tmp_path / "out"
    argv = ["--input-dir", str(_table(tmp_path / "in")), "--output-dir", str(output), "--resource-config",
            str(tmp_path / "absent.json"), "--label-column", "label", "--predictor-type", "binary_classifier",
            "--train-shards", "3", "--chunk-rows", "400"]  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-c", CHILD, stage, str(int(signum)), *argv],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a background runner's SIGINT is ignored
    )
    assert result.returncode == 128 + signum, result.stderr
    assert result.stderr.strip().splitlines()[-1] == message, result.stderr
    assert "Traceback" not in result.stderr
    assert not output.exists(), sorted(str(path.relative_to(output)) for path in output.rglob("*"))


WAITING_CHILD = """
import os, signal, sys, threading, time, types, queue
from containerlib import prefetch
from preprocessing.command import main

def stack(thread):  # the function names of a thread's frames, innermost first
    frame, names = sys._current_frames().get(thread.ident), []
    while frame is not None:
        names.append(frame.f_code.co_name)
        frame = frame.f_back
    return names

def reader_and_converter_waiting():  # the reader for room in flight, the converting thread for the reader
    stacks = [stack(thread) for thread in threading.enumerate() if thread.name == "prefetch"]
    return any(s[0] == "wait" and "entered" in s for s in stacks) and any(
        s[0] == "wait" and "as_chunks" in s for s in stacks
    )

class Signalling(queue.Queue):  # the main thread's second wait for a converted chunk sends the signal first
    calls = 0

    def get(self, *args, **kwargs):
        if threading.current_thread() is threading.main_thread():
            Signalling.calls += 1
            if Signalling.calls == 2:
                while not reader_and_converter_waiting():
                    time.sleep(0.01)
                os.kill(os.getpid(), signal.SIGTERM)
        return super().get(*args, **kwargs)

prefetch.queue = types.SimpleNamespace(Queue=Signalling, Full=queue.Full)
sys.exit(main(sys.argv[1:]))
"""


def test_a_stop_while_the_job_waits_for_its_next_chunk_does_not_hang(tmp_path: Path) -> None:
    """The signal arrives while the main thread waits inside the reading pipeline for a chunk, the reader waiting
    for room in flight and the converting thread for the reader. Raised there, the stop made the pipeline join the
    converting thread before the room was closed, and the job hung until SIGKILL; raised between chunks, it ends
    the threads in order. (1 of 4 runs of the converting case above hung so on a loaded machine.)"""
    output = tmp_path / "out"
    argv = ["--input-dir", str(_table(tmp_path / "in")), "--output-dir", str(output), "--resource-config",
            str(tmp_path / "absent.json"), "--label-column", "label", "--predictor-type", "binary_classifier",
            "--chunk-rows", "200"]  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-c", WAITING_CHILD, *argv],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 128 + signal.SIGTERM, result.stderr
    assert result.stderr.strip().splitlines()[-1] == "preprocess: stopped by SIGTERM", result.stderr
    assert not output.exists(), sorted(str(path.relative_to(output)) for path in output.rglob("*"))


def test_a_failed_job_removes_the_output_folders_it_made_but_not_others(tmp_path: Path) -> None:
    """The folders a failed host made go with it; an output folder that was there before stays, with its files."""
    from preprocessing.command import main

    output = tmp_path / "out"
    (output / "train").mkdir(parents=True)
    (output / "train" / "train-algo-2-00000.pbr").write_bytes(b"another host's shard")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "bad.csv").write_text("a,label\n1,0\nseven,1\n")
    arguments = ["--input-dir", str(tmp_path / "in"), "--output-dir", str(output), "--resource-config",
                 str(tmp_path / "absent.json"), "--label-column", "label", "--predictor-type", "regressor"]  # fmt: skip
    code = main(arguments)
    assert code == 1
    assert sorted(str(path.relative_to(output)) for path in output.rglob("*")) == [
        "train",
        "train/train-algo-2-00000.pbr",
    ]


STOP_SIGNALS_CHILD = """
import os, signal, sys
from containerlib.stop_signals import Stopped, stop_signals_raise

seen = []
try:
    with stop_signals_raise():
        try:
            os.kill(os.getpid(), signal.SIGTERM)  # Python runs the handler before the next line
            seen.append("not stopped")
        finally:
            os.kill(os.getpid(), signal.SIGHUP)  # during the clean-up: ignored
            seen.append("clean-up ran to its end")
except Stopped as stop:
    seen.append(f"{stop} -> exit {stop.exit_code}")
defaults = [signal.getsignal(signum) is signal.SIG_DFL for signum in (signal.SIGTERM, signal.SIGHUP)]
seen.append(f"restored: {all(defaults)}")
print(seen)
"""


def test_the_first_stop_signal_raises_and_later_ones_do_not_cut_the_clean_up_short() -> None:
    result = subprocess.run(
        [sys.executable, "-c", STOP_SIGNALS_CHILD], cwd=REPOSITORY, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(["clean-up ran to its end", "stopped by SIGTERM -> exit 143", "restored: True"])


CHECKED_CHILD = """
import os, signal, sys
from containerlib.stop_signals import Stopped, stop_signals_checked

seen = []
for first, later, checks in ((signal.SIGTERM, signal.SIGINT, True), (signal.SIGINT, signal.SIGHUP, True),
                             (signal.SIGHUP, signal.SIGTERM, False)):
    try:
        with stop_signals_checked() as stop:
            stop.check()
            os.kill(os.getpid(), first)  # noted only: the handler runs before the next line, which runs
            seen.append("went on")
            os.kill(os.getpid(), later)  # ignored: the first is the one raised
            if checks:
                stop.check()
                seen.append("not stopped")
    except (Stopped, KeyboardInterrupt) as stop:
        seen.append(f"{type(stop).__name__} {stop}".strip() + (" at a check" if checks else " on leaving"))
handlers = [signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)]
seen.append(f"restored: {handlers == [signal.SIG_DFL, signal.SIG_DFL, signal.default_int_handler]}")
print(seen)
"""


def test_a_checked_stop_signal_is_raised_where_the_job_checks_or_on_leaving() -> None:
    result = subprocess.run(
        [sys.executable, "-c", CHECKED_CHILD],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # Python's KeyboardInterrupt handler
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(
        [
            "went on",
            "Stopped stopped by SIGTERM at a check",
            "went on",
            "KeyboardInterrupt at a check",
            "went on",
            "Stopped stopped by SIGHUP on leaving",
            "restored: True",
        ]
    )


EVALUATE_CHILD = """
import os, signal, sys
import evaluation.command as command

def stopped_midway(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGTERM)
    raise AssertionError("the stop did not interrupt the job")

command.evaluate = stopped_midway
sys.exit(command.main(sys.argv[1:]))
"""


def test_a_stopped_evaluate_job_exits_with_the_signal(tmp_path: Path) -> None:
    """Evaluate's temporary files (the champion's model being downloaded, the report) are removed on any
    BaseException; SIGTERM now raises one in the job instead of ending the process where it stands."""
    arguments = ["--predictions-dir", str(tmp_path), "--test-dir", str(tmp_path), "--output-dir", str(tmp_path / "out"),
                 "--predictor-type", "binary_classifier"]  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-c", EVALUATE_CHILD, *arguments], cwd=REPOSITORY, capture_output=True, text=True, check=False
    )
    assert result.returncode == 143, result.stderr
    assert result.stderr.strip().splitlines()[-1] == "evaluate: stopped by SIGTERM", result.stderr
