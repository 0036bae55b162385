"""A code bundle's bytecode is compiled once per bundle and interpreter and used by each instance's copy of it, never
for other source, with tracebacks naming the instance's files (issue 37)."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.local.jobs.bytecode import bytecode_for, place_bytecode

PYTHON = Path(sys.executable)


def bundle(folder: Path, body: str = "VALUE = 1\n") -> Path:
    """A bundle as a job's code input holds it: an entry script and a package."""
    (folder / "package").mkdir(parents=True)
    (folder / "package" / "__init__.py").write_text("")
    (folder / "package" / "module.py").write_text(body)
    (folder / "entry.py").write_text("from package.module import VALUE\nprint(VALUE)\n")
    return folder


def run(code: Path, *options: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    environment.pop("PYTHONPATH", None)
    command = [str(PYTHON), *options, "entry.py"]
    return subprocess.run(command, cwd=code, env=environment, capture_output=True, text=True, check=False)


def test_a_copy_of_the_bundle_imports_the_compiled_modules(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    compiled = bytecode_for(PYTHON, bundle(tmp_path / "bundle"), cache)
    assert compiled is not None and compiled.parent == cache / "bytecode"
    assert list(compiled.rglob("*.pyc")) and not list(compiled.rglob("*.py"))
    assert bytecode_for(PYTHON, tmp_path / "bundle", cache) == compiled  # compiled once
    copy = shutil.copytree(tmp_path / "bundle", tmp_path / "instance")
    place_bytecode(compiled, copy)
    verbose = run(copy, "-v")
    assert verbose.stdout.strip() == "1"
    assert f"{copy / 'package' / 'module.py'}" in verbose.stderr
    assert "__pycache__" in verbose.stderr and " matches " in verbose.stderr  # the placed pyc was used
    assert [path.name for path in (cache / "bytecode").iterdir()] == [compiled.name]  # no build folder left


def test_changed_source_is_run_not_the_bytecode(tmp_path: Path) -> None:
    compiled = bytecode_for(PYTHON, bundle(tmp_path / "bundle"), tmp_path / "cache")
    assert compiled is not None
    copy = shutil.copytree(tmp_path / "bundle", tmp_path / "instance")
    place_bytecode(compiled, copy)
    (copy / "package" / "module.py").write_text("VALUE = 2\n")  # same size, other bytes
    assert run(copy).stdout.strip() == "2"


def test_a_traceback_names_the_instance_file(tmp_path: Path) -> None:
    compiled = bytecode_for(PYTHON, bundle(tmp_path / "bundle", "raise ValueError('bad input')\n"), tmp_path / "cache")
    assert compiled is not None
    copy = shutil.copytree(tmp_path / "bundle", tmp_path / "instance")
    place_bytecode(compiled, copy)
    failed = run(copy)
    assert failed.returncode == 1
    assert f'File "{copy / "package" / "module.py"}"' in failed.stderr
    assert str(tmp_path / "cache") not in failed.stderr


def test_a_bundle_that_does_not_compile_gets_no_bytecode(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert bytecode_for(PYTHON, bundle(tmp_path / "bundle", "def broken(:\n"), cache) is None
    assert list((cache / "bytecode").iterdir()) == []  # the build folder removed
    assert bytecode_for(PYTHON, tmp_path / "empty", cache) is None  # no code input there


def test_a_copy_the_disk_cannot_hold_is_removed_and_the_instance_compiles_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a full disk while placing the pycs failed the step with shutil's list of copy errors instead of the
    job meeting the disk itself and saying so (the disk-full test's work dir)."""
    compiled = bytecode_for(PYTHON, bundle(tmp_path / "bundle"), tmp_path / "cache")
    assert compiled is not None
    copy = shutil.copytree(tmp_path / "bundle", tmp_path / "instance")
    copied: list[str] = []

    def copy_until_full(source: str, target: str, **_: object) -> str:
        if copied:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), target)
        copied.append(shutil.copyfile(source, target))
        return target

    copytree = shutil.copytree
    monkeypatch.setattr(
        shutil, "copytree", lambda *args, **kwargs: copytree(*args, **kwargs, copy_function=copy_until_full)
    )
    place_bytecode(compiled, copy)
    monkeypatch.undo()
    assert copied and not list(copy.rglob("__pycache__"))  # the one pyc copied went with its folder
    assert run(copy).stdout.strip() == "1"
