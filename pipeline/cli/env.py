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
    from pipeline.core.images import PROCESSING_IMAGES
    from pipeline.local.environments import EnvironmentBuildError, ImageEnvironments

    environments = ImageEnvironments.default()
    images = [image for image in PROCESSING_IMAGES if args.image in (None, image.key)]
    shown, status = [], 0
    for image in images:
        entry = {"image": image.key, "python": image.python, "pins": dict(image.pins)}
        entry["location"] = str(environments.folder(image))
        if args.action == "build":
            try:
                built = environments.ensure(image, lambda text, key=image.key: print(f"{key}: {text}", file=sys.stderr))
            except EnvironmentBuildError as error:
                print(f"llpipe env build: {image.key}: {error}", file=sys.stderr)
                entry["built"], status = False, 1
                shown.append(entry)
                continue
        else:
            built = environments.cached(image)
        entry["built"] = built is not None
        if built is not None:
            entry.update(environment=built.to_json())
            status = status if built.exact else 1
        shown.append(entry)
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
