"""The container packages (``preprocessing``, ``evaluation``, ``containerlib``, ``dataquality``, ``serving``) are
top-level packages with generic names, installed beside ``pipeline``. A user's module of the same name earlier on
``sys.path`` (``./evaluation.py`` in a notebook's folder, which Jupyter and ``python -c`` put first) would be imported
in their place and break ``pipeline``; ``import pipeline`` therefore loads the installed packages regardless.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

CONTAINER_PACKAGES = ("containerlib", "dataquality", "evaluation", "preprocessing", "serving")
INSTALLED = Path(__file__).resolve().parents[2]  # the folder holding pipeline/ and the container packages
WAY_OUT = f"rename yours (any name but {', '.join(CONTAINER_PACKAGES)})"


class ShadowedPackageWarning(UserWarning):
    """A module of the user's has a container package's name: ``import <name>`` now gives pipeline's package."""


def _origin(where: str | None) -> Path | None:
    return Path(where).resolve() if where else None


def protect_container_packages(root: Path = INSTALLED) -> None:
    """Make each container package installed under ``root`` the one its name imports: when another module of that
    name would be found first, load the installed package under the name and warn naming the other module; when
    another module of that name is already imported, raise ``ImportError`` naming it and the way out."""
    for name in CONTAINER_PACKAGES:
        installed = root / name / "__init__.py"
        if not installed.is_file():
            continue  # not installed beside pipeline: nothing to protect
        loaded = sys.modules.get(name)
        if loaded is not None:
            origin = _origin(getattr(loaded, "__file__", None))
            if origin != installed:
                raise ImportError(
                    f"{origin or repr(loaded)} was imported as {name!r}, the name of the container package pipeline "
                    f"needs ({installed.parent}): {WAY_OUT}, then restart the interpreter",
                    name=name,
                    path=str(origin) if origin else None,
                )
            continue
        spec = importlib.util.find_spec(name)
        if spec is None:  # not on sys.path at all: pipeline's own is the only one
            _load(name, installed)
            continue
        found = _origin(spec.origin) or _origin(next(iter(spec.submodule_search_locations or []), None))
        if found == installed:
            continue
        _load(name, installed)
        where = found or name  # a namespace package's folder
        warnings.warn(
            f"{where} has the name of pipeline's container package {name!r} and comes first on sys.path: pipeline "
            f"loaded its own ({installed.parent}), so `import {name}` gives pipeline's package; {WAY_OUT}",
            ShadowedPackageWarning,
            stacklevel=3,
        )


def _load(name: str, installed: Path) -> None:
    """Import the package at ``installed`` (its ``__init__.py``) under ``name``, its submodules from its folder."""
    spec = importlib.util.spec_from_file_location(name, installed, submodule_search_locations=[str(installed.parent)])
    assert spec is not None and spec.loader is not None  # a file location always gives both
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
