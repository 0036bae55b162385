"""Open MLflow's UI on the local executions' runs: ``mlflow server`` on the work dir's store
(``sqlite:///<workdir>/mlflow.db``, or ``--tracking-uri``), bound to 127.0.0.1, until Ctrl-C or SIGTERM, which stop
it (by its PID) and end the command with exit code 0. Prints the URL (and the pipeline experiment's) once the server
answers. A tracking URI that is already a server (``http://...``) has a UI of its own: its URL is printed and
nothing is started.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.api._shared import DEFAULT_WORKDIR


def configure(parser: argparse.ArgumentParser) -> None:
    """``--port``, ``--workdir`` and the shared configuration (``--tracking-uri``, ``--mlflow-experiment``)."""
    from pipeline.cli.arguments import add_config_arguments, port_number

    parser.add_argument(
        "--port",
        type=port_number,
        default=5000,
        help="the port to listen on (0: any free one; %(default)s, where the run summaries' links point)",
    )
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR, help="the local work dir (.llpipe)")
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Start the server, print where it is, wait for a stop signal, stop the server."""
    from pipeline.api._shared import open_workdir
    from pipeline.api.tracking import artifact_root, default_tracking_uri
    from pipeline.cli.arguments import config_from_args
    from pipeline.core.errors import LlpipeError, UsageError, opt
    from pipeline.core.mlflow_ui import MlflowUi
    from pipeline.core.tracking import is_http

    config = config_from_args(args)
    workdir = open_workdir(args.workdir)
    uri = config.mlflow_tracking_uri or default_tracking_uri(workdir)
    if is_http(uri):
        print(f"MLflow UI: {uri.rstrip('/')} (the tracking server's own)", flush=True)
        return 0
    if uri.startswith("arn:"):
        raise UsageError(
            f"{opt('mlflow_tracking_uri', uri)} is a SageMaker MLflow ARN: open its UI from SageMaker Studio "
            "(MLflow, then the tracking server or App)"
        )
    server = MlflowUi.start(uri, artifact_root(uri, workdir), args.port, workdir.root / "mlflow-ui.log")
    try:
        server.wait_ready()
        print(f"MLflow UI of {uri}: {server.url}", flush=True)
        experiment = server.experiment_id(config.experiment_name)
        if experiment is not None:
            print(f"  experiment {config.experiment_name}: {server.url}/#/experiments/{experiment}", flush=True)
        print(f"server PID {server.process.pid}, log {server.log} (Ctrl-C to stop)", flush=True)
        code = server.wait()
    except KeyboardInterrupt:
        server.stop()
        print("stopped", flush=True)
        return 0
    finally:
        server.stop()  # whatever happened before the wait: the server never outlives the command
    raise LlpipeError(f"mlflow server exited with {code} (log: {server.log})")
