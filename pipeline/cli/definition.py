"""Print or write the pipeline definition JSON, built offline (no AWS account or network needed), or draw its DAG."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline.cli.arguments import add_config_arguments, config_from_args
from pipeline.core.errors import LlpipeError
from pipeline.core.files import write_text_atomically


def configure(parser: argparse.ArgumentParser) -> None:
    """``--output FILE`` (default: standard output), ``--dag FILE.svg|-`` plus the shared configuration flags."""
    parser.add_argument("--output", "-o", type=Path, metavar="FILE", help="write the JSON here instead of stdout")
    parser.add_argument(
        "--dag",
        metavar="FILE.svg|-",
        help="draw the definition's DAG instead of printing the JSON: FILE.svg writes it as SVG, '-' prints it in the "
        "terminal, layer by layer (the JSON is still written with --output)",
    )
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Build the definition; write it atomically to --output, or print it."""
    config = config_from_args(args)
    from pipeline.definition.build import build_definition

    try:
        built = build_definition(config)
    except FileNotFoundError as error:
        raise LlpipeError(str(error)) from None
    if args.dag is not None:
        _draw(built.definition_json, args.dag, f"Pipeline {config.pipeline_name}")
    if args.output is None:
        if args.dag is None:
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


def _draw(definition_json: str, target: str, title: str) -> None:
    """``--dag``: the SVG picture into a file, or the terminal form for ``-``."""
    from pipeline.api.dag import definition_dag

    dag = definition_dag(definition_json, title=title)
    if target == "-":
        from rich.console import Console

        from pipeline.cli.render.dag import dag_table

        Console().print(dag_table(dag))
        return
    print(f"wrote the DAG picture {dag.write(target)}", file=sys.stderr)
