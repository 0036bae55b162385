"""``python -m pipeline`` is the ``llpipe`` command."""

from pipeline.cli import console

console()
