"""Secrets redacted and control characters escaped (issue 42's Security class), and the console entry point's
start-up (Ctrl-C before the commands are imported, text the terminal's encoding cannot hold): one ``redact`` and
one ``printable`` (pipeline/core/safe_text.py), applied where errors are rendered and stored text is printed."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.core.errors import AwsError, LlpipeError, UsageError
from pipeline.core.names import check_resource_name
from pipeline.core.safe_text import RedactingFilter, printable, redact
from pipeline.local.registry import LocalRegistry
from pipeline.local.s3 import LocalS3, split_uri

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ('Could not connect to "http://user:secret@127.0.0.1:1/"', 'Could not connect to "http://***@127.0.0.1:1/"'),
        ("https://AKIDEXAMPLE:p%40ss@host:8443/path?x=1", "https://***@host:8443/path?x=1"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG", "aws_secret_access_key = ***"),
        ("AWS_SESSION_TOKEN=IQoJb3JpZ2luX2VjE", "AWS_SESSION_TOKEN=***"),
        ('{"SecretAccessKey": "abc", "SessionToken": "def"}', '{"SecretAccessKey": "***", "SessionToken": "***"}'),
        ("u?X-Amz-Signature=0f1e&X-Amz-Credential=AKIA%2F&x=1", "u?X-Amz-Signature=***&X-Amz-Credential=***&x=1"),
        ("key id AKIAIOSFODNN7EXAMPLE in use", "key id AKIA*** in use"),
        ("password: hunter2, then", "password: ***, then"),
        ("MY_APP_PASSWORD=x1 and db-api-key: y2", "MY_APP_PASSWORD=*** and db-api-key: ***"),
    ],
)
def test_secrets_are_redacted(text: str, shown: str) -> None:
    assert redact(text) == shown


@pytest.mark.parametrize(
    "text",
    [
        "s3://bucket/key@2x.png",
        "http://127.0.0.1:8080/invocations",
        "mail me at someone@example.com",
        "unexpected token ] at line 3",
        "no credentials: set AWS_PROFILE",
        "'s3://b/../etc/passwd': not found",
        "C:\\keys\\secret: no such file",
        "/run/secrets/token=x is a file name",
    ],
)
def test_text_without_secrets_is_unchanged(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("ok\x1b[2J\x1b]0;title\x07", "ok\\x1b[2J\\x1b]0;title\\x07"),
        ("a\rb\tc\nd", "a\\rb\\tc\\nd"),
        ("\x9b31m C1", "\\x9b31m C1"),
        ("left\u202eright\u200b", "left\\u202eright\\u200b"),
        ("plain ✓ é 中", "plain ✓ é 中"),
    ],
)
def test_control_characters_are_escaped(text: str, shown: str) -> None:
    assert printable(text) == shown


def test_line_breaks_can_be_kept() -> None:
    assert printable("one\ntwo\x1b[K\r", newlines=True) == "one\ntwo\\x1b[K\\r"


def test_every_error_s_rendering_is_redacted(capsys: pytest.CaptureFixture[str]) -> None:
    error = AwsError('ListPipelineExecutions: Could not connect to "http://me:pw@10.0.0.1:9/"')
    assert str(error) == 'ListPipelineExecutions: Could not connect to "http://***@10.0.0.1:9/"'
    assert "pw" not in error.worded(lambda name, value: name)
    assert str(LlpipeError("AWS_SECRET_ACCESS_KEY=s3cret is set twice")) == "AWS_SECRET_ACCESS_KEY=*** is set twice"


def test_the_cli_prints_a_connection_error_without_the_endpoint_s_credentials(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://someone:top-secret@127.0.0.1:1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    assert main(["executions", "--sagemaker"]) == 1
    err = capsys.readouterr().err
    assert "http://***@127.0.0.1:1" in err and "top-secret" not in err and "someone" not in err


def test_the_serving_log_is_redacted(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test.safe_text")
    logger.addFilter(RedactingFilter())
    try:
        raise ValueError("http://u:p4ss@host/ refused")
    except ValueError:
        with caplog.at_level(logging.ERROR, logger="test.safe_text"):
            logger.exception("call to %s failed", "http://u:p4ss@host/")
    assert "p4ss" not in caplog.text and caplog.text.count("http://***@host/") == 3


def register(workdir: Path) -> None:
    request = {
        "ModelPackageGroupName": "g",
        "InferenceSpecification": {"Containers": [{"Image": "img:1", "ModelDataUrl": "s3://b/model.tar.gz"}]},
    }
    LocalRegistry(workdir / "registry.db").register(request, metrics={}, region="eu-west-1", account="123456789012")


@pytest.mark.parametrize(
    ("description", "shown"),
    [
        ("ok\x1b[2J\x1b]0;pwned\x07", "ok\\x1b[2J\\x1b]0;pwned\\x07"),
        ("\x1b[31mred [bold]x[/bold]", "\\x1b[31mred [bold]x[/bold]"),
        ("line one\nfake: line", "line one\\nfake: line"),
    ],
)
def test_models_describe_shows_a_stored_description_s_control_characters_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], description: str, shown: str
) -> None:
    register(tmp_path)
    assert (
        main(["models", "approve", "1", "--group", "g", "--workdir", str(tmp_path), "--description", description]) == 0
    )
    capsys.readouterr()
    assert main(["models", "describe", "1", "--group", "g", "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"approval_description: {shown}\n" in out and "\x1b" not in out and "\x07" not in out
    assert main(["models", "list", "--group", "g", "--workdir", str(tmp_path)]) == 0
    assert "\x1b" not in capsys.readouterr().out


def test_text_the_terminal_cannot_encode_is_escaped_not_a_traceback(tmp_path: Path) -> None:
    register(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "ascii"}
    command = [sys.executable, "-m", "pipeline", "models", "approve", "1", "--group", "g", "--workdir", str(tmp_path)]
    done = subprocess.run([*command, "--description", "ja✓ — ok"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "approval_description: ja\\u2713 \\u2014 ok" in done.stdout


def test_ctrl_c_while_the_commands_are_imported_is_one_line_and_exit_130() -> None:
    """SIGINT delivered while build_parser imports the command's module (the start-up window)."""
    script = (
        "import importlib, os, signal, sys\n"
        "real = importlib.import_module\n"
        "def importing(name, *args):\n"
        "    if name == 'pipeline.cli.models':\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "    return real(name, *args)\n"
        "importlib.import_module = importing\n"
        "sys.argv = ['llpipe', 'models', 'list']\n"
        "from pipeline.cli import console\n"
        "console()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert (done.returncode, done.stderr) == (130, "llpipe: stopped by SIGINT\n")


@pytest.mark.parametrize("port", ["70000", "-1", "65536", "http"])
def test_a_port_out_of_range_is_a_usage_error(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "--port", port])
    assert exit_.value.code == 2
    assert f"argument --port: expected a port, 0 to 65535 (0: any free one), got '{port}'" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["../x", "a/b", "-lead", "trail-", "under_score", "a" * 64, "", "x.y"])
