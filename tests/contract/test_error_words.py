"""Errors carry fields and name options neutrally; each surface words them: the CLI as its flags, the Python API as
its keyword arguments. No library or container message outside ``pipeline/cli`` spells a command-line flag, except
a container naming its own flag beside the pipeline parameter that feeds it."""

from __future__ import annotations

import ast
import functools
import json
import pickle
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from support import sources

from pipeline import cli
from pipeline.api import run_local
from pipeline.api._words import argument
from pipeline.cli import flag
from pipeline.core.errors import (
    ARGUMENTS,
    PARAMETERS,
    ConfigError,
    DataError,
    LlpipeError,
    ParameterError,
    neutral,
    opt,
)
from pipeline.definition.build import build_definition
from pipeline.definition.config import PipelineConfig

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ("pipeline", "preprocessing", "evaluation", "containerlib", "dataquality", "serving")
CONTAINERS = ("preprocessing", "evaluation", "containerlib", "dataquality", "serving")
FLAG = re.compile(r"--[a-z]")
# one argument of a command line being built: "--input-dir", "--label-values=", "--only-binary=:all:"
BARE_FLAG = re.compile(r"--[a-z][a-z-]*(=\S*)?")
NAMED_FLAG = re.compile(r"--[a-z][a-z-]* \(pipeline parameter ([A-Z]\w+)\)")
# Texts that quote a whole llpipe command for a person to type, not an option: the failure alert's SNS message, and
# the generated parameter reference's header (it names both surfaces: the command's flag and the API's argument).
COMMANDS = {
    ("pipeline/sagemaker/alerts.py", "llpipe execution show <execution> --sagemaker --logs"),
    ("pipeline/definition/parameter_table.py", "llpipe run/start/schedule --param Name=Value"),
    ("pipeline/core/tracking.py", "mlflow ui --backend-store-uri"),  # MLflow's own command, printed to be typed
}


def _strings(nodes: Sequence[ast.AST]) -> list[tuple[int, str]]:
    """The text of every string literal that is not a docstring nor an argparse argument (the command line's own
    flags and help), an f-string's literal parts joined; ``nodes`` are a tree's, in ``ast.walk``'s order."""
    skipped: set[int] = set()
    for node in nodes:
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skipped.add(id(first.value))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
            skipped.update(id(inner) for inner in ast.walk(node))
    found = []
    for node in nodes:
        if id(node) in skipped:
            continue
        if isinstance(node, ast.JoinedStr):
            skipped.update(id(part) for part in node.values)
            text = "".join(part.value if isinstance(part, ast.Constant) else "{}" for part in node.values)
            found.append((node.lineno, text))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append((node.lineno, node.value))
    return found


@functools.cache
def _messages_with_flags() -> dict[str, list[tuple[int, str]]]:
    """path -> (line, text) of every string literal outside pipeline/cli that mentions a flag in prose (parsed once
    for the two tests that read it: parsing every library module is most of their time)."""
    hits: dict[str, list[tuple[int, str]]] = {}
    for package in LIBRARY:
        for path in sources.python_files(package):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith("pipeline/cli/"):
                continue
            for line, text in _strings(sources.nodes(path)):
                quoted = any(path == relative and command in text for path, command in COMMANDS)
                if FLAG.search(text) and not BARE_FLAG.fullmatch(text) and not quoted:
                    hits.setdefault(relative, []).append((line, text))
    return hits


def test_no_message_outside_the_cli_spells_a_flag() -> None:
    """Library messages name options with ``opt()``; container messages may name their own flag only as
    ``--flag (pipeline parameter Name)``: the flag is their interface on SageMaker, the parameter the user's."""
    wrong = []
    for path, hits in _messages_with_flags().items():
        for line, text in hits:
            container = path.split("/")[0] in CONTAINERS
            if not container or FLAG.search(NAMED_FLAG.sub("", text)):
                wrong.append(f"{path}:{line}: {text}")
    assert wrong == []


def test_container_messages_name_declared_pipeline_parameters() -> None:
    declared = {item["Name"] for item in json.loads(build_definition(PipelineConfig()).definition_json)["Parameters"]}
    named = {
        (path, match.group(1))
        for path, hits in _messages_with_flags().items()
        for _, text in hits
        for match in NAMED_FLAG.finditer(text)
    }
    assert len(named) >= 10, "the Preprocess container's messages name the pipeline parameters"
    assert [(path, name) for path, name in sorted(named) if name not in declared] == []


def test_the_scan_sees_a_flag_in_a_message_and_not_in_a_command_line() -> None:
    source = '''
def f(x):
    """Docstrings may say --data."""
    parser.add_argument("--seed", help="the --seed")
    args = ["--input-dir", x, "--label-values="]
    raise ValueError(f"--data {x}: no such file")
'''
    texts = [text for _, text in _strings(list(ast.walk(ast.parse(source))))]
    assert [text for text in texts if FLAG.search(text) and not BARE_FLAG.fullmatch(text)] == [
        "--data {}: no such file"
    ]


# --------------------------------------------------------------------------------------------------- the words


