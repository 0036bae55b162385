"""Which files are data: the one rule Preprocess, schema sampling, a local run's ``--data`` and its pre-scan share.

A data file's name ends with ``.csv``, ``.csv.gz``, ``.parquet`` or ``.pq`` (any case); nothing whose name, or the
name of a folder it is in (below the folder given), starts with ``.`` or ``_`` is data: hidden files, Spark's and
Hadoop's ``_SUCCESS`` markers and ``_temporary/`` folders, this tool's own work folders.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from containerlib.names import DATA_SUFFIXES, PARQUET_SUFFIXES

HIDDEN_PREFIXES = (".", "_")


def is_hidden(relative: str | PurePosixPath) -> bool:
    """Whether a path below a folder is hidden: any part of it starts with ``.`` or ``_``."""
    return any(part.startswith(HIDDEN_PREFIXES) for part in PurePosixPath(relative).parts)


def is_data_name(name: str) -> bool:
    """Whether a file name has a data suffix (the kind of table it holds)."""
    return name.lower().endswith(DATA_SUFFIXES)


def is_data_file(relative: str | PurePosixPath) -> bool:
    """Whether a file below a folder (its path relative to the folder, or an S3 key after a prefix) is data."""
    return not is_hidden(relative) and is_data_name(PurePosixPath(relative).name)


def path_below_prefix(prefix: str, key: str) -> str:
    """The path of an object below what its S3 prefix names, the part the rule judges: from the path component the
    prefix ends in, when it ends inside one (``in/da`` + ``in/data.csv`` -> ``data.csv``), else from the next
    (``in/`` or ``in`` + ``in/a/b.csv`` -> ``a/b.csv``); an object the prefix names whole by its name."""
    rest = key[len(prefix) :]
    if not prefix or prefix.endswith("/") or rest.startswith("/"):
        below = rest.lstrip("/")
    else:
        below = key[prefix.rfind("/") + 1 :]
    return below or key.rsplit("/", 1)[-1]


def visible_files(folder: Path) -> list[Path]:
    """Every file under ``folder`` (recursively) that is not hidden, sorted."""
    return sorted(
        path for path in folder.rglob("*") if path.is_file() and not is_hidden(path.relative_to(folder).as_posix())
    )


def data_files(folder: Path) -> list[Path]:
    """Every data file under ``folder`` (recursively), sorted."""
    return [path for path in visible_files(folder) if is_data_name(path.name)]


def unread_entries(folder: Path) -> list[tuple[Path, str]]:
    """What under ``folder`` looks like data but is not read, and why: a table compressed other than as ``.csv.gz``
    (``.csv.bz2``, ``.csv.zip``, ``.parquet.gz``...), and a symbolic link to a folder (never followed: a link may
    loop, or lead out of the data). Hidden entries are not data and are not listed. For a warning naming each."""
    found: list[tuple[Path, str]] = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if is_hidden(relative):
            continue
        if path.is_symlink() and path.is_dir():
            found.append((path, "a symbolic link to a folder, which is not followed; give the folder itself"))
        elif path.is_file():
            why = unread_table(path.name)
            if why:
                found.append((path, why))
    return found


def unread_table(name: str) -> str | None:
    """Why a file named ``name`` looks like a table but is not read (compressed otherwise than ``.csv.gz``), or None."""
    if is_data_name(name):
        return None
    table, _, compression = name.lower().rpartition(".")
    if compression and table.endswith(DATA_SUFFIXES):
        return f"a table compressed as .{compression}, which is not read; only .csv.gz is: recompress it"
    return None


def is_parquet(path: str | Path) -> bool:
    """A Parquet file by its suffix (every other data file is CSV)."""
    return str(path).lower().endswith(PARQUET_SUFFIXES)


def is_gzip(path: str | Path) -> bool:
    """A gzip-compressed CSV file by its suffix."""
    return str(path).lower().endswith(".gz")
