"""The folders are the layers (docs/ARCHITECTURE.md): each wing of ``pipeline/`` imports only the wings below it, the
commands reach the local backend only through the API, and the package has no import cycle.

The graph is read from the source with ``ast``: every ``import`` and ``from ... import`` of a ``pipeline`` or
container module, at module level or inside a function (both run, so both count for cycles and layers). Imports
under ``if TYPE_CHECKING:`` never run: they count for the layers (an annotation still names a wing) but not for
cycles. Importing a submodule also runs its package's ``__init__``; that implicit step is not an edge.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

from support import sources

ROOT = Path(__file__).resolve().parents[2]
# container code: the floor, importing no pipeline
CONTAINER = ("preprocessing", "evaluation", "dataquality", "containerlib", "serving")
# wing -> floor (docs/ARCHITECTURE.md; container code is floor 0): a wing imports only wings of lower floors (and
# itself); wings of one floor never import each other
WINGS = {"core": 1, "definition": 2, "linear_learner": 2, "local": 3, "sagemaker": 3, "api": 4, "cli": 5}
ENTRY = {"pipeline": 6, "pipeline.__main__": 6}  # the package's lazy re-exports and ``python -m pipeline``
RUNTIME = ("module", "function")


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    kind: str  # module, function or typing
    line: int

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} ({self.kind} import, line {self.line})"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    """Every module of the package and of the container code, by dotted name."""
    found = {}
    for top in ("pipeline", *CONTAINER):
        for path in sources.python_files(top):
            found[module_name(path)] = path
    return found


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(source: str, tree: ast.AST, known: set[str]) -> list[Edge]:
    """The edges from one module: what each import statement names, resolved to a known module."""
    edges: list[Edge] = []

    def target(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    def visit(node: ast.AST, kind: str) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                found = target(alias.name)
                if found:
                    edges.append(Edge(source, found, kind, node.lineno))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:  # ``from pipeline.local import preflight`` names the module preflight
                found = target(f"{node.module}.{alias.name}") if f"{node.module}.{alias.name}" in known else None
                found = found or target(node.module)
                if found:
                    edges.append(Edge(source, found, kind, node.lineno))
        for child in ast.iter_child_nodes(node):
            if isinstance(node, ast.If) and is_type_checking(node) and child in node.body:
                visit(child, "typing")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and kind == "module":
                visit(child, "function")
            else:
                visit(child, kind)

    visit(tree, "module")
    return edges


@functools.cache
def graph() -> tuple[Edge, ...]:
    """The import graph, read once by the tests below (not at import: collection runs on every xdist worker)."""
    known = modules()
    names = set(known)
    return tuple(
        edge
        for name, path in known.items()
        for edge in imports_of(name, sources.tree(path), names)
        if edge.target != name
    )


def wing(module: str) -> str:
    if module.split(".")[0] in CONTAINER:
        return "container"
    if module in ENTRY:
        return "entry"
    return module.split(".")[1]


def rank(module: str) -> int:
    place = wing(module)
    return 0 if place == "container" else ENTRY[module] if place == "entry" else WINGS[place]


def cycles(edges: list[Edge]) -> list[list[str]]:
    """The import cycles: every strongly connected component of more than one module (Tarjan's algorithm)."""
    following: dict[str, set[str]] = {}
    for edge in edges:
        following.setdefault(edge.source, set()).add(edge.target)
        following.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(following[node]):
            if successor not in index:
                connect(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(following):
        if node not in index:
            connect(node)
    return found


def test_the_graph_is_the_real_one() -> None:
    """The check reads real imports: module, function and typing ones, resolved to modules and packages."""
    edges = graph()
    seen = {(edge.source, edge.target, edge.kind) for edge in edges}
    assert len(edges) > 200
    assert ("pipeline.cli.run", "pipeline.api._shared", "function") in seen  # from pipeline.api._shared import ...
    assert ("pipeline.local.runner", "pipeline.local.preflight", "module") in seen  # from pipeline.local import ...
    assert ("pipeline.api.html", "pipeline.api.execution", "typing") in seen


def test_every_module_sits_in_a_wing() -> None:
    unplaced = [name for name in modules() if name.startswith("pipeline") and wing(name) not in (*WINGS, "entry")]
    assert unplaced == []


def test_each_wing_imports_only_the_wings_below_it() -> None:
    upward = [
        str(edge)
        for edge in graph()
        if wing(edge.source) != wing(edge.target) and rank(edge.target) >= rank(edge.source)
    ]
    assert upward == []


def test_container_code_imports_no_pipeline_module() -> None:
    reaching = [str(edge) for edge in graph() if wing(edge.source) == "container" and wing(edge.target) != "container"]
    assert reaching == []


def test_the_commands_reach_the_local_backend_only_through_the_api() -> None:
    """The work dir, the execution store, the environments and the Linear Learner launcher are the API's to hand
    out; a command names them in annotations at most."""
    sideways = [
        str(edge)
        for edge in graph()
        if wing(edge.source) == "cli" and wing(edge.target) in ("local", "linear_learner") and edge.kind in RUNTIME
    ]
    assert sideways == []


def test_local_jobs_reach_the_contract_not_the_scheduler() -> None:
    scheduler = [
        str(edge)
        for edge in graph()
        if edge.source.startswith("pipeline.local.jobs") and edge.target == "pipeline.local.interpreter"
    ]
    assert scheduler == []


def test_there_is_no_import_cycle() -> None:
    assert cycles([edge for edge in graph() if edge.kind in RUNTIME]) == []


def test_the_cycle_check_finds_a_cycle_through_a_function_level_import() -> None:
    a_b = Edge("pipeline.api.execution", "pipeline.api.notebook", "function", 1)
    b_a = Edge("pipeline.api.notebook", "pipeline.api.execution", "function", 2)
    b_c = Edge("pipeline.api.notebook", "pipeline.core.names", "module", 3)
    assert cycles([a_b, b_a, b_c]) == [["pipeline.api.execution", "pipeline.api.notebook"]]
    assert cycles([a_b, b_c]) == []


def test_the_lazy_exports_of_the_package_are_the_apis() -> None:
    import importlib

    import pipeline

    for name, module in pipeline.EXPORTS.items():
        assert wing(module) in ("api", "definition"), (name, module)
        assert hasattr(importlib.import_module(module), name), (name, module)


def test_the_container_library_is_below_the_container_jobs() -> None:
    """containerlib serves Preprocess, Evaluate and the pipeline alike: it imports none of them."""
    upward = [
        str(edge) for edge in graph() if edge.source.startswith("containerlib") and wing(edge.target) == "container"
    ]
    assert [edge for edge in upward if not edge.split(" -> ")[1].startswith("containerlib")] == []


def test_the_container_jobs_do_not_import_each_other() -> None:
    """What the jobs share is in the library: Preprocess's bundle has no evaluation module, Evaluate's none of
    preprocessing, the data-quality analyzer's neither."""
    jobs = ("preprocessing", "evaluation", "dataquality")
    for job, other in ((job, other) for job in jobs for other in jobs if job != other):
        crossing = [str(edge) for edge in graph() if edge.source.startswith(job) and edge.target.startswith(other)]
        assert crossing == []


MAX_MODULE_LINES = 700  # a module longer than this holds more than one idea (issue 24)


def test_no_module_is_longer_than_the_limit() -> None:
    """Every module of the package and the container code stays small enough to hold one idea."""
    files = [path for folder in ("pipeline", *CONTAINER) for path in sources.python_files(folder)]
    assert len(files) > 100  # the walk found the code
    lengths = {str(path.relative_to(ROOT)): len(sources.text(path).splitlines()) for path in files}
    long = {name: lines for name, lines in lengths.items() if lines > MAX_MODULE_LINES}
    assert long == {}, f"modules over {MAX_MODULE_LINES} lines: split them by what each part does"
