"""Schema inference as the commands use it: options, the decision with its content-addressed URI, and the report.

``llpipe run`` samples local files, ``llpipe start`` and ``llpipe schedule`` the objects under ``InputDataUrl``;
all three then pass ``SchemaUrl`` (and the short decisions) as parameters. Nothing is inferred when the user gave
``SchemaUrl``, or with ``--no-infer``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pipeline.definition.schema import (
    DEFAULT_SAMPLE_BYTES,
    DEFAULT_SAMPLE_OBJECTS,
    DEFAULT_SAMPLE_ROWS,
    NothingToSample,
    Sample,
    decide,
    sample_s3,
    schema_uri,
)


def add_inference_arguments(parser: argparse.ArgumentParser, s3: bool = False) -> None:
    """``--no-infer`` and the sample bounds (rows per file; for S3 input also objects and bytes per object)."""
    group = parser.add_argument_group("schema inference (feature order, text columns, label values)")
    group.add_argument("--no-infer", action="store_true", help="decide nothing before the run; no SchemaUrl passed")
    group.add_argument(
        "--sample-rows",
        type=_positive,
        default=DEFAULT_SAMPLE_ROWS,
        metavar="N",
        help=f"rows read from the start of each sampled file ({DEFAULT_SAMPLE_ROWS})",
    )
    if s3:
        group.add_argument(
            "--sample-objects",
            type=_positive,
            default=DEFAULT_SAMPLE_OBJECTS,
            metavar="N",
            help=f"objects under InputDataUrl sampled, the first in key order ({DEFAULT_SAMPLE_OBJECTS})",
        )
        group.add_argument(
            "--sample-bytes",
            type=_positive,
            default=DEFAULT_SAMPLE_BYTES,
            metavar="N",
            help=f"bytes read from each sampled object at most ({DEFAULT_SAMPLE_BYTES})",
        )


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


@dataclass(frozen=True)
class Inferred:
    """A decided schema: its bytes, where it lives, the parameters to pass and what to tell the user."""

    uri: str
    body: bytes
    parameters: dict[str, str]  # SchemaUrl and the short decisions the user did not set
    notes: list[str]
    sample: dict[str, Any]


def infer(sample: Sample, values: Mapping[str, Any], given: set[str], pipeline_prefix: str) -> Inferred:
    """Decide from ``sample`` what the user did not set; the schema's URI is the hash of its bytes."""
    decision = decide(sample, values, given)
    uri = schema_uri(pipeline_prefix, decision.body)
    parameters = {**decision.parameters, "SchemaUrl": uri}
    return Inferred(uri, decision.body, parameters, decision.notes, decision.document["sample"])


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


def infer_s3(
    pipeline_prefix: str,
    declared: Mapping[str, Mapping[str, Any]],
    overrides: Mapping[str, str],
    session: Any,
    args: argparse.Namespace,
) -> Inferred | None:
    """The schema for a SageMaker execution, from the objects under its InputDataUrl (reads only); None when the
    user gave SchemaUrl, passed ``--no-infer``, or the deployed pipeline has no SchemaUrl parameter."""
    if args.no_infer or "SchemaUrl" in overrides or "SchemaUrl" not in declared:
        return None
    values = {name: parameter.get("DefaultValue") for name, parameter in declared.items()}
    values.update(overrides)
    try:
        sample = sample_s3(
            session.client("s3"), str(values["InputDataUrl"]), args.sample_rows, args.sample_objects, args.sample_bytes
        )
    except NothingToSample as error:
        print(f"warning: {error}; no schema passed (Preprocess orders columns by name)", file=sys.stderr)
        return None
    return infer(sample, values, set(overrides), pipeline_prefix)


def infer_for_execution(
    config: Any,
    given: Mapping[str, str],
    session: Any,
    args: argparse.Namespace,
    stream: IO[str],
    declared: Mapping[str, dict[str, Any]],
    needed: bool = True,
) -> Inferred | None:
    """For start and schedule: the schema inferred from the input, reported on ``stream``, for the pipeline as
    deployed (``declared``: its parameters, from DescribePipeline); None with ``--no-infer`` or when not ``needed``."""
    from pipeline.definition.parameters import check_overrides
    from pipeline.sagemaker import aws

    if args.no_infer or not needed:
        return None
    check_overrides(list(declared.values()), given)
    with aws.call(f"sampling the input of {config.pipeline_name}"):
        inferred = infer_s3(config.pipeline_prefix, declared, given, session, args)
    if inferred is not None:
        print_inferred(inferred, stream)
    return inferred
