"""Cache entries verified against what they were written for before reuse, and rebuilt with a warning when not.

Every cache llpipe keeps (a DataFrame's CSV, an execution's plots, a cached step's outputs, the definition, an image's
environment) stores beside its entry a digest of what it holds and the key it was built for; a reader checks both
before reusing it. A damaged entry (truncated, edited, another file put there) is discarded and rebuilt, and one line
says so, naming the entry by its path on this machine: never reused as if it were whole.

A file's fingerprint holds its size, modification time and SHA-256: while size and time are unchanged the file is
taken as written (no re-reading of gigabytes of shards per run); once either differs (a copied work dir keeps the
bytes, not always the times) the digest decides.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pipeline.core.errors import LlpipeWarning

CHUNK = 1 << 20


class DamagedCacheEntry(LlpipeWarning):
    """A cache entry did not match its key or digest: it was discarded and is being rebuilt."""


def warn_damaged(entry: Path | str, why: str, action: str = "rebuilding it") -> None:
    """One line: ``cache entry <entry> is damaged (<why>); <action>``, as a :class:`DamagedCacheEntry` warning."""
    warnings.warn(f"cache entry {entry} is damaged ({why}); {action}", DamagedCacheEntry, stacklevel=3)


def file_sha256(path: Path) -> str:
    """The SHA-256 of the file's bytes, read in chunks (memory bounded whatever its size)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fingerprint(files: Mapping[str, Path]) -> dict[str, dict[str, Any]]:
    """Name -> ``{"size", "mtime_ns", "sha256"}`` of each file, what :func:`first_change` checks later."""
    prints = {}
    for name, path in sorted(files.items()):
        status = Path(path).stat()
        prints[name] = {"size": status.st_size, "mtime_ns": status.st_mtime_ns, "sha256": file_sha256(path)}
    return prints


def first_change(recorded: Mapping[str, Any], files: Mapping[str, Path]) -> str | None:
    """Why ``files`` (name -> path) no longer are what ``recorded`` (a :func:`fingerprint`) held, or None when they
    are: a file missing, added, of another size, or (once its time changed) of other bytes."""
    if not isinstance(recorded, Mapping):
        return "its fingerprint is not readable"
    for name in sorted(set(recorded) - set(files)):
        return f"{name} is missing"
    for name in sorted(set(files) - set(recorded)):
        return f"{name} was added"
    for name, path in sorted(files.items()):
        expected = recorded[name] if isinstance(recorded[name], Mapping) else {}
        try:
            status = Path(path).stat()
        except OSError:
            return f"{name} is missing"
        if status.st_size != expected.get("size"):
            return f"{name} holds {status.st_size} bytes, {expected.get('size')} when written"
        if status.st_mtime_ns != expected.get("mtime_ns") and file_sha256(path) != expected.get("sha256"):
            return f"{name} was changed since it was written (its SHA-256 differs)"
    return None


def files_under(path: Path) -> dict[str, Path]:
    """Every file at or under ``path`` by its path relative to ``path`` (``.`` for a file itself); hidden temporary
    files of an atomic write in progress left out."""
    path = Path(path)
    if path.is_file():
        return {".": path}
    if not path.is_dir():
        return {}
    return {
        child.relative_to(path).as_posix(): child
        for child in sorted(path.rglob("*"))
        if child.is_file() and not (child.name.startswith(".") and child.name.endswith(".tmp"))
    }


ENTRY_FILE = ".llpipe-entry.json"  # beside the files of a folder entry: its key, their names and fingerprints


def key_of(*parts: bytes | str) -> str:
    """The SHA-256 of ``parts`` (each length-prefixed, so two splits of the same bytes differ)."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


def entry_document(key: str, paths: list[Path]) -> dict[str, Any]:
    """What an entry file holds for ``paths`` (files of one folder) built for ``key``: their names in order and
    their fingerprints."""
    return {"key": key, "names": [path.name for path in paths], "files": fingerprint({p.name: p for p in paths})}


def verified_names(folder: Path, key: str, entry_name: str = ENTRY_FILE) -> list[str] | None:
    """The names of the files the entry in ``folder`` lists, when it was written for ``key`` and they are as
    written; None otherwise: no entry or another key quietly, a damaged one with a warning naming it."""
    import json

    try:
        entry = json.loads((Path(folder) / entry_name).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        warn_damaged(folder, f"{entry_name} is not readable: {type(error).__name__}")
        return None
    if not isinstance(entry, dict) or entry.get("key") != key:
        return None  # written for another key (an older layout): rebuilt
    names = entry.get("names")
    if not isinstance(names, list) or not all(isinstance(name, str) and "/" not in name for name in names):
        warn_damaged(folder, f"{entry_name} lists no file names")
        return None
    why = first_change(entry.get("files"), {name: Path(folder) / name for name in names})
    if why:
        warn_damaged(folder, why)
        return None
    return names


def reuse_or_build(folder: Path, key: str, build: Callable[[], list[Path]], earlier: str = "") -> list[Path]:
    """The files of the entry in ``folder`` when it was written for ``key`` and they are as written (in the order
    ``build`` returned them); else ``build()`` writes them again and the entry is written atomically after them. A
    damaged entry says so (:func:`warn_damaged`); one of another key, or none, is built without a word. Files
    matching ``earlier`` in a folder without an entry (written before entries were kept) are rebuilt too, or, where
    the folder cannot be written (a read-only work dir), returned as they are: nothing else can be shown."""
    import json

    from containerlib.file_errors import is_write_refusal
    from pipeline.core.files import write_text_atomically

    folder = Path(folder)
    names = verified_names(folder, key)
    if names is not None:
        return [folder / name for name in names]
    before = sorted(folder.glob(earlier)) if earlier and folder.is_dir() else []
    try:
        built = [Path(path) for path in build()]
    except OSError as error:
        if before and not (folder / ENTRY_FILE).exists() and is_write_refusal(error):
            return before
        raise
    entry = entry_document(key, [path for path in built if path.parent == folder])
    write_text_atomically(folder / ENTRY_FILE, json.dumps(entry, indent=1) + "\n")
    return built
