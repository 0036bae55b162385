"""Serve a registered model version on this machine, as its SageMaker endpoint answers: raw rows in (CSV with or
without a header, JSON records, JSON Lines; or Linear Learner's encoded input), scores and label values out.

The version's inference pipeline (the featurizer with Preprocess's encoding, Linear Learner, the labels container)
runs in-process behind SageMaker's container protocol (``GET /ping``, ``POST /invocations``) and the runtime API's
path (``POST /endpoints/<name>/invocations``), so ``boto3.client("sagemaker-runtime", endpoint_url=URL)
.invoke_endpoint(EndpointName=NAME, ...)`` works unchanged. Requests are captured in SageMaker's data-capture format
under ``<bucket>/<pipeline>/datacapture/<endpoint>/<variant>/yyyy/mm/dd/hh/`` in the work dir's local S3, which
``llpipe monitor --endpoint NAME`` checks. Runs until Ctrl-C or SIGTERM, then answers the requests in flight and
stops.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.api._shared import DEFAULT_WORKDIR


def configure(parser: argparse.ArgumentParser) -> None:
    from pipeline.cli.arguments import add_config_arguments, port_number

    parser.add_argument(
        "--model-package",
        metavar="VERSION|ARN",
        default="latest-approved",
        help="the version to serve: a version of the group, group/version, an ARN or latest-approved (the default)",
    )
    parser.add_argument(
        "--port", type=port_number, default=8080, help="the port to listen on (0: any free one; %(default)s)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: %(default)s)")
    parser.add_argument("--endpoint-name", default="llpipe-local", help="the endpoint's name (default: %(default)s)")
    parser.add_argument("--variant", default="AllTraffic", help="its production variant (default: %(default)s)")
    parser.add_argument(
        "--capture-percentage",
        type=float,
        default=100.0,
        metavar="PCT",
        help="the share of requests captured, 0-100 (0: no capture; default %(default)s)",
    )
    parser.add_argument(
        "--unseen-categories",
        choices=("other", "refuse"),
        help="a text value never seen in training: scored as column=(other) and named in the prediction's "
        "unseen_categories (other), or answered 400 naming column and value (refuse); default: the version's "
        "UnseenCategories (other unless its run set it)",
    )
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR, help="the local work dir (.llpipe)")
    parser.add_argument(
        "--ready-file",
        type=Path,
        metavar="FILE",
        help="written (JSON: port, url, pid) once the server answers: what llpipe deploy waits on",
    )
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    import json
    import os

    from pipeline.api.serving import local_server
    from pipeline.cli.arguments import config_from_args
    from pipeline.core.files import write_text_atomically

    config = config_from_args(args)
    server = local_server(
        args.model_package,
        port=args.port,
        host=args.host,
        endpoint_name=args.endpoint_name,
        variant=args.variant,
        capture_percentage=args.capture_percentage,
        unseen_categories=args.unseen_categories,
        workdir=args.workdir,
        config=config,
    )

    def started(running: object) -> None:
        model = server.model
        spec = model.spec if model else None
        print(f"serving {model.package_arn if model else ''} as endpoint {server.endpoint}", flush=True)
        if spec is not None:
            print(f"  columns: {', '.join(spec.columns)}; labels: {list(spec.label_values or []) or 'numeric'}")
        print(f"  runtime: {runtime_client_code(server.url, config.region)}", flush=True)
        print(f"listening on {server.url} (Ctrl-C to stop)", flush=True)
        if args.ready_file is not None:
            ready = {"port": server.port, "url": server.url, "pid": os.getpid()}
            write_text_atomically(args.ready_file, json.dumps(ready) + "\n")

    server.serve_until_signal(started)
    print("stopped", flush=True)
    return 0


def runtime_client_code(url: str, region: str) -> str:
    """The boto3 line that reaches this server as it is, on a machine with no AWS configuration: botocore wants a
    region and signs every request, so a region and placeholder keys are given (the server ignores the signature)."""
    return (
        f"boto3.client('sagemaker-runtime', endpoint_url='{url}', region_name='{region}', "
        "aws_access_key_id='local', aws_secret_access_key='local')"
    )
