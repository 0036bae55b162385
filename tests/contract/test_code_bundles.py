"""Each processing job's code bundle ships exactly what its entry script imports, in package form."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pipeline.definition.code_bundles import BUNDLE_SOURCES, REPOSITORY_ROOT, repository_bundle

CONTAINER_PACKAGES = ("preprocessing", "evaluation", "dataquality", "containerlib", "serving")


def module_file(module: str) -> str:
    """The repository path of a project module (a package is its ``__init__.py``)."""
    path = REPOSITORY_ROOT / module.replace(".", "/")
    return (path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).relative_to(REPOSITORY_ROOT).as_posix()


def imports_of(path: str) -> set[str]:
    """Every project module a file imports (at the top or inside a function), with the packages above each."""
    found: set[str] = set()
    for node in ast.walk(ast.parse((REPOSITORY_ROOT / path).read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            if name.split(".")[0] not in CONTAINER_PACKAGES:
                continue
            parts = name.split(".")
            for end in range(1, len(parts) + 1):
                candidate = REPOSITORY_ROOT / "/".join(parts[:end])
                if candidate.is_dir() or candidate.with_suffix(".py").is_file():  # a module, not a name in one
                    found.add(module_file(".".join(parts[:end])))
    return found


def closure(entry: str) -> set[str]:
    """The entry script and every project module it imports, directly or through others."""
    seen, todo = set(), [entry]
    while todo:
        path = todo.pop()
        if path not in seen:
            seen.add(path)
            todo.extend(imports_of(path))
    return seen


@pytest.mark.parametrize("name", sorted(BUNDLE_SOURCES))
def test_a_bundle_ships_exactly_what_its_entry_imports(name: str) -> None:
    entry, _ = BUNDLE_SOURCES[name]
    bundle = repository_bundle(name)
    shipped = {path for path, _ in bundle.files if path != bundle.entry_point}
    needed = closure(entry) - {entry}
    assert sorted(needed - shipped) == [], f"bundle {name} lacks modules its entry imports"
    assert sorted(shipped - needed) == [], f"bundle {name} ships modules its entry never imports"
    assert dict(bundle.files)[bundle.entry_point] == (REPOSITORY_ROOT / entry).read_bytes()


def test_the_evaluate_bundle_has_no_preprocess_module_and_no_table_reader() -> None:
    """What Evaluate needs of Preprocess's world is in the library: not the job, not pandas' readers."""
    names = [path for path, _ in repository_bundle("evaluate").files]
    assert not any(path.startswith(("preprocessing/", "containerlib/tables/")) for path in names)
    names = [path for path, _ in repository_bundle("preprocess").files]
    assert not any(path.startswith("evaluation/") for path in names)


def test_names_are_unique_across_bundles() -> None:
    """One path, one file: a module two bundles ship is the same bytes in both; the entry scripts differ in name."""
    bundles = [repository_bundle(name) for name in sorted(BUNDLE_SOURCES)]
    assert len({bundle.entry_point for bundle in bundles}) == len(bundles)
    contents: dict[str, bytes] = {}
    for bundle in bundles:
        for path, content in bundle.files:
            assert contents.setdefault(path, content) == content, path
    entries = {bundle.entry_point for bundle in bundles}
    assert not any(Path(path).name in entries for path in contents if "/" in path), "an entry name is also a module"