def test_endpoint_and_variant_names_outside_sagemaker_s_pattern_are_refused(name: str) -> None:
    with pytest.raises(UsageError) as error:
        check_resource_name(name, "endpoint_name")
    assert error.value.option == "endpoint_name" and error.value.value == name
    assert f"{name!r} is not a name SageMaker takes: expected ^[a-zA-Z0-9](-*[a-zA-Z0-9]){{0,62}}$" in str(error.value)


@pytest.mark.parametrize("name", ["a", "AllTraffic", "churn--prod-2", "a" * 63])
def test_names_in_the_pattern_are_taken(name: str) -> None:
    assert check_resource_name(name, "variant") == name


@pytest.mark.parametrize(
    "uri", ["s3://b/../../etc", "s3://b/a/../c", "s3://b/./k", "s3://../k", "s3://b/a/..", "s3://b/a/%2e%2e/../x"]
)
def test_an_s3_uri_with_dot_segments_is_refused_naming_it(tmp_path: Path, uri: str) -> None:
    with pytest.raises(UsageError, match=r"an S3 URI with a '\.' or '\.\.' segment \(a key that escapes its prefix"):
        LocalS3(tmp_path).path(uri)
    with pytest.raises(ValueError, match=uri.replace(".", r"\.")):  # still a ValueError for its callers
        split_uri(uri)


