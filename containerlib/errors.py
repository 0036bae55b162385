"""The one error a container job reports as bad input."""

from __future__ import annotations


class InputError(Exception):
    """Bad input or arguments the user must fix, named in the message (file, row, parameter, expectation); a job
    prints it as one line and exits with status 1."""


class TableError(InputError):
    """An input table that cannot be read as one: the message names the file (and the row) and what is wrong."""
