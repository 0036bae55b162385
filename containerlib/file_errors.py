"""A file system's refusal to write (disk full, quota, read-only, permission) said as what it is: the path, the
space left where known, and what to do; never "unexpected OSError" without a path.

Used by the container scripts' exit messages (``exit_message.report_defect``), the local runner's step failures and
the ``llpipe`` command, each with its own advice (a job's volume parameter, the work dir)."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM)
_WHAT = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
}
_ADVICE = {
    errno.ENOSPC: "free space there or write elsewhere",
    errno.EDQUOT: "free space within the quota or write elsewhere",
    errno.EROFS: "write to a writable location",
    errno.EACCES: "make it writable for this user or write elsewhere",
    errno.EPERM: "make it writable for this user or write elsewhere",
}


def is_write_refusal(error: BaseException) -> bool:
    """Whether ``error`` is the file system refusing a write: full, over quota, read-only, not permitted."""
    return isinstance(error, OSError) and error.errno in WRITE_ERRNOS


def free_bytes(path: str | None) -> int | None:
    """The bytes free on the file system holding ``path`` (or its nearest existing parent), None if unknown."""
    if not path:
        return None
    candidate = Path(path)
    for folder in (candidate, *candidate.parents):
        try:
            return shutil.disk_usage(str(folder)).free
        except OSError:
            continue
    return None


def describe(error: OSError, advice: str = "", needed: int | None = None, folder: str | None = None) -> str:
    """``<what> writing <path> (N MB free there[, M MB needed]): <advice>``; ``advice`` replaces the generic one;
    ``folder``: where the writer writes, named when the error names no file (a write's error names none)."""
    what = _WHAT.get(error.errno or 0, error.strerror or type(error).__name__)
    named = error.filename2 if isinstance(error.filename2, str) else error.filename
    path = named if isinstance(named, str) else None
    if path:
        where = f" writing {path}"
    elif folder:
        where, path = f" writing under {folder}", folder
    else:
        where = " (the file was not named)"
    facts = []
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        free = free_bytes(path)
        if free is not None:
            facts.append(f"{free / 1024 / 1024:,.0f} MB free there")
        if needed:
            facts.append(f"{needed / 1024 / 1024:,.0f} MB needed")
    known = f" ({', '.join(facts)})" if facts else ""
    return f"{what}{where}{known}: {advice or _ADVICE.get(error.errno or 0, 'check the path')}"
