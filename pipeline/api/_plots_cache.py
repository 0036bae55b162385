"""An execution's report plots, rendered once per report content in the work dir's ``plots-cache/`` and copied into
``executions/<id>/plots/``: the one path of the end-of-run summary and of the MLflow logger (``LocalExecution.plots``).

Two executions with equal reports (a ``--no-cache`` rerun of the same data and parameters) share one rendering, and
a rerun imports no matplotlib. A work dir without the rendering copies it from the user cache (``plots/`` under
:func:`~pipeline.core.files.user_cache_dir`, keyed also by matplotlib's version) when an earlier work dir rendered the
same report there: a fresh work dir on the same table and parameters (a test's) renders nothing. Every rendering and
an execution's copies are checked against their entry before reuse (:mod:`pipeline.core.verified`): damaged ones are
rendered again, with a warning naming them.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

CACHE_FOLDER = "plots-cache"  # <workdir>/plots-cache/<key[:32]>/


def execution_plots(report_path: Path, folder: Path) -> list[Path]:
    """The report's plots in ``folder`` (``<workdir>/executions/<id>/plots``), in the order
    :func:`pipeline.api.plots.render_plots` gives them: reused while whole, else copied from the work dir's
    rendering of the same report (rendered now when it has none). PNGs left in ``folder`` by a version that kept
    no entry are rendered again, or shown as they are where the folder cannot be written (a read-only work dir)."""
    import pipeline.api.plots
    from pipeline.core.verified import reuse_or_build

    key = pipeline.api.plots.plots_key(report_path)
    cache_root = Path(folder).parent.parent.parent / CACHE_FOLDER  # <workdir>/executions/<id>/plots

    def copy() -> list[Path]:
        rendered, names = _shared_rendering(report_path, cache_root, key)
        folder.mkdir(parents=True, exist_ok=True)
        for name in names:
            shutil.copyfile(rendered / name, folder / name)
        return [folder / name for name in names]

    return reuse_or_build(folder, key, copy, earlier="*.png")


def _shared_rendering(report_path: Path, cache_root: Path, key: str) -> tuple[Path, list[str]]:
    """The folder of the report's rendering in the work dir's plots cache and its plots' names, rendered now when
    absent or damaged: privately, then renamed, so runs at once in one work dir never share a folder."""
    import pipeline.api.plots
    from pipeline.core.verified import ENTRY_FILE, entry_document, verified_names

    rendered = cache_root / key[:32]
    names = verified_names(rendered, key)
    if names is not None:
        return rendered, names
    cache_root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=cache_root, prefix=".rendering-"))
    user_root, user_key = _user_rendering(key)
    try:
        paths = _copied(user_root, user_key, staging) if user_root is not None else None
        if paths is None:
            paths = pipeline.api.plots.render_plots(report_path, staging)
            if user_root is not None:
                _publish(staging, paths, user_root, user_key)
        (staging / ENTRY_FILE).write_text(json.dumps(entry_document(key, paths)))
        shutil.rmtree(rendered, ignore_errors=True)  # damaged or of an older layout
        os.rename(staging, rendered)
    except OSError:  # another run renamed its rendering first: its own, if whole
        names = verified_names(rendered, key)
        if names is not None:
            return rendered, names
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # gone once renamed
    return rendered, [path.name for path in paths]


def _user_rendering(key: str) -> tuple[Path | None, str]:
    """The user cache's folder of renderings and the key of this report's there (the report's key and matplotlib's
    version: another matplotlib may draw otherwise); no folder when the cache folder cannot be named."""
    from importlib.metadata import PackageNotFoundError, version

    from pipeline.core.errors import ConfigError
    from pipeline.core.files import user_cache_dir
    from pipeline.core.verified import key_of

    try:
        matplotlib = version("matplotlib")
    except PackageNotFoundError:
        matplotlib = ""
    try:
        return user_cache_dir() / "plots", key_of(key, f"matplotlib {matplotlib}")
    except ConfigError:  # a file in the cache folder's place: the work dir's rendering is enough
        return None, key


def _copied(user_root: Path, user_key: str, staging: Path) -> list[Path] | None:
    """The user cache's rendering of ``user_key`` copied into ``staging`` (its plots in order), None when it has
    none whole (a damaged one says so and is rendered again)."""
    from pipeline.core.verified import verified_names

    rendered = user_root / user_key[:32]
    names = verified_names(rendered, user_key)
    if names is None:
        return None
    try:
        for name in names:
            shutil.copyfile(rendered / name, staging / name)
    except OSError:  # removed under us by another run replacing a damaged one: render
        return None
    return [staging / name for name in names]


def _publish(staging: Path, paths: list[Path], user_root: Path, user_key: str) -> None:
    """Keep a copy of the plots just rendered in the user cache, renamed into place whole; a cache that cannot be
    written keeps nothing (the run goes on)."""
    from pipeline.core.verified import ENTRY_FILE, entry_document

    try:
        user_root.mkdir(parents=True, exist_ok=True)
        private = Path(tempfile.mkdtemp(dir=user_root, prefix=".rendering-"))
    except OSError:
        return
    try:
        copies = [private / path.name for path in paths]
        for path, copy in zip(paths, copies, strict=True):
            shutil.copyfile(path, copy)
        (private / ENTRY_FILE).write_text(json.dumps(entry_document(user_key, copies)))
        shutil.rmtree(user_root / user_key[:32], ignore_errors=True)  # damaged, if any
        os.rename(private, user_root / user_key[:32])
    except OSError:  # another run published first, or the cache refused: either way nothing more to do
        pass
    finally:
        shutil.rmtree(private, ignore_errors=True)
