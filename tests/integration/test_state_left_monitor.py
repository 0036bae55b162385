"""Issue 42, state left: `llpipe monitor` killed with SIGKILL left its copies of the capture behind for ever: the
staging folder of one version's share of the window (in the local S3 folder) and its job's sandbox. They are now
owned by the monitor's process, and the next command's reaper removes them once that process is gone."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import drift_table
from support.capture_files import Captured, write_capture
from test_monitor import GROUP, WINDOW, csv_requests, register_with_baseline

from pipeline.local.s3 import LocalS3
from pipeline.local.workdir import Workdir

LLPIPE = [sys.executable, "-m", "pipeline"]
PREFIX = "s3://llpipe-local/linear-learner-pipeline"


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.parametrize("versions", [1, 2])
def test_a_killed_monitor_leaves_no_copy_once_the_next_command_ran(
    tmp_path: Path, versions: int, image_environment: object
) -> None:
    """One version served the window (its job reads the capture in place, copied into its sandbox) or two (each
    version's share is staged first): SIGKILL while the job runs, then `llpipe executions` finishes it off."""
    workdir = Workdir.at(tmp_path / "work")
    for _ in range(versions):
        register_with_baseline(workdir, tmp_path)
    arns = [f"arn:aws:sagemaker:us-east-1:111122223333:model-package/{GROUP}/{1 + i % versions}" for i in range(300)]
    requests = csv_requests(drift_table.table(rows=300, seed=5))
    captured = [
        Captured(r.time, r.content_type, r.data, model_package_arn=a) for r, a in zip(requests, arns, strict=True)
    ]
    write_capture(LocalS3(workdir.s3).path(f"{PREFIX}/datacapture"), "ep", "AllTraffic", captured)
    argv = [*LLPIPE, "monitor", "--endpoint", "ep", *WINDOW, "--workdir", str(workdir.root)]
    with subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, start_new_session=True) as process:
        staging = LocalS3(workdir.s3).path(f"{PREFIX}/monitoring/.staging")
        try:
            while True:  # until the monitoring job's instance runs from its sandbox (and the share is staged)
                assert process.poll() is None, process.communicate()
                sandboxes = list(workdir.monitoring.glob("*/sandbox"))
                staged = versions == 1 or (staging.is_dir() and any(staging.iterdir()))
                if sandboxes and staged and _processes_mentioning(f"{sandboxes[0]}/"):
                    break
                time.sleep(0.05)
            process.kill()
            process.wait()
        finally:
            if process.poll() is None:
                process.kill()
    for _ in range(600):  # the job's instance dies with its parent; the kernel takes a moment
        if not _processes_mentioning(str(workdir.root)):
            break
        time.sleep(0.05)
    assert list(workdir.monitoring.glob("*/sandbox")) != [] and (versions == 1 or staging.is_dir())  # left
    listed = subprocess.run([*LLPIPE, "executions", "--workdir", str(workdir.root)], capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    assert list(workdir.monitoring.glob("*/sandbox")) == []
    assert not staging.exists()
    assert [path.name for path in workdir.monitoring.glob("*/processing-request.json")] != []  # the record stays
