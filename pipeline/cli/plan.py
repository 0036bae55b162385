"""The capacity plan of an input on SageMaker: per step the fleet, volume, bytes, memory, time and cost.

llpipe plan (PATH | s3://bucket/prefix | --bytes 1TB [--rows 5e9]) [--training-instances N]
            [--processing-instances N] [--instance-type STEP=TYPE] [--price TYPE=USD] [--json]

Computed from the project's benchmarks and the published Linear Learner scaling figure (SIGMOD 2020); every
figure's source is in --json's "figures" and in docs/guides/scaling.md.
"""

from __future__ import annotations

import argparse
import json

from pipeline.core.errors import UsageError


def configure(parser: argparse.ArgumentParser) -> None:
    """The input (a path, an S3 prefix, or a stated size), the counts and types to keep, prices, JSON."""
    parser.add_argument("source", nargs="?", help="a local file or folder, or s3://bucket/prefix")
    parser.add_argument("--bytes", help="a stated input size instead of a source: 1TB, 500GB, 64GiB")
    parser.add_argument("--rows", help="the input's rows (default: counted locally, estimated from the bytes)")
    parser.add_argument("--training-instances", type=int, help="keep this count (default: the most that pays)")
    parser.add_argument("--processing-instances", type=int, help="keep this count (default: enough for memory)")
    parser.add_argument(
        "--instance-type", action="append", default=[], metavar="STEP=TYPE", help="e.g. Train=ml.m5.2xlarge"
    )
    parser.add_argument("--price", action="append", default=[], metavar="TYPE=USD", help="USD per instance-hour")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    from pipeline.cli.arguments import add_config_arguments

    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Measure the input, plan, print."""
    from pipeline.api.capacity import plan
    from pipeline.cli.arguments import config_from_args
    from pipeline.cli.render.plan import plan_lines

    config = config_from_args(args)  # a bad setting is refused before anything runs
    for flag in ("training_instances", "processing_instances"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            raise UsageError(f"--{flag.replace('_', '-')} {value}: expected at least 1")
    prices = {key: _price(key, value) for key, value in _pairs(args.price, "--price", "TYPE=USD").items()}
    result = plan(
        args.source,
        bytes=args.bytes,
        rows=args.rows,
        training_instances=args.training_instances,
        processing_instances=args.processing_instances,
        instance_types=_pairs(args.instance_type, "--instance-type", "STEP=TYPE"),
        prices=prices,
        config=config,
    )
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print("\n".join(plan_lines(result)))
    return 0


def _pairs(items: list[str], flag: str, shape: str) -> dict[str, str]:
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise UsageError(f"{flag} {item!r}: expected {shape}")
        pairs[key] = value
    return pairs


def _price(instance_type: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value < 0:
        raise UsageError(f"--price {instance_type}={text}: expected USD per instance-hour, a number of at least 0")
    return value
