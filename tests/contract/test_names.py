"""Names the container jobs and the pipeline share are defined once, in the container library."""

from __future__ import annotations

import ast
from pathlib import Path

from support import sources

from containerlib import exit_message, hosts
from containerlib import names as shared
from pipeline.core import names

ROOT = Path(__file__).resolve().parents[2]
SHARED_NAMES = {name for name in vars(shared) if name.isupper() and not name.startswith("_")} | {
    "EXIT_MESSAGE_FILE",
    "EXIT_MESSAGE_BYTES",
}


def test_pipeline_names_are_the_container_librarys_objects() -> None:
    """Re-exported, not copied: the same objects."""
    for name in SHARED_NAMES & set(vars(names)):
        source = next(module for module in (shared, exit_message, hosts) if hasattr(module, name))
        assert getattr(names, name) is getattr(source, name), name
    assert {"PREDICTOR_TYPES", "GATE_METRICS", "METRICS_SECTIONS", "REPORT_NAME", "DATA_SUFFIXES"} <= set(vars(names))


def assigned_names(path: Path) -> set[str]:
    """The module-level names a file assigns (``X = ...``), not those it imports."""
    found = set()
    for node in sources.tree(path).body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        for target in targets:
            found.update(t.id for t in ast.walk(target) if isinstance(t, ast.Name))
    return found


def test_preprocess_defaults_its_split_as_the_definition_and_preflight() -> None:
    from preprocessing.command import build_parser

    parser = build_parser()
    defaults = {"ValidationFraction": "validation_fraction", "TestFraction": "test_fraction"}
    assert {name: parser.get_default(option) for name, option in defaults.items()} == names.SPLIT_FRACTIONS


def test_each_shared_name_has_one_definition() -> None:
    """No module of the project defines a shared name again: it imports it (one copy cannot drift from another)."""
    defining = {"containerlib/names.py", "containerlib/exit_message.py", "containerlib/hosts.py"}
    for folder in ("pipeline", "preprocessing", "evaluation", "dataquality", "containerlib", "serving"):
        for path in sources.python_files(folder):
            relative = path.relative_to(ROOT).as_posix()
            if relative not in defining:
                assert not assigned_names(path) & SHARED_NAMES, (
                    f"{relative} defines {assigned_names(path) & SHARED_NAMES}"
                )


def test_step_status_reads_and_writes_as_plain_strings() -> None:
    import json

    assert json.dumps({"status": names.StepStatus.FAILED}) == '{"status": "Failed"}'
    assert {names.StepStatus.SUCCEEDED: "green"}.get("Succeeded") == "green", "a status read back from JSON is a str"
    assert f"{names.StepStatus.SKIPPED}" == "Skipped"


def test_run_data_takes_every_suffix_preprocess_takes(tmp_path) -> None:
    from pipeline.local.data import data_files

    for name in ("a.csv", "b.csv.gz", "c.parquet", "d.pq", "notes.txt", "_SUCCESS"):
        (tmp_path / name).write_bytes(b"")
    base, files = data_files(tmp_path)
    assert base == tmp_path
    assert [path.name for path in files] == ["a.csv", "b.csv.gz", "c.parquet", "d.pq"]
