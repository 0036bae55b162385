"""Every error ``llpipe`` reports to a person, in one tree; ``pipeline.cli.main`` maps it to an exit code.

``UsageError`` (exit 2): something the user asked for cannot be done as asked (configuration, parameter
overrides, data options, a definition the local backend cannot run). Any other ``LlpipeError`` (exit 1): the work
was attempted and failed (AWS, conversion, training, a registry request). Each prints as one line,
``llpipe <command>: <message>``, without a traceback.

Messages never spell how a surface takes an option: they name it with :func:`opt` (``opt("Epochs", 0)``,
``opt("data", path)``), and whoever shows the error words it (:meth:`LlpipeError.worded`): the CLI as its flags
(``--param Epochs=0``, ``--data PATH``), the Python API as its keyword arguments (``Epochs=0``, ``data=PATH``),
anything else with :func:`neutral` words (``parameter Epochs=0``, ``data PATH``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pipeline.core.safe_text import redact

# An option's mention inside a message: OPEN name[=value] CLOSE (characters no message or value uses)
OPEN, CLOSE = "\u2983", "\u2984"
MENTION = re.compile(f"{OPEN}([^{OPEN}{CLOSE}=]+)(?:=([^{OPEN}{CLOSE}]*))?{CLOSE}")

# A pipeline parameter is capitalised (``Epochs``); a setting is lower case (``data``, ``label_column``). Two
# mentions name no single option: PARAMETERS (pipeline parameters in general) and ARGUMENTS (what the caller gave
# this call, as a configuration source beside the environment and the config file).
PARAMETERS, ARGUMENTS = "parameters", "arguments"

Words = Callable[[str, "str | None"], str]
"""How a surface names an option: ``(name, value or None) -> text``."""


def opt(name: str, value: object = None) -> str:
    """A mention of option ``name`` (with ``value`` if not None) for a message, worded when the error is shown."""
    if value is None:
        return f"{OPEN}{name}{CLOSE}"
    return f"{OPEN}{name}={value}{CLOSE}"


def neutral(name: str, value: str | None) -> str:
    """Options in no surface's syntax: ``parameter Epochs=0``, ``label column y``, ``infer off``, ``pipeline
    parameters``."""
    if name == PARAMETERS:
        return "pipeline parameters"
    if name == ARGUMENTS:
        return "overrides"
    if name[:1].isupper():
        return f"parameter {name}" + ("" if value is None else f"={value}")
    setting = name.replace("_", " ")
    switch = {"True": " on", "False": " off", None: ""}
    return setting + switch[value] if value in switch else f"{setting} {value}"


def worded(text: str, words: Words) -> str:
    """``text`` with its option mentions (:func:`opt`) in ``words``."""
    return MENTION.sub(lambda match: words(match.group(1), match.group(2)), text)


class LlpipeError(Exception):
    """An error worth one line to the user; exit code 1.

    Fields, all optional, for a caller to act on: ``option`` (the parameter or setting at fault, ``Epochs`` or
    ``data``) and its ``value``, what was ``expected``, the ``file``, ``row`` and ``column`` of bad input. The
    message starts with the option (``opt(option, value): message``) unless it mentions it (same value) itself, and
    ``str()`` words it with ``words`` (:func:`neutral` unless a surface set its own)."""

    exit_code = 1
    words: Words = staticmethod(neutral)

    def __init__(
        self,
        message: str = "",
        *,
        option: str | None = None,
        value: object = None,
        expected: str | None = None,
        file: str | None = None,
        row: int | None = None,
        column: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.option, self.value, self.expected = option, value, expected
        self.file, self.row, self.column = file, row, column

    @property
    def template(self) -> str:
        """The message with its mentions unworded: to carry this error's text into another one."""
        subject = None if self.option is None else opt(self.option, self.value)
        return self.message if subject is None or subject in self.message else f"{subject}: {self.message}"

    def worded(self, words: Words) -> str:
        """The message as a surface shows it: ``words`` names every option it mentions, secrets redacted
        (:func:`~pipeline.core.safe_text.redact`: a credential in an endpoint URL or a key never shows)."""
        return redact(worded(self.template, words))

    def __str__(self) -> str:
        return self.worded(self.words)


class UsageError(LlpipeError, ValueError):
    """The request cannot be done as given; exit code 2."""

    exit_code = 2


class ConfigError(UsageError):
    """A configuration value that is missing or invalid; the message names its source."""


class ParameterError(UsageError):
    """A pipeline parameter override the definition cannot take (unknown name, wrong type, not in its enum)."""


class DataError(UsageError):
    """The data given to a local run cannot be used."""


class SchemaError(UsageError):
    """The input sample cannot give a schema: a missing label column, files whose columns differ, labels that do
    not fit the predictor type."""


class DefinitionError(UsageError):
    """A definition the local backend cannot run: unknown step type or expression, bad reference, cycle."""


class ExpressionError(DefinitionError):
    """An expression of the definition that cannot be checked or resolved."""


class ConditionError(DefinitionError):
    """A Condition step's condition that cannot be checked or evaluated."""


class AlgorithmInputError(UsageError):
    """Input the local Linear Learner cannot use (hyperparameters, channels, records): what SageMaker's algorithm
    containers report as a ``ClientError`` (not botocore's)."""


class AwsError(LlpipeError):
    """An AWS call failed; the message names the operation and AWS's error code."""


class MissingCredentialsError(AwsError):
    """An AWS call could not start: no credentials were found (so the id may not be a SageMaker one at all)."""


class ModelsError(LlpipeError):
    """A model-registry request that cannot be done (no such version, nothing registered yet)."""


class MonitorError(LlpipeError):
    """A data-quality monitoring request that cannot be done (no capture files in the window, no baseline)."""


class TrainingError(LlpipeError):
    """A local Linear Learner training job failed; the message is the failing instance's failure reason."""


class LlpipeWarning(UserWarning):
    """Something the user must know that does not stop the command; the ``llpipe`` command prints it as one line,
    ``llpipe: warning: <message>``."""


class Interrupted(KeyboardInterrupt):
    """A stop signal (SIGTERM from ``timeout``, CI cancellation, ``docker stop``) raised where Ctrl-C would raise
    ``KeyboardInterrupt``, so the run stops the same way; the exit code is 128 + the signal number."""

    def __init__(self, signal_number: int, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal_number = signal_number
        self.signal_name = signal_name


def one_line(text: str) -> str:
    """Lines of a message (a log's tail, the ExitMessage of several instances) as one line: the non-empty ones,
    stripped, joined by `` | ``; how a failure reason shows them, in a table cell or a summary."""
    return " | ".join(line.strip() for line in text.splitlines() if line.strip())


class ServingError(LlpipeError):
    """A model version that cannot be served locally (not an inference pipeline, its model data missing), or a
    server that cannot start (the port taken)."""
