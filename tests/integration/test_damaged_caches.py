"""Every cache entry is checked against what it was written for before reuse: a damaged one (truncated, edited,
another file put in its place, its index garbled) is discarded and rebuilt with one warning naming it, never reused,
never an AttributeError. The caches: a DataFrame's CSV, the work dir's plots cache and an execution's plots, a cached
step's outputs, an image's environment (the definition cache: tests/unit/definition/test_definition_cache.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest
from support.processing_jobs import processing_definition
from support.reports import report_file

import pipeline.api.plots
from pipeline.api.frames import write_frame
from pipeline.cli.render.summary import _plots
from pipeline.core.images import ProcessingImage
from pipeline.core.verified import ENTRY_FILE, DamagedCacheEntry
from pipeline.definition.code_bundles import REPOSITORY_ROOT
from pipeline.local.cache import OUTPUTS_FILE
from pipeline.local.environments import MANIFEST, ImageEnvironments
from pipeline.local.executions import ExecutionStore
from pipeline.local.interpreter import Interpreter
from pipeline.local.jobs import local_runners
from pipeline.local.s3 import LocalS3
from pipeline.local.workdir import Workdir


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: max(1, path.stat().st_size // 2)])


def _same_size_edit(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _replaced(path: Path) -> None:
    path.write_text("another file put there\n")


DAMAGES = [_truncate, _same_size_edit, _replaced]


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_frame_file_is_rewritten_with_a_warning(tmp_path: Path, damage) -> None:
    frame = pd.DataFrame({"x": [1.5, 2.5, 3.5], "label": ["a", "b", "a"]})
    path = write_frame(frame, tmp_path)
    whole = path.read_bytes()
    damage(path)
    with pytest.warns(DamagedCacheEntry, match=f"cache entry {path} is damaged"):
        assert write_frame(frame, tmp_path) == path
    assert path.read_bytes() == whole
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert write_frame(frame, tmp_path) == path  # whole again: reused without a word


@pytest.mark.parametrize("damage", DAMAGES)
def test_the_plots_cache_and_an_executions_plots_are_rendered_again_when_damaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage
) -> None:
    monkeypatch.setenv("LLPIPE_CACHE_DIR", str(tmp_path / "user-cache"))
    report = report_file(tmp_path, "binary_classifier", seed=3)
    calls = []
    render = pipeline.api.plots.render_plots
    monkeypatch.setattr(pipeline.api.plots, "render_plots", lambda *args: calls.append(args) or render(*args))
    executions = tmp_path / "work" / "executions"
    first = [Path(path) for path in _plots(report, executions / "one" / "plots")]
    whole = {path.name: path.read_bytes() for path in first}
    (shared,) = (tmp_path / "work" / "plots-cache").iterdir()
    (user,) = (tmp_path / "user-cache" / "plots").iterdir()

    damage(shared / "precision_recall_curve.png")  # the work dir's cache: a second execution copies from it
    with pytest.warns(DamagedCacheEntry, match=f"cache entry {shared} is damaged .*precision_recall_curve.png"):
        second = [Path(path) for path in _plots(report, executions / "two" / "plots")]
    assert len(calls) == 1, "copied again from the user cache's (whole) rendering, not rendered"
    assert {path.name: path.read_bytes() for path in second} == whole

    damage(shared / "roc_curve.png")  # both caches: rendered again
    damage(user / "roc_curve.png")
    with pytest.warns(DamagedCacheEntry) as caught:
        third = [Path(path) for path in _plots(report, executions / "three" / "plots")]
    assert sorted(str(warning.message).split(" is damaged")[0] for warning in caught) == sorted(
        f"cache entry {folder}" for folder in (shared, user)
    )
    assert len(calls) == 2, "rendered again"
    assert {path.name: path.read_bytes() for path in third} == whole

    damage(first[0])  # an execution's own copy
    with pytest.warns(DamagedCacheEntry, match=f"cache entry {first[0].parent} is damaged .*{first[0].name}"):
        again = [Path(path) for path in _plots(report, executions / "one" / "plots")]
    assert {path.name: path.read_bytes() for path in again} == whole
    assert len(calls) == 2, "copied from the (whole) work dir cache, not rendered"


def test_a_fresh_work_dir_copies_the_plots_another_rendered_into_the_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLPIPE_CACHE_DIR", str(tmp_path / "user-cache"))
    report = report_file(tmp_path, "binary_classifier", seed=5)
    calls = []
    render = pipeline.api.plots.render_plots
    monkeypatch.setattr(pipeline.api.plots, "render_plots", lambda *args: calls.append(args) or render(*args))
    first = [Path(path) for path in _plots(report, tmp_path / "one" / "executions" / "a" / "plots")]
    other = [Path(path) for path in _plots(report, tmp_path / "two" / "executions" / "b" / "plots")]
    assert len(calls) == 1 and [path.name for path in other] == [path.name for path in first]
    assert [path.read_bytes() for path in other] == [path.read_bytes() for path in first]
    assert (tmp_path / "two" / "plots-cache").is_dir(), "the work dir keeps its own rendering as before"


@pytest.mark.parametrize("index", ['{"key": ', "[]", '{"key": 5, "names": "x"}'])
def test_a_garbled_index_of_the_plots_cache_is_rebuilt_not_an_error(tmp_path: Path, index: str) -> None:
    report = report_file(tmp_path, "binary_classifier", seed=4)
    executions = tmp_path / "work" / "executions"
    _plots(report, executions / "one" / "plots")
    (shared,) = (tmp_path / "work" / "plots-cache").iterdir()
    (shared / ENTRY_FILE).write_text(index)
    (executions / "one" / "plots" / ENTRY_FILE).write_text(index)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plots = _plots(report, executions / "two" / "plots") + _plots(report, executions / "one" / "plots")
    assert len(plots) == 6 and all(Path(path).stat().st_size > 1000 for path in plots)
    assert all(issubclass(warning.category, DamagedCacheEntry) for warning in caught)


SCRIPT = """
import argparse, pathlib
parser = argparse.ArgumentParser()
parser.add_argument("--data-dir")
parser.add_argument("--output-dir")
parser.add_argument("--resource-config")
parser.add_argument("--fail-on")
args = parser.parse_args()
out = pathlib.Path(args.output_dir)
for path in sorted(pathlib.Path(args.data_dir).rglob("*.csv")):
    (out / (path.stem + ".out")).write_text(path.read_text().upper() * 50)
