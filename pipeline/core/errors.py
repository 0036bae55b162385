"""Every error ``llpipe`` reports to a person, in one tree; ``pipeline.cli.main`` maps it to an exit code.

``UsageError`` (exit 2): something the user asked for cannot be done as asked (configuration, parameter
overrides, data options, a definition the local backend cannot run). Any other ``LlpipeError`` (exit 1): the work
was attempted and failed (AWS, conversion, training, a registry request). Each prints as one line,
``llpipe <command>: <message>``, without a traceback.
"""

from __future__ import annotations


class LlpipeError(Exception):
    """An error worth one line to the user; exit code 1."""

    exit_code = 1


class UsageError(LlpipeError, ValueError):
    """The request cannot be done as given; exit code 2."""

    exit_code = 2


class ConfigError(UsageError):
    """A configuration value that is missing or invalid; the message names its source."""


class ParameterError(UsageError):
    """A pipeline parameter override the definition cannot take (unknown name, wrong type, not in its enum)."""


class DataError(UsageError):
    """The data given to ``llpipe run --data`` cannot be used."""


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
