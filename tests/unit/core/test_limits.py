"""Process groups' resident memory measured from one pass over /proc, for every instance of a job at once."""

from __future__ import annotations

import os
import subprocess
import sys

from pipeline.core.limits import groups_rss


def test_each_group_gets_its_own_processes_memory() -> None:
    holds = "import sys; data = bytearray(64 << 20); sys.stdout.write('ready\\n'); sys.stdout.flush(); input()"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", holds], stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
        )
        for _ in range(2)
    ]
    try:
        for child in children:
            assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        measured = groups_rss([child.pid for child in children] + [os.getpgrp()])
        assert set(measured) == {children[0].pid, children[1].pid, os.getpgrp()}
        assert all(measured[child.pid] >= 64 << 20 for child in children)
        assert measured[os.getpgrp()] > 0  # this test's own group: this process at least
    finally:
        for child in children:
            child.kill()
            child.communicate()  # waits, and closes its pipes
    assert groups_rss([children[0].pid]) == {children[0].pid: 0}  # nothing left in that group
