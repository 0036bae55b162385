"""A stop signal while the ``llpipe`` command is still importing its modules ends it with one line and the signal's
exit code, not a traceback of the import it interrupted; importing ``pipeline`` as a library changes no handler.

The signal is sent by the process to itself right after ``import pipeline`` (where the command's start-up spends its
time), as ``python -m pipeline`` and the ``llpipe`` script see it (``argv[0]`` is ``-m`` or the script's path)."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from pipeline.definition.code_bundles import REPOSITORY_ROOT

PROBE = """
import os, signal, sys, time
sys.argv[0] = {argv0!r}
# a program's usual start, whatever the test runner inherited (a background job gets SIGINT ignored)
signal.signal(signal.SIGINT, signal.default_int_handler)
for number in (signal.SIGTERM, signal.SIGHUP):
    signal.signal(number, signal.SIG_DFL)
for number in {ignored}:  # inherited ignored, as a background job of a non-interactive shell gets SIGINT
    signal.signal(number, signal.SIG_IGN)
import pipeline
os.kill(os.getpid(), signal.{name})
time.sleep(30)
print("not stopped")
"""


def _probe(argv0: str, name: str, ignored: tuple[int, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROBE.format(argv0=argv0, name=name, ignored=ignored)],
        capture_output=True, text=True, timeout=120,
        env={"PYTHONPATH": str(REPOSITORY_ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip


@pytest.mark.parametrize("argv0", ["-m", "/usr/local/bin/llpipe", "llpipe"])
@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_stop_while_the_command_starts_is_one_line(argv0: str, name: str) -> None:
    result = _probe(argv0, name)
    number = getattr(signal, name)
    assert (result.returncode, result.stderr, result.stdout) == (128 + number, f"llpipe: stopped by {name}\n", "")


@pytest.mark.parametrize(("argv0", "name"), [("-m", "SIGINT"), ("llpipe", "SIGTERM")])
def test_a_stop_inherited_ignored_while_the_command_starts_is_acted_on_too(argv0: str, name: str) -> None:
    """``make run &`` or a CI script's background job: SIGINT (and here the others) inherited ignored was dropped
    while the command imported, and the run went on to the end with exit 0."""
    number = getattr(signal, name)
    result = _probe(argv0, name, ignored=(int(signal.SIGINT), int(number)))
    assert (result.returncode, result.stderr, result.stdout) == (128 + number, f"llpipe: stopped by {name}\n", "")


def test_importing_pipeline_as_a_library_keeps_the_programs_handlers() -> None:
    result = _probe("/home/me/analysis.py", "SIGINT")
    assert result.returncode != 130 and "KeyboardInterrupt" in result.stderr  # Python's own Ctrl-C, unchanged
