"""Errors of the Python API in the API's own words: the checks are shared with the CLI and name its flags
(``--param Epochs=0``, ``--data``, "from command line"); a caller of ``run_local(data, Epochs=0)`` gave keyword
arguments, so the message names those."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from pipeline.core.errors import LlpipeError

# CLI wording -> the keyword arguments of run_local / start, in order
REWORDINGS = (
    (re.compile(r"--param (?=\w)"), ""),
    (re.compile(r"--param\b"), "keyword arguments (Name=value)"),
    (re.compile(r"--data\b"), "data"),
    (re.compile(r"--label-column\b"), "label_column"),
    (re.compile(r"--predictor-type\b"), "predictor_type"),
    (re.compile(r"--workdir\b"), "workdir"),
    (re.compile(r"--config\b"), "config"),
    (re.compile(r"--no-infer\b"), "infer=False"),
    (re.compile(r"\bcommand line\b"), "keyword arguments"),
)


def api_words(text: str) -> str:
    """A message of the shared checks as a Python caller reads it."""
    for pattern, replacement in REWORDINGS:
        text = pattern.sub(replacement, text)
    return text


@contextmanager
def in_api_words() -> Iterator[None]:
    """Re-raise an ``LlpipeError`` (same class, same exit code) with its message in the API's words."""
    try:
        yield
    except LlpipeError as error:
        error.args = (api_words(str(error)), *error.args[1:])
        raise
