"""Print or write the pipeline definition JSON, built offline (no AWS account or network needed), draw its DAG, or,
with ``--params``, print the table of its parameters."""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from pipeline.cli.arguments import add_config_arguments, config_from_args
from pipeline.cli.render import safe_console
from pipeline.core.errors import LlpipeError
from pipeline.core.files import write_text_atomically
from pipeline.definition.config import PipelineConfig


def configure(parser: argparse.ArgumentParser) -> None:
    """``--output FILE`` (default: standard output), ``--dag FILE.svg|-``, ``--params``, plus the shared
    configuration flags."""
    parser.add_argument("--output", "-o", type=Path, metavar="FILE", help="write the JSON here instead of stdout")
    parser.add_argument(
        "--dag",
        metavar="FILE.svg|-",
        help="draw the definition's DAG instead of printing the JSON: FILE.svg writes it as SVG, '-' prints it in the "
        "terminal, layer by layer (the JSON is still written with --output)",
    )
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
        from pipeline.cli.render.dag import dag_table

        safe_console().print(dag_table(dag))
        return
    print(f"wrote the DAG picture {dag.write(target)}", file=sys.stderr)


def print_parameters(config: PipelineConfig) -> None:
    """The parameters the definition declares, one row each, with the defaults ``config`` gives them; on a terminal
    narrower than the table needs, a block per parameter (a five-column table at 80 columns folds every cell)."""
    from rich.table import Table

    from pipeline.api.parameters import parameter_rows

    console = safe_console(highlight=False)
    title = "Pipeline parameters (override with --param Name=Value)"
    rows = parameter_rows(config)
    if console.width < WIDE_TABLE_COLUMNS:
        console.print(title)
        for row in rows:
            heading = f"{row['name']}  {row['type']}, default {row['default'] or '(empty)'}"
            lines = [heading] if len(heading) <= console.width else [f"{row['name']}  {row['type']}"]
            if len(lines[0]) < len(heading):
                lines += textwrap.wrap(
                    f"default {row['default']}", console.width, initial_indent="  ", subsequent_indent="    "
                )
            lines += textwrap.wrap(
                f"{row['help']}; allowed: {row['allowed']}",
                console.width,
                initial_indent="  ",
                subsequent_indent="    ",
            )
            console.print("\n" + "\n".join(lines), markup=False, soft_wrap=True)
        return
    table = Table(title=title, title_justify="left", expand=True)
    table.add_column("name", no_wrap=True)
    table.add_column("type", no_wrap=True)
    table.add_column("default", overflow="fold", ratio=2)
    table.add_column("allowed", ratio=2)
    table.add_column("what", ratio=3)
    for row in rows:
        table.add_row(row["name"], row["type"], row["default"], row["allowed"], row["help"])
    console.print(table)


WIDE_TABLE_COLUMNS = 140  # below this, --params prints a block per parameter