@pytest.mark.parametrize(
    ("name", "value", "cli_words", "api_words", "neutral_words"),
    [
        ("Epochs", 0, "--param Epochs=0", "Epochs=0", "parameter Epochs=0"),
        ("LabelValues", None, "--param LabelValues", "LabelValues", "parameter LabelValues"),
        ("data", "d.csv", "--data d.csv", "data=d.csv", "data d.csv"),
        ("label_column", "y", "--label-column y", "label_column=y", "label column y"),
        ("infer", False, "--no-infer", "infer=False", "infer off"),
        ("allow_new_columns", True, "--allow-new-columns", "allow_new_columns=True", "allow new columns on"),
        ("model_package", None, "--model-package", "model_package", "model package"),
        (PARAMETERS, None, "--param", "keyword arguments (Name=value)", "pipeline parameters"),
        (ARGUMENTS, None, "command line", "keyword arguments", "overrides"),
    ],
)
def test_each_surface_words_an_option(
    name: str, value: object, cli_words: str, api_words: str, neutral_words: str
) -> None:
    error = LlpipeError(f"pass {opt(name, value)}")
    assert (error.worded(flag), error.worded(argument), str(error)) == (
        f"pass {cli_words}",
        f"pass {api_words}",
        f"pass {neutral_words}",
    )
    assert error.worded(neutral) == str(error)


def test_an_error_starts_with_its_option_unless_it_mentions_it() -> None:
    error = ParameterError("expected at least 1", option="Epochs", value=0, expected="at least 1")
    assert (error.option, error.value, error.expected) == ("Epochs", 0, "at least 1")
    assert error.worded(flag) == "--param Epochs=0: expected at least 1"
    assert error.worded(argument) == "Epochs=0: expected at least 1"
    inline = ParameterError(
        f"{opt('NumClasses', 5)} but 3 classes: set {opt('NumClasses', 3)}", option="NumClasses", value=5
    )
    assert inline.worded(flag) == "--param NumClasses=5 but 3 classes: set --param NumClasses=3"
    advice = LlpipeError(f"cannot be written; pick another with {opt('workdir', 'DIR')}", option="workdir", value="w")
    assert advice.worded(flag) == "--workdir w: cannot be written; pick another with --workdir DIR"


def test_fields_survive_a_pickle_as_between_processes() -> None:
    error = DataError("no such file or folder", option="data", value="d.csv", file="d.csv", row=3, column="x")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is DataError and copy.worded(flag) == "--data d.csv: no such file or folder"
    assert (copy.file, copy.row, copy.column) == ("d.csv", 3, "x")


# ------------------------------------------------------------------------------------- one error, two surfaces


def _csv(path: Path, files: int = 1) -> Path:
    path.mkdir()
    for index in range(files):
        rows = "\n".join(f"{i},{i % 2}" for i in range(20))
        (path / f"part-{index}.csv").write_text(f"x,label\n{rows}\n")
    return path


def test_a_missing_data_path_reads_as_a_flag_in_the_cli_and_an_argument_in_the_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.csv"
    workdir = tmp_path / "w"
    argv = ["run", "--data", str(missing), "--label-column", "label", "--predictor-type", "binary_classifier"]
    assert cli.main([*argv, "--workdir", str(workdir), "--quiet"]) == 2
    assert capsys.readouterr().err == f"llpipe run: --data {missing}: no such file or folder\n"
    with pytest.raises(DataError) as caught:
        run_local(missing, "label", "binary_classifier", workdir=workdir, progress=False)
    assert str(caught.value) == f"data={missing}: no such file or folder"
    assert (caught.value.option, caught.value.value) == ("data", missing)


def test_a_parameter_the_data_cannot_take_reads_as_param_in_the_cli_and_a_keyword_in_the_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _csv(tmp_path / "data", files=2)
    workdir = tmp_path / "w"
    argv = ["run", "--data", str(data), "--label-column", "label", "--predictor-type", "binary_classifier"]
    assert cli.main([*argv, "--workdir", str(workdir), "--quiet", "--param", "ProcessingInstanceCount=3"]) == 2
    expected = (
        "ProcessingInstanceCount=3 but the data has 2 file(s): with ShardedByS3Key an instance would get no file; "
        "use at most 2 or split the data into more files"
    )
    assert capsys.readouterr().err == f"llpipe run: --param {expected}\n"
    with pytest.raises(ParameterError) as caught:
        run_local(data, "label", "binary_classifier", workdir=workdir, progress=False, ProcessingInstanceCount=3)
    assert str(caught.value) == expected
    assert (caught.value.option, caught.value.value, caught.value.expected) == (
        "ProcessingInstanceCount",
        3,
        "at most 2",
    )


def test_start_names_a_bad_setting_as_a_keyword_argument_and_the_cli_as_the_command_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pipeline.api import start

    invalid = "region: 'not a region!' is not valid; expected an AWS region such as us-east-1"
    with pytest.raises(ConfigError) as caught:
        start(region="not a region!")
    assert str(caught.value) == f"{invalid} (from keyword arguments)"
    assert cli.main(["start", "--region", "not a region!", "--no-infer"]) == 2
    assert capsys.readouterr().err == f"llpipe start: {invalid} (from command line)\n"
