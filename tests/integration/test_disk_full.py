"""A full disk is said as what it is, wherever a run meets it: the path written (or the folder a job writes under),
the space left and what to do; never "unexpected OSError" without a path, "no output" without a cause, or a
traceback. The work dir is a small tmpfs of its own (a user and mount namespace: no privileges needed), filled at
different points of a real run by giving it different sizes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.definition.code_bundles import REPOSITORY_ROOT

RUN = (
    'mount -t tmpfs -o size={size} none "$0" && "$1" -m pipeline run --workdir "$0/work" --quiet --no-tracking '
    "--param Epochs=2"
)


def _unshare_works(folder: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", 'mount -t tmpfs -o size=64k none "$0"',
         str(folder)], capture_output=True, timeout=30,
    )  # fmt: skip
    return probe.returncode == 0


@pytest.mark.parametrize("size", ["400k", "1m", "1500k", "2m"])
def test_a_full_work_dir_names_the_path_and_the_way_out(tmp_path: Path, size: str) -> None:
    mount = tmp_path / "disk"
    mount.mkdir()
    if not _unshare_works(mount):
        pytest.skip("no unprivileged user and mount namespaces here (unshare): cannot make a small disk")
    result = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", RUN.format(size=size), str(mount),
         sys.executable],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={"PYTHONPATH": str(REPOSITORY_ROOT), "PATH": "/usr/bin:/bin", "HOME": str(Path.home()),
             **{name: value for name, value in os.environ.items() if name.startswith("LLPIPE_")}},
    )  # fmt: skip
    error = result.stderr
    assert result.returncode == 1, error
    for unclear in ("unexpected", "Traceback", "not named", "code 1: no output\n"):
        assert unclear not in error, error
    (line,) = [line for line in error.splitlines() if line.startswith("llpipe run:")]
    written = f"no space left on the device writing {mount}/work/" in line
    job = "no space left on the device writing under /opt/ml/processing/output" in line
    full = f"the disk holding its logs and sandbox, {mount}/work/executions/" in line and "is full" in line
    assert written or job or full, line
    if full:  # the cause first: a job that could not write its log leaves only "no output" behind
        assert re.search(r"exited with code \d+: the disk holding its logs and sandbox", line), line
    assert "MB free" in line and ("another work dir" in line or "VolumeSizeInGB" in line), line
