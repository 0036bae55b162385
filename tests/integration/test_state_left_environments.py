"""Issue 42, state left: building a processing image's environment left pip's CA bundle (``tmp*cacert.pem``, 275 kB,
from the Python 3.9 ``ensurepip`` that runs pip from its wheel) in the system temp folder, once per build. The
build's commands now get a temp folder of their own, removed with whatever they left, built or failed."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from pipeline.core.images import ProcessingImage
from pipeline.local.environments import EnvironmentBuildError, ImageEnvironments, find_python


@pytest.fixture
def system_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A system temp folder of the test's own, for this process and the build's commands."""
    folder = tmp_path / "system-temp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    return folder


def test_a_build_with_pip_leaves_nothing_in_the_temp_folder(tmp_path: Path, system_temp: Path) -> None:
    python = find_python("3.9")
    if python is None:
        pytest.skip("no Python 3.9 here: its ensurepip is what left the CA bundle")
    # pip itself as the one pin: ensurepip installs it into the virtualenv (the CA bundle was left then), and the
    # install step finds it satisfied without the network
    image = ProcessingImage("pip-only", "1.0-1", "pip-only-image", "3.9", (("pip", "23.0.1"),), ())
    built = ImageEnvironments(tmp_path / "cache", locate_python=lambda version: python).ensure(image)
    assert built.exact and built.libraries == {"pip": "23.0.1"}
    assert sorted(path.name for path in system_temp.iterdir()) == []  # before: ['tmpXXXXcacert.pem']


def test_a_failed_build_leaves_nothing_in_the_temp_folder_either(tmp_path: Path, system_temp: Path) -> None:
    leaves_temp = tmp_path / "python-leaving-temp"  # a Python whose venv writes a temp file, then fails
    leaves_temp.write_text('#!/bin/sh\nmktemp > /dev/null\necho "Error: the disk is full" >&2\nexit 1\n')
    leaves_temp.chmod(0o755)
    bare = ProcessingImage("bare", "1.0-1", "bare-image", "3.9", (), ())
    environments = ImageEnvironments(tmp_path / "cache", locate_python=lambda version: leaves_temp)
    with pytest.raises(EnvironmentBuildError, match="the disk is full"):
        environments.ensure(bare)
    assert sorted(path.name for path in system_temp.iterdir()) == []
