"""Print or write the pipeline definition JSON, built offline (no AWS account or network needed); or, with
``--params``, the table of its parameters."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline.cli.arguments import add_config_arguments, config_from_args
from pipeline.core.errors import LlpipeError
from pipeline.core.files import write_text_atomically
from pipeline.definition.config import PipelineConfig


def configure(parser: argparse.ArgumentParser) -> None:
    """``--output FILE`` (default: standard output), ``--params``, plus the shared configuration flags."""
    parser.add_argument("--output", "-o", type=Path, metavar="FILE", help="write the JSON here instead of stdout")
    parser.add_argument(
        "--params", action="store_true", help="print the parameters (name, type, default, allowed, what) instead"
    )
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Build the definition; write it atomically to --output, or print it."""
    config = config_from_args(args)
    if args.params:
        print_parameters(config)
        return 0
    from pipeline.definition.build import build_definition

    try:
        built = build_definition(config)
    except FileNotFoundError as error:
        raise LlpipeError(str(error)) from None
    if args.output is None:
        sys.stdout.write(built.definition_json)
        return 0
    output: Path = args.output
    try:
        write_text_atomically(output, built.definition_json)
    except OSError as error:
        raise LlpipeError(f"cannot write {output}: {error.strerror}") from None
    print(
        f"wrote {output} ({len(built.definition_json)} bytes, {len(built.uploads)} code objects to upload)",
        file=sys.stderr,
    )
    return 0


def print_parameters(config: PipelineConfig) -> None:
    """The parameters the definition declares, one row each, with the defaults ``config`` gives them."""
    from rich.console import Console
    from rich.table import Table

    from pipeline.api.parameters import parameter_rows

    table = Table(title="Pipeline parameters (override with --param Name=Value)", title_justify="left", expand=True)
    table.add_column("name", no_wrap=True)
    table.add_column("type", no_wrap=True)
    table.add_column("default", overflow="fold", ratio=2)
    table.add_column("allowed", ratio=2)
    table.add_column("what", ratio=3)
    for row in parameter_rows(config):
        table.add_row(row["name"], row["type"], row["default"], row["allowed"], row["help"])
    Console(highlight=False).print(table)
