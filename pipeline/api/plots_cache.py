"""An execution's report plots, rendered once per report content in the work dir's ``plots-cache/`` and copied into
``executions/<id>/plots/``: the one path of the end-of-run summary and of the MLflow logger (``LocalExecution.plots``).

Two executions with equal reports (a ``--no-cache`` rerun of the same data and parameters) share one rendering, and
a rerun imports no matplotlib. Both the shared rendering and an execution's copies are checked against their entry
before reuse (:mod:`pipeline.core.verified`): damaged ones are rendered again, with a warning naming them.
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
    try:
        paths = pipeline.api.plots.render_plots(report_path, staging)
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
