"""Placeholder until this command lands (the owner replaces this whole file)."""

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    """No arguments yet."""


def run(args: argparse.Namespace) -> int:
    """Not built yet."""
    raise SystemExit("this command is not built yet")
