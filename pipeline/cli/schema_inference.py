"""Schema inference as the commands show it: what was inferred, from how much, and where the schema is."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from pipeline.cli import flag
from pipeline.definition.config import PipelineConfig
from pipeline.definition.schema import NothingToSample
from pipeline.definition.schema_inference import Inferred


def print_inferred(inferred: Inferred, stream: IO[str], local_path: Path | None = None) -> None:
    """What was inferred, from how much, and where the schema is."""
    sample = inferred.sample
    print(
        f"Inferred from the first {sample['rows_per_file']:,} rows of {sample['files_sampled']} of "
        f"{sample['files_total']} file(s) ({sample['rows']:,} rows sampled):",
        file=stream,
    )
    for note in inferred.notes:
        print(f"  {note}", file=stream)
    where = f" ({local_path})" if local_path else ""
    print(f"  schema: {inferred.uri}{where}", file=stream)
    passed = {name: value for name, value in inferred.parameters.items() if name != "SchemaUrl"}
    if passed:
        print("  parameters: " + ", ".join(f"{name}={value}" for name, value in passed.items()), file=stream)


def infer_for_execution(
    config: PipelineConfig,
    given: Mapping[str, str],
    session: Any,
    args: argparse.Namespace,
    stream: IO[str],
    declared: Mapping[str, dict[str, Any]],
    needed: bool = True,
) -> Inferred | None:
    """For start and schedule: the schema inferred from the input (``pipeline.sagemaker.schema_inference``), reported on
    ``stream``; None with ``--no-infer``, when not ``needed``, or (with a warning) when there is nothing to sample."""
    from pipeline.sagemaker.schema_inference import infer_from_s3

    if args.no_infer or not needed:
        return None
    try:
        inferred = infer_from_s3(
            config, declared, given, session, args.sample_rows, args.sample_objects, args.sample_bytes
        )
    except NothingToSample as error:
        print(f"warning: {error.worded(flag)}; no schema passed (Preprocess orders columns by name)", file=sys.stderr)
        return None
    if inferred is not None:
        print_inferred(inferred, stream)
    return inferred
