"""The folders are the layers: no module imports a layer above its own (docs/ARCHITECTURE.md)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VOCABULARY = {"pipeline.names", "pipeline.errors", "pipeline.files", "pipeline.sharding", "pipeline.processes"}


def imported(folder: str) -> dict[str, set[str]]:
    """The modules of this project (pipeline, preprocessing, evaluation, containerlib) each file in a folder imports."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / folder).rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        ours = {n for n in names if n.split(".")[0] in ("pipeline", "preprocessing", "evaluation", "containerlib")}
        found[str(path.relative_to(ROOT))] = ours
    return found


def test_the_shared_vocabulary_imports_nothing_of_pipeline() -> None:
    for module in VOCABULARY:
        path = module.replace(".", "/") + ".py"
        assert {m for m in imported("pipeline")[path] if not m.startswith("containerlib")} == set(), path


def test_the_local_linear_learner_does_not_reach_up_into_the_runner() -> None:
    below = VOCABULARY | {"evaluation.linear_learner_model"}  # + the model reader and the container library
    for path, modules in imported("pipeline/local/linear_learner").items():
        upward = {
            m for m in modules if not m.startswith(("pipeline.local.linear_learner", "containerlib")) and m not in below
        }
        assert upward == set(), f"{path} imports {upward}"


def test_only_the_cli_imports_the_cli() -> None:
    for path, modules in imported("pipeline").items():
        if not path.startswith(("pipeline/cli/", "pipeline/__main__.py")):
            assert not any(m.startswith("pipeline.cli") for m in modules), path


def test_local_jobs_reach_the_contract_not_the_scheduler() -> None:
    for path, modules in imported("pipeline/local/jobs").items():
        assert "pipeline.local.interpreter" not in modules, path


def test_container_code_imports_no_pipeline_module() -> None:
    for folder in ("preprocessing", "evaluation", "containerlib"):
        for path, modules in imported(folder).items():
            assert not any(m.startswith("pipeline") for m in modules), path


def test_the_container_library_is_below_the_container_jobs() -> None:
    """containerlib serves Preprocess, Evaluate and the pipeline alike: it imports none of them."""
    for path, modules in imported("containerlib").items():
        assert all(m.startswith("containerlib") for m in modules), f"{path} imports {modules}"


def test_the_container_jobs_do_not_import_each_other() -> None:
    """What both jobs need is in the library: Preprocess's bundle has no evaluation module and Evaluate's none of
    preprocessing."""
    for folder, other in (("preprocessing", "evaluation"), ("evaluation", "preprocessing")):
        for path, modules in imported(folder).items():
            assert not any(m.startswith(other) for m in modules), path