"""


def _cached_run(workdir: Path):
    s3 = LocalS3(workdir / "s3")
    definition = processing_definition(instances=2)
    definition["Steps"][0]["CacheConfig"] = {"Enabled": True, "ExpireAfter": "P1D"}
    interpreter = Interpreter(
        runners=local_runners(Workdir(workdir), region="us-east-1", account="111122223333"),
        store=ExecutionStore(workdir / "executions"),
        read_json=lambda uri: json.loads(s3.path(uri).read_text()),
        pipeline_name="cache-test",
        has_objects=s3.has_objects,
        local_path=s3.path,
    )
    record = interpreter.run(definition, {})
    assert record.status == "Succeeded", record.failure_reason
    return record, s3


def _added(path: Path) -> None:
    (path.parent / "stray.out").write_text("not written by the step\n")


@pytest.mark.parametrize("damage", [*DAMAGES, _added])
def test_a_cached_steps_damaged_output_makes_it_run_again(tmp_path: Path, damage) -> None:
    s3 = LocalS3(tmp_path / "s3")
    s3.put_bytes("s3://bkt/code/job.py", SCRIPT.encode())
    for name in ("a.csv", "b.csv", "c.csv"):
        s3.put_bytes(f"s3://bkt/data/{name}", f"row of {name}\n".encode())
    first, _ = _cached_run(tmp_path)
    outputs = s3.path(f"s3://bkt/out/{first.id}")
    assert (tmp_path / "executions" / first.id / "steps" / "Job" / OUTPUTS_FILE).is_file()

    hit, _ = _cached_run(tmp_path)
    assert hit.steps["Job"].cache_hit_source == first.id, "whole outputs: reused"

    damage(outputs / "b.out")
    again, _ = _cached_run(tmp_path)
    step = again.steps["Job"]
    assert step.cache_hit_source is None, "damaged outputs are never reused"
    entry = tmp_path / "executions" / first.id / "steps" / "Job" / OUTPUTS_FILE
    (note,) = [note for note in step.notes if note.startswith("cache entry")]  # others: the approximate environment
    assert note.startswith(f"cache entry {entry} is damaged (s3://bkt/out/{first.id}/") and "re-running Job" in note
    assert "/opt/ml" not in note
    rerun = s3.path(f"s3://bkt/out/{again.id}")
    assert (rerun / "b.out").read_text() == "ROW OF B.CSV\n" * 50

    later, _ = _cached_run(tmp_path)
    assert later.steps["Job"].cache_hit_source == again.id, "the re-run is the entry now"


def test_a_copied_output_with_new_times_but_the_same_bytes_is_still_a_hit(tmp_path: Path) -> None:
    s3 = LocalS3(tmp_path / "s3")
    s3.put_bytes("s3://bkt/code/job.py", SCRIPT.encode())
    s3.put_bytes("s3://bkt/data/a.csv", b"one row\n")
    first, _ = _cached_run(tmp_path)
    output = s3.path(f"s3://bkt/out/{first.id}") / "a.out"
    output.write_bytes(output.read_bytes())  # a new modification time, the same bytes (as a plain `cp -r` gives)
    hit, _ = _cached_run(tmp_path)
    assert hit.steps["Job"].cache_hit_source == first.id


THIS_PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"
BARE = ProcessingImage("bare", "1.0-1", "bare-image", THIS_PYTHON, (), (("LANG", "C.UTF-8"),))


@pytest.mark.parametrize(
    "manifest",
    ['{"python": ', "[]", '{"image": "bare"}', '{"image": "other", "python": "3.9.1", "libraries": {}}'],
)
def test_a_damaged_environment_is_discarded_and_built_again(tmp_path: Path, manifest: str) -> None:
    environments = ImageEnvironments(tmp_path)
    built = environments.ensure(BARE)
    folder = Path(built.location)
    (folder / MANIFEST).write_text(manifest)
    with pytest.warns(DamagedCacheEntry, match=f"cache entry {folder} is damaged .*{MANIFEST}"):
        again = environments.ensure(BARE)
    assert again.build_seconds is not None and again.exact and again.location == str(folder)
    assert json.loads((folder / MANIFEST).read_text())["image"] == BARE.key


def test_the_command_prints_a_damaged_entry_as_one_line(tmp_path: Path) -> None:
    """Through the ``llpipe`` process: the warning is one line naming the entry, not Python's file and line."""
    script = (
        "import sys, pandas as pd\n"
        "from pathlib import Path\n"
        "from pipeline.cli import _one_line_warning\n"
        "import warnings\n"
        "warnings.showwarning = _one_line_warning(warnings.showwarning)\n"
        "from pipeline.api.frames import write_frame\n"
        "frame = pd.DataFrame({'x': [1, 2]})\n"
        "path = write_frame(frame, Path(sys.argv[1]))\n"
        "path.write_text('x\\n9\\n')\n"
        "write_frame(frame, Path(sys.argv[1]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPOSITORY_ROOT), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"llpipe: warning: cache entry {tmp_path}/frame-") and line.endswith("; rebuilding it")


def test_plots_written_before_entries_are_shown_from_a_read_only_work_dir(finished_run, tmp_path: Path) -> None:
    """An execution's plots rendered by an earlier version (no entry beside them) are rendered again where the work
    dir can be written, and shown as they are where it cannot (a read-only bind mount in a user namespace)."""
    import shutil as shell

    if (
        shell.which("unshare") is None
        or subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True).returncode
    ):
        pytest.skip("needs unprivileged user and mount namespaces (unshare)")
    workdir = finished_run.copy_to(tmp_path / "work")
    folder = workdir / "executions" / finished_run.execution_id / "plots"
    if not folder.is_dir():
        folder.mkdir()
    for path in folder.glob(".llpipe-entry.json"):
        path.unlink()  # as an earlier version left them
    (folder / "roc_curve.png").write_bytes(b"\x89PNG earlier")
    script = (
        "from pipeline.api import get_execution\n"
        f"print(sorted(p.name for p in get_execution({finished_run.execution_id!r}, workdir={str(workdir)!r}).plots))"
    )
    mount = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" && exec "$@"'
    result = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", mount, str(workdir), sys.executable, "-c",
         script],
        capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": str(REPOSITORY_ROOT), "PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "roc_curve.png" in result.stdout and "Traceback" not in result.stderr
