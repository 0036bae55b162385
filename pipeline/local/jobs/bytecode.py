"""A code bundle's bytecode, compiled once per bundle and interpreter and put beside each instance's copy of it.

Every local processing instance gets a fresh copy of its code bundle, so without this each job process compiled
the bundle's modules again (~0.05 CPU-s a bundle, every instance of every run). The bundle is compiled once by the
job's own interpreter into ``$LLPIPE_CACHE_DIR/bytecode/<digest of the interpreter and the bundle's files>/``, as
checked-hash pycs (PEP 552): the interpreter uses one only when the hash of the source beside it matches, so a
pyc can never stand in for other code, and a traceback still names the instance's file (the import system sets a
loaded code object's file name to its source's path). Any failure here only costs the compilation it would save.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

from pipeline.core.stale import owned_temp_folder_prefix, sweep_temp_folders
from pipeline.definition.cache import source_digest

BUILD_KIND = "llpipe-bytecode"  # a compilation's own folder in the cache: llpipe-bytecode-<pid>-*, swept once gone
PYCACHE = "__pycache__"
COMPILE_TIMEOUT_SECONDS = 120


def bundle_digest(python: Path, code: Path) -> str:
    """What names the bundle's bytecode: the interpreter and every source file's path and bytes (``source_digest``,
    as the definition cache digests the package)."""
    return hashlib.sha256(f"{python}\0{source_digest(code)}".encode()).hexdigest()[:32]


def compiled_bundle(python: Path, code: Path, cache_dir: Path) -> Path | None:
    """The folder holding the ``__pycache__`` folders of ``code`` compiled by ``python``, compiled now if it is not
    cached; None when it cannot be (the job then compiles its modules itself, as it always could)."""
    try:
        root = cache_dir / "bytecode"
        compiled = root / bundle_digest(python, code)
        if compiled.is_dir():
            return compiled
        root.mkdir(parents=True, exist_ok=True)
        sweep_temp_folders(BUILD_KIND, root)  # what a killed compilation left
        building = Path(tempfile.mkdtemp(dir=root, prefix=owned_temp_folder_prefix(BUILD_KIND)))
        try:
            for source in code.rglob("*.py"):
                target = building / source.relative_to(code)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
            command = [str(python), "-I", "-m", "compileall", "-q", "--invalidation-mode", "checked-hash"]
            result = subprocess.run(
                [*command, str(building)], capture_output=True, timeout=COMPILE_TIMEOUT_SECONDS, check=False
            )
            if result.returncode != 0:  # a module that does not compile: the job reports it, as in the container
                return None
            for source in building.rglob("*.py"):
                source.unlink()
            try:
                building.rename(compiled)
            except OSError:  # another run put the same bundle's bytecode in place first
                pass
            return compiled if compiled.is_dir() else None
        finally:
            shutil.rmtree(building, ignore_errors=True)
    except (OSError, subprocess.SubprocessError):
        return None


def place_bytecode(compiled: Path, code: Path) -> None:
    """Copy the compiled ``__pycache__`` folders beside the instance's copy of the bundle, ``code``. A copy that
    fails (a full disk) is removed whole and the instance compiles its modules itself: the job then meets the disk
    as it would have, and reports it in its own words."""
    placed: list[Path] = []
    try:
        for pycache in compiled.rglob(PYCACHE):
            target = code / pycache.relative_to(compiled)
            if target.parent.is_dir():
                placed.append(target)
                shutil.copytree(pycache, target, dirs_exist_ok=True)
    except (OSError, shutil.Error):
        for target in placed:
            shutil.rmtree(target, ignore_errors=True)


def bytecode_for(python: Path, code: Path, cache_dir: Path) -> Path | None:
    """``compiled_bundle`` for an instance's ``code`` folder, None when there is none (no Python sources)."""
    if not code.is_dir() or not any(code.rglob("*.py")):
        return None
    return compiled_bundle(python, code, cache_dir)
