"""Writing a file so readers never see half of it: under a temporary name beside it, renamed when complete.

The one helper for the ``pipeline`` side; the container scripts (``preprocessing/``, ``evaluation/``) keep their own.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """A temporary path beside ``target`` to write; renamed onto ``target`` when the block ends, removed on error.

    The name holds the process id and a random token, so concurrent writers of the same target never share a file,
    not even processes of different containers (pid namespaces) writing into one work dir. An error that names no
    file (a write refused by a full disk) is raised naming ``target``.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    try:
        yield temporary
        os.replace(temporary, target)
    except OSError as error:
        if error.filename is None:  # a write's error (disk full) names no file: name the one being written
            raise OSError(error.errno, error.strerror, str(target)) from error
        raise
    finally:
        with contextlib.suppress(OSError):  # on a read-only disk even this refuses: the error above is the one to say
            temporary.unlink(missing_ok=True)


def write_bytes_atomically(target: Path, data: bytes) -> None:
    """``target`` holds ``data``, or (on error) whatever it held before."""
    with atomic_path(target) as temporary:
        temporary.write_bytes(data)


def write_text_atomically(target: Path, text: str) -> None:
    """``target`` holds ``text`` (UTF-8), or (on error) whatever it held before."""
    write_bytes_atomically(target, text.encode("utf-8"))


def user_cache_dir(env: Mapping[str, str] = os.environ) -> Path:
    """Where llpipe keeps what outlives a work dir: ``$LLPIPE_CACHE_DIR``, else ``$XDG_CACHE_HOME/llpipe``, else
    ``~/.cache/llpipe``."""
    if env.get("LLPIPE_CACHE_DIR"):
        return _a_folder(Path(env["LLPIPE_CACHE_DIR"]).expanduser(), "LLPIPE_CACHE_DIR")
    if env.get("XDG_CACHE_HOME"):
        return _a_folder(Path(env["XDG_CACHE_HOME"]).expanduser(), "XDG_CACHE_HOME") / "llpipe"
    return Path.home() / ".cache" / "llpipe"


def _a_folder(path: Path, variable: str) -> Path:
    """``path`` unless a file is in its place (or in a parent's): then a ``ConfigError`` naming ``variable``, before
    anything is built there (it surfaced as "Not a directory: .../envs" in the middle of a run)."""
    from pipeline.core.errors import ConfigError

    in_the_way = next((part for part in (path, *path.parents) if part.exists() and not part.is_dir()), None)
    if in_the_way is not None:
        raise ConfigError(
            f"{variable}={path}: {in_the_way} is a file, not a folder; llpipe keeps its cache there (image "
            f"environments, definitions): point {variable} at a folder, or unset it"
        )
    return path
