"""The project's own Python source, read and parsed once per process for the contract tests that scan it (the layers'
import graph, the error words, the content types, the shared names, the one ``local_server``).

Parsing the library's ~300 modules is about a second of CPU; each scanning module used to parse them again, and
test_layers.py at import, so on both xdist workers. The scanning modules run on one worker together (SDK_MODULES in
tests/conftest.py) and share these trees. The trees are the parser's own: callers read them, never change them.
"""

from __future__ import annotations

import ast
import functools
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the package and the container code
LIBRARY = ("pipeline", "preprocessing", "evaluation", "containerlib", "dataquality", "serving")


@functools.cache
def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@functools.cache
def tree(path: Path) -> ast.Module:
    """``path`` parsed (kept for the process: the files do not change during a test session)."""
    return ast.parse(text(path), filename=str(path))


@functools.cache
def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of ``path``'s tree in ``ast.walk``'s order, walked once per process: the scans walk each file's tree
    several times between them (two walks in a scan, five over the scanning modules), and ``ast.walk`` is most of a
    scan's CPU."""
    return tuple(ast.walk(tree(path)))


@functools.cache
def python_files(folder: str) -> tuple[Path, ...]:
    """Every ``.py`` file under ``ROOT/folder``, sorted (none when the folder does not exist)."""
    return tuple(sorted((ROOT / folder).rglob("*.py"))) if (ROOT / folder).is_dir() else ()


def project_files() -> list[str]:
    """The project's Python files outside the tests, relative to ``ROOT``, sorted: hidden folders (the virtual
    environment ``.venv`` among them), ``tests`` and ``venv`` are left out, and not walked into (the virtual
    environment holds tens of thousands of files)."""
    found = []
    for folder, names, files in os.walk(ROOT):
        names[:] = [name for name in names if not (name.startswith(".") or name in ("tests", "venv"))]
        relative = Path(folder).relative_to(ROOT)
        found += [(relative / name).as_posix() for name in files if name.endswith(".py") and not name.startswith(".")]
    return sorted(found)
