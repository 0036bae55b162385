"""Build or show the local environments of the processing images (their Python and library pins).

``llpipe run`` builds an image's environment on first use; ``llpipe env build`` does it ahead of time (``make test``
does, so tests share one build), ``llpipe env show`` says where each lives and what it holds. The cache dir is
``$LLPIPE_CACHE_DIR`` (default ``~/.cache/llpipe``).
"""

from __future__ import annotations

import argparse
import json
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    """``build`` and ``show``, each for every image of the table or one named by its key."""
    from pipeline.core.images import PROCESSING_IMAGES

    keys = [image.key for image in PROCESSING_IMAGES]
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for action, help_text in (
        ("build", "build the environment of each processing image unless it is cached"),
        ("show", "show each processing image's environment: where, Python, libraries, built or not"),
    ):
        command = sub.add_parser(action, help=help_text)
        command.add_argument("--image", choices=keys, help="only this image (default: all)")
        command.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    """0 when every environment asked for is (now) built and exact; 1 otherwise."""
    from pipeline.api.environments import processing_environments

    failed = []

    def build_failed(key: str, reason: str) -> None:
        print(f"llpipe env build: {key}: {reason}", file=sys.stderr)
        failed.append(key)

    shown = processing_environments(
        args.image,
        build=args.action == "build",
        on_progress=lambda key, text: print(f"{key}: {text}", file=sys.stderr),
        on_error=build_failed,
    )
    inexact = [entry for entry in shown if entry["built"] and not entry["environment"]["exact"]]
    status = 1 if failed or inexact else 0
    if args.json:
        print(json.dumps(shown, indent=2))
        return status
    for entry in shown:
        state = "built" if entry["built"] else "not built (built on first use by `llpipe run`, or `llpipe env build`)"
        print(f"{entry['image']}: {state}\n  location: {entry['location']}")
        environment = entry.get("environment")
        if environment:
            libraries = ", ".join(f"{name} {version}" for name, version in environment["libraries"].items())
            print(f"  Python {environment['python']}: {libraries}; exact: {str(environment['exact']).lower()}")
            if environment.get("build_seconds") is not None:
                print(f"  built in {environment['build_seconds']}s")
        else:
            pins = ", ".join(f"{name} {version}" for name, version in entry["pins"].items())
            print(f"  Python {entry['python']}: {pins}")
    return status
