"""The ``llpipe`` entry points: every command is wired and documents itself."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pipeline.cli import COMMANDS, build_parser


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
