"""The ``llpipe`` entry points: every command is wired and documents itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.cli import COMMANDS, build_parser, main
from pipeline.core import errors


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([command, "--help"])
    assert exit_info.value.code == 0
    assert f"llpipe {command}" in capsys.readouterr().out


def test_python_dash_m_pipeline_is_the_llpipe_command() -> None:
    result = subprocess.run([sys.executable, "-m", "pipeline", "--help"], capture_output=True, text=True, check=False)
    assert result.returncode == 0
    for command in COMMANDS:
        assert command in result.stdout


def test_unknown_command_exits_non_zero() -> None:
    result = subprocess.run([sys.executable, "-m", "pipeline", "nope"], capture_output=True, text=True, check=False)
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


CONFIGURED = [name for name in sorted(COMMANDS) if name not in ("linear-learner", "execution", "env")]


@pytest.mark.parametrize("command", CONFIGURED)
def test_a_configuration_error_is_one_line_and_exit_code_2_in_every_command(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = {
        "models": ["list"],
        "schedule": ["--rate", "1 day"],
        "executions": ["--sagemaker"],
        "compare": ["a", "b", "--sagemaker"],
        "alerts": ["--delete"],
        "retry": ["k1x9q2w3e4r5"],
        "stop": ["k1x9q2w3e4r5"],
        "monitor": ["--endpoint", "ep"],
        "deploy": ["--stage", "staging", "--sagemaker"],
        "undeploy": ["--stage", "prod", "--sagemaker"],
        "endpoints": ["--sagemaker"],
    }.get(command, [])
    arguments = [command, *extra, "--role-arn", "not-an-arn"]
    if command in ("run", "executions", "models"):
        arguments += ["--workdir", str(tmp_path)]
    assert main(arguments) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"llpipe {command}: role_arn: 'not-an-arn' is not valid"), err
    assert err.count("\n") == 1


def test_errors_map_to_exit_codes_in_one_place() -> None:
    assert errors.UsageError("x").exit_code == 2 and errors.LlpipeError("x").exit_code == 1
    for usage in (errors.ConfigError, errors.ParameterError, errors.DataError, errors.DefinitionError):
        assert issubclass(usage, errors.UsageError)
    for failure in (errors.AwsError, errors.ModelsError, errors.TrainingError):
        assert not issubclass(failure, errors.UsageError) and issubclass(failure, errors.LlpipeError)


def test_a_run_refused_before_any_step_leaves_no_empty_step_table_on_the_terminal() -> None:
    """The live table starts before preflight; when nothing ran it is erased, so the message stands alone."""
    import io

    from rich.console import Console

    from pipeline.cli.render.progress import LiveSteps

    terminal = io.StringIO()
    with pytest.raises(errors.DataError), LiveSteps(Console(file=terminal, force_terminal=True, width=80)):
        raise errors.DataError("data.csv row 1: column 'x' is empty")
    erased = terminal.getvalue()
    assert "step" in erased and erased.endswith("\x1b[2K")  # drawn, then each of its lines cleared
    assert erased.count("\x1b[1A\x1b[2K") == 5  # the five lines of the empty table


def test_the_live_table_is_drawn_at_once_when_a_step_changes_status(tmp_path: Path) -> None:
    """It is drawn again once a second (each draw to a terminal costs about 13 ms); a step that starts or ends is
    shown without waiting for the next one."""
    import io

    from rich.console import Console

    from pipeline.cli.render.progress import LiveSteps
    from pipeline.local.executions import ExecutionRecord, StepRecord

    terminal = io.StringIO()
    record = ExecutionRecord("e1", "p", tmp_path)
    step = record.steps["Train"] = StepRecord("Train", "Training")
    with LiveSteps(Console(file=terminal, force_terminal=True, width=120)) as live:
        step.status = "Executing"
        live.update(record, step)
        assert "Executing" in terminal.getvalue()
        step.status = "Succeeded"
        live.update(record, step)
        assert "Succeeded" in terminal.getvalue()


def test_endpoints_show_every_stages_url_whole_in_80_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: in an 80-column terminal or a pipe (rich takes it as 80 columns) the table cut the endpoint's name and
    its URL to "linear-l…" and "http://1…", the one thing a client needs."""
    from datetime import datetime, timezone

    from pipeline.cli.render.deployment import endpoints_lines
    from pipeline.core.deployment import Live

    since = datetime(2026, 12, 6, 4, 39, 43, tzinfo=timezone.utc)
    execution = "arn:aws:sagemaker:us-east-1:111122223333:pipeline/p/execution/375d188846cc"
    live = Live(
        "staging",
        "p-staging",
        "InService",
        None,
        "arn:x/6",
        6,
        execution,
        since,
        "passed: 200 test rows",
        url="http://127.0.0.1:44107",
    )
    assert endpoints_lines([("staging", "p-staging", live), ("prod", "p-prod", None)]) == [
        "Endpoints",
        "staging  p-staging  InService  version 6",
        "  url: http://127.0.0.1:44107",
        "  execution: 375d188846cc, since 2026-12-06 04:39:43 UTC",
        "  smoke test: passed: 200 test rows",
        "prod  p-prod  not deployed",
    ]
    assert main(["endpoints", "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1:] == [
        "staging  linear-learner-pipeline-staging  not deployed",
        "prod  linear-learner-pipeline-prod  not deployed",
    ]


def test_data_without_its_label_column_or_predictor_type_says_which_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--data takes no default PredictorType (the parameter's binary_classifier is the example data's): refused
    before anything runs, naming the missing option and why there is no default."""
    (tmp_path / "d.csv").write_text("x,y\n1,0.5\n")
    argv = ["run", "--workdir", str(tmp_path / "work"), "--data", str(tmp_path / "d.csv")]
    assert main([*argv, "--label-column", "y"]) == 2
    error = capsys.readouterr().err
    assert "--data needs --predictor-type T: they describe your data, so --data takes no default for them" in error
    assert "binary_classifier, multiclass_classifier, regressor; the PredictorType default binary_classifier" in error
    assert main(argv) == 2
    assert "--data needs --label-column C and --predictor-type T:" in capsys.readouterr().err
    assert not (tmp_path / "work" / "executions").exists()


def test_a_command_imports_its_own_module_only() -> None:
    """`llpipe models ...` configures the models command alone: no other command's module is imported (each costs
    start-up time), and the full parser still answers `llpipe --help` and an unknown command."""
    script = (
        "import sys\n"
        "from pipeline.cli import COMMANDS, main\n"
        "try:\n"
        "    main(['models', '--help'])\n"
        "except SystemExit as done:\n"
        "    assert done.code == 0\n"
        "print(sorted(name for name, (module, _) in COMMANDS.items() if module in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    assert "llpipe models" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "['models']"
