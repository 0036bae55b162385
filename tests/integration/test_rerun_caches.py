"""What a cached re-run reuses besides the definition: the example data (no scikit-learn import) and the plots of
a report already rendered (no matplotlib)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.reports import report_file

import pipeline.api.plots
from pipeline.cli.render.summary import _plots
from pipeline.definition.code_bundles import REPOSITORY_ROOT

EXAMPLE = """
import sys
from pathlib import Path
from pipeline.local.example_data import write_example_data

paths = write_example_data(Path(sys.argv[1]))
print(len(paths), "sklearn" in sys.modules)
"""


def write_example(folder: Path, cache: Path) -> str:
    result = subprocess.run([sys.executable, "-c", EXAMPLE, str(folder)], capture_output=True, text=True, check=True,
                            env={"PYTHONPATH": str(REPOSITORY_ROOT), "PATH": "/usr/bin:/bin",
                                 "LLPIPE_CACHE_DIR": str(cache)}, timeout=300)  # fmt: skip
    return result.stdout.strip()


def test_example_data_is_reused_without_scikit_learn_unless_a_part_changed(tmp_path: Path) -> None:
    cache, folder = tmp_path / "cache", tmp_path / "work" / "example-data"
    assert write_example(folder, cache) == "4 True", "made from scikit-learn's copy once"
    first = {path.name: path.read_bytes() for path in folder.glob("part-*.csv")}
    assert write_example(folder, cache) == "4 False", "reused: scikit-learn not imported"
    (folder / "part-00002.csv").write_text("edited\n")
    assert write_example(folder, cache) == "4 False", "an edited part is rewritten from the user cache"
    assert {path.name: path.read_bytes() for path in folder.glob("part-*.csv")} == first


def test_a_fresh_work_dir_copies_the_example_from_the_user_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert write_example(tmp_path / "one", cache) == "4 True"
    first = {path.name: path.read_bytes() for path in (tmp_path / "one").glob("part-*.csv")}
    assert {path.name: path.read_bytes() for path in (cache / "example-data").glob("part-*.csv")} == first
    assert write_example(tmp_path / "two", cache) == "4 False", "a fresh folder: no scikit-learn import"
    assert {path.name: path.read_bytes() for path in (tmp_path / "two").glob("part-*.csv")} == first
    (cache / "example-data" / "part-00001.csv").write_text("edited\n")
    assert write_example(tmp_path / "three", cache) == "4 True", "an edited cached part is made again"
    assert {path.name: path.read_bytes() for path in (tmp_path / "three").glob("part-*.csv")} == first


def test_a_report_is_rendered_once_and_copied_into_each_execution(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LLPIPE_CACHE_DIR", str(tmp_path / "cache"))  # not a rendering another test left there
    report = report_file(tmp_path, "binary_classifier")
    calls = []
    render = pipeline.api.plots.render_plots
    monkeypatch.setattr(pipeline.api.plots, "render_plots", lambda *args: calls.append(args) or render(*args))
    executions = tmp_path / "work" / "executions"
    first = _plots(report, executions / "one" / "plots")
    second = _plots(report, executions / "two" / "plots")
    assert len(calls) == 1
    assert [Path(path).name for path in first] == ["roc_curve.png", "precision_recall_curve.png",
                                                   "confusion_matrix.png"]  # fmt: skip
    assert [Path(p).read_bytes() for p in first] == [Path(p).read_bytes() for p in second]
    assert all(str(path).startswith(str(executions / "two" / "plots")) for path in second)
    other = report_file(tmp_path / "other", "binary_classifier", seed=1)
    _plots(other, executions / "three" / "plots")
    assert len(calls) == 2, "another report is rendered"


@pytest.fixture(autouse=True)
def _no_user_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LLPIPE_DEFINITION_CACHE_DIR", str(tmp_path / "cache"))
