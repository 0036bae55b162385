"""Errors of the Python API in its own words: an option an error mentions (:func:`pipeline.core.errors.opt`) is
named as the keyword argument a caller of ``run_local(data, Epochs=0)`` gave, not as a command-line flag."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pipeline.core.errors import ARGUMENTS, PARAMETERS, LlpipeError


def argument(name: str, value: str | None) -> str:
    """An option as the API takes it: ``Epochs=0``, ``data=PATH``, ``infer=False``; bare without a value."""
    if name == PARAMETERS:
        return "keyword arguments (Name=value)"
    if name == ARGUMENTS:
        return "keyword arguments"
    return name if value is None else f"{name}={value}"


@contextmanager
def in_api_words() -> Iterator[None]:
    """Re-raise an ``LlpipeError`` (the same error: class, fields, exit code) worded with :func:`argument`."""
    try:
        yield
    except LlpipeError as error:
        error.words = argument
        raise
