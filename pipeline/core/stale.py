"""What a process killed without warning (SIGKILL, the OOM killer, a power cut) leaves behind, found and removed by
the next process: temporary folders named by their owner's pid, and half-written ``.tmp`` files of ``atomic_path``.

A folder or file belongs to a process by the pid in its name; it is stale once that process is gone. Legacy folders
from versions that put no pid in the name are stale after ``LEGACY_AGE_SECONDS`` without a change.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from pathlib import Path

LEGACY_AGE_SECONDS = 24 * 3600
_PARTIAL_FILE = re.compile(r"^\..+\.(\d+)\.[0-9a-f]{12}\.tmp$")  # atomic_path: .<name>.<pid>.<token>.tmp


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (on this machine's pid namespace)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by another user
    return True


def owned_temp_folder_prefix(kind: str) -> str:
    """The prefix of a temporary folder this process owns: ``<kind>-<pid>-`` (what ``sweep_temp_folders`` reads)."""
    return f"{kind}-{os.getpid()}-"


def sweep_temp_folders(kind: str, folder: Path | None = None, legacy: tuple[str, ...] = ()) -> list[Path]:
    """Remove ``<kind>-<pid>-*`` folders under ``folder`` (default: the system temp folder) whose process is gone,
    and folders starting with a ``legacy`` prefix unchanged for a day; the ones removed."""
    folder = Path(folder or tempfile.gettempdir())
    owned = re.compile(rf"^{re.escape(kind)}-(\d+)-")
    removed = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return []
    for entry in entries:
        match = owned.match(entry.name)
        if match:
            stale = not pid_alive(int(match.group(1)))
        elif entry.name.startswith(legacy):
            try:
                stale = time.time() - entry.stat().st_mtime > LEGACY_AGE_SECONDS
            except OSError:
                continue
        else:
            continue
        if stale and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def sweep_partial_files(root: Path) -> list[Path]:
    """Remove the ``.tmp`` files ``atomic_path`` left under ``root`` when its writer was killed; the ones removed."""
    removed = []
    for directory, _, names in os.walk(root):
        for name in names:
            match = _PARTIAL_FILE.match(name)
            if match and not pid_alive(int(match.group(1))):
                path = Path(directory) / name
                try:
                    path.unlink()
                except OSError:
                    continue
                removed.append(path)
    return removed