def test_keys_with_dots_inside_segments_are_keys() -> None:
    assert split_uri("s3://b/a..b/.hidden/x.csv") == ("b", "a..b/.hidden/x.csv")


def test_a_run_with_a_dot_dot_input_uri_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--workdir", str(tmp_path), "--param", "InputDataUrl=s3://llpipe-local/../../../etc"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("llpipe run: 's3://llpipe-local/../../../etc': an S3 URI with a '.' or '..'")


@pytest.mark.parametrize("terminal", [True, False])
def test_the_renderers_console_escapes_and_redacts_stored_text_but_keeps_its_own_styles(terminal: bool) -> None:
    import io

    from rich.table import Table

    from pipeline.cli.render import safe_console

    out = io.StringIO()
    console = safe_console(file=out, force_terminal=terminal, color_system="standard" if terminal else None, width=200)
    reason = "Train failed: \x1b[2J\x1b]8;;http://evil\x07 http://ak:sk@10.0.0.1/ refused"
    console.print(f"[red]Failure:[/red] {reason}", markup=True, highlight=False)
    table = Table("step", "failure reason")
    table.add_row("Train", reason)
    console.print(table)
    text = out.getvalue()
    assert text.count("\\x1b[2J\\x1b]8;;http://evil http://***@10.0.0.1/ refused") == 2  # Rich drops BEL itself
    assert "\x1b[2J" not in text and "\x07" not in text and "ak:sk" not in text
    assert ("\x1b[31mFailure:" in text) is terminal  # Rich's own colour, outside the stored text


@pytest.mark.parametrize(
    ("steps", "reason"),
    [
        (
            [{"Name": "Stop", "Type": "Fail", "Arguments": {"ErrorMessage": "sent to http://u:pw@10.1.1.1:9 failed"}}],
            "sent to http://***@10.1.1.1:9 failed",
        ),
        (
            [{"Name": "Stop", "Type": "Fail", "Arguments": {"ErrorMessage": "aws_secret_access_key=wJal/rXU is bad"}}],
            "aws_secret_access_key=*** is bad",
        ),
    ],
)
def test_a_failure_reason_is_stored_redacted(tmp_path: Path, steps: list[dict], reason: str) -> None:
    """The local interpreter's records (execution.json, what `llpipe execution show --json` and the API return)
    never hold the secret a failing step said."""
    from pipeline.local.executions import ExecutionStore
    from pipeline.local.interpreter import Interpreter

    interpreter = Interpreter(
        runners={}, store=ExecutionStore(tmp_path / "executions"), read_json=dict, pipeline_name="p"
    )
    record = interpreter.run({"Version": "2020-12-01", "Parameters": [], "Steps": steps}, {})
    assert record.steps["Stop"].failure_reason == reason
    assert "pw@" not in (record.folder / "execution.json").read_text() and "wJal" not in record.failure_reason


def test_a_traceback_that_escapes_the_command_is_printed_redacted() -> None:
    script = (
        "from pipeline import cli\n"
        "def crash():\n"
        "    raise RuntimeError('POST http://ops:hunter2@10.0.0.9:4566/ refused, aws_session_token=FQoG')\n"
        "cli.main = crash\n"
        "cli.console()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 1 and done.stderr.startswith("Traceback (most recent call last):")
    last = "RuntimeError: POST http://***@10.0.0.9:4566/ refused, aws_session_token=***\n"
    assert done.stderr.endswith(last) and "hunter2" not in done.stderr and "FQoG" not in done.stderr


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["monitor", "--endpoint", "../../x"], "llpipe monitor: --endpoint ../../x: '../../x' is not a name"),
        (["monitor", "--endpoint", "ok", "--variant", "a/.."], "llpipe monitor: --variant a/..: 'a/..' is not a name"),
        (["serve", "--endpoint-name", "x/../y"], "llpipe serve: --endpoint-name x/../y: 'x/../y' is not a name"),
        (["serve", "--variant", "a_b"], "llpipe serve: --variant a_b: 'a_b' is not a name"),
    ],
)
def test_each_command_names_the_flag_of_a_name_sagemaker_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    assert main([*argv, "--workdir", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(said)
