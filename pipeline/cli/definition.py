"""Print or write the pipeline definition JSON, built offline (no AWS account or network needed)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline.cli.arguments import add_config_arguments, config_from_args
from pipeline.core.errors import LlpipeError
from pipeline.core.files import write_text_atomically


def configure(parser: argparse.ArgumentParser) -> None:
    """``--output FILE`` (default: standard output) plus the shared configuration flags."""
    parser.add_argument("--output", "-o", type=Path, metavar="FILE", help="write the JSON here instead of stdout")
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Build the definition; write it atomically to --output, or print it."""
    config = config_from_args(args)
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
