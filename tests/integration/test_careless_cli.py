"""What a careless user met and read unclearly, each now said as what it is: a file given as the work dir (read as
an empty one: "no executions", "no model packages"), a folder given as a JSON file, a step refused with words meant
for the user shown with its exception's class name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.processing_jobs import processing_definition

from pipeline import cli
from pipeline.core.errors import UsageError
from pipeline.local.executions import ExecutionStore
from pipeline.local.interpreter import Interpreter


@pytest.mark.parametrize(
    "argv",
    [
        ["executions"],
        ["models", "list"],
        ["execution", "show", "abc123"],
        ["compare", "a", "b"],
        ["monitor", "--endpoint", "e"],
        ["run", "--quiet"],
    ],
)
def test_a_file_given_as_the_work_dir_is_named_not_read_as_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    afile = tmp_path / "results.csv"
    afile.write_text("a,b\n1,2\n")
    code = cli.main([*argv, "--workdir", str(afile)])
    captured = capsys.readouterr()
    assert code == 2, captured
    assert f"{afile} is a file, not a folder" in captured.err and "--workdir DIR" in captured.err
    assert "no executions" not in captured.out and "no model packages" not in captured.out
    assert afile.read_text() == "a,b\n1,2\n"


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("folder", "--hyperparameters {folder}: a folder; expected a JSON object"),
        ("bad-file", "--hyperparameters: the file {bad} is not JSON ("),
        ("not json", "--hyperparameters: 'not json' is neither JSON nor a file ("),
    ],
)
def test_hyperparameters_that_are_a_folder_or_not_json_say_which(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str, said: str
) -> None:
    folder, bad = tmp_path / "hp", tmp_path / "hp.json"
    folder.mkdir()
    bad.write_text("{predictor_type: regressor")
    value = {"folder": str(folder), "bad-file": str(bad)}.get(given, given)
    argv = ["linear-learner", "train", "--train", str(folder), "--hyperparameters", value, "--output", str(tmp_path)]
    assert cli.main(argv) == 2
    assert said.format(folder=folder, bad=bad) in capsys.readouterr().err


def test_a_step_refused_with_a_users_message_shows_the_message_not_its_class(tmp_path: Path) -> None:
    def refuse(job: object) -> dict:
        raise UsageError("not an S3 URI: '/tmp' (expected s3://bucket/key)")

    interpreter = Interpreter(
        runners={"Processing": refuse},
        store=ExecutionStore(tmp_path / "executions"),
        read_json=lambda uri: json.loads("{}"),
        pipeline_name="careless",
    )
    record = interpreter.run(processing_definition(instances=1), {})
    assert record.steps["Job"].failure_reason == "not an S3 URI: '/tmp' (expected s3://bucket/key)"


@pytest.mark.parametrize("variable", ["LLPIPE_CACHE_DIR", "XDG_CACHE_HOME"])
@pytest.mark.parametrize("below", ["", "sub/folder"])
def test_a_cache_dir_variable_naming_a_file_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, variable: str, below: str
) -> None:
    afile = tmp_path / "notes.txt"
    afile.write_text("x")
    monkeypatch.delenv("LLPIPE_CACHE_DIR", raising=False)
    monkeypatch.setenv(variable, str(afile / below) if below else str(afile))
    code = cli.main(["run", "--workdir", str(tmp_path / "work"), "--quiet"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2, err
    assert f"{variable}=" in err and f"{afile} is a file, not a folder" in err
    assert f"point {variable} at a folder" in err
    assert not (tmp_path / "work" / "executions").exists()


def test_a_removed_log_is_said_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], finished_run: object
) -> None:
    workdir = finished_run.copy_to(tmp_path / "work")
    (log,) = (workdir / "executions" / finished_run.execution_id / "steps" / "Evaluate" / "logs").glob("*.log")
    log.unlink()
    assert cli.main(["execution", "show", finished_run.execution_id, "--logs", "--workdir", str(workdir)]) == 0
    shown = capsys.readouterr().out.replace("\n", "")
    assert f"Evaluate log: {log} (missing: removed from the record folder)" in shown


@pytest.mark.parametrize(
    ("content", "said"), [("", "empty (0 bytes: no header, no rows)"), ("a,b\n", "a header but no data rows")]
)
def test_an_empty_file_and_a_header_alone_are_told_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, said: str
) -> None:
    data = tmp_path / "data.csv"
    data.write_text(content)
    argv = ["run", "--data", str(data), "--label-column", "b", "--predictor-type", "regressor"]
    assert cli.main([*argv, "--workdir", str(tmp_path / "work")]) == 2
    assert f"{data.name}: {said}; give data" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("", "empty (0 bytes: no header, no rows)"),
        ("a,b\n1,2\n3,4,5\n", "data row 2 has 3 fields but the header names 2 (extra: '5'; a trailing comma?)"),
    ],
)
def test_a_data_files_own_fault_is_refused_before_the_definition_is_built(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, content: str, said: str
) -> None:
    """Before: `llpipe run` built the definition first (on a definition cache miss the SageMaker SDK's import and
    build, ~7 s of CPU) and only then scanned the data; the file's fault needs no definition, so it is named first."""
    from pipeline.definition import build

    def no_build(*arguments: object, **keywords: object) -> None:
        pytest.fail("the definition was built for data refused by its scan")

    monkeypatch.setattr(build, "build_definition", no_build)
    data = tmp_path / "data.csv"
    data.write_text(content)
    argv = ["run", "--data", str(data), "--label-column", "b", "--predictor-type", "regressor"]
    assert cli.main([*argv, "--workdir", str(tmp_path / "work")]) == 2
    assert f"{data.name}: {said}" in capsys.readouterr().err
