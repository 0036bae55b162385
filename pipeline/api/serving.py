"""Serving a registered version locally: ``serve_local`` starts ``llpipe serve``'s server in this process and
returns a :class:`Predictor` (a context manager) whose ``predict(frame)`` sends the rows over HTTP as an application
would and returns the scores and labels as a DataFrame.

    from pipeline import serve_local
    with serve_local(model_package="latest-approved", port=0) as predictor:
        predictor.url, predictor.port              # http://127.0.0.1:54321, the bound port
        predictor.predict(frame)                   # score, predicted_label, label per row
    # or: predictor = serve_local(...); ...; predictor.stop()
"""

from __future__ import annotations

import http.client
import json
import socket
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from pipeline.core.errors import ServingError
from pipeline.core.names import CSV, JSON

if TYPE_CHECKING:
    import pandas as pd

    from pipeline.definition.config import PipelineConfig
    from pipeline.local.serving.server import LocalServer

__all__ = ["Predictor", "local_server", "serve_local"]

ROWS_PER_REQUEST = 5_000  # well under the 6 MB payload limit for typical rows


class Predictor:
    """A running local endpoint: its URL, port and name, ``predict`` over HTTP, and ``stop``."""

    def __init__(self, server: LocalServer) -> None:
        self.server = server

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def endpoint_name(self) -> str:
        return self.server.endpoint

    @property
    def model_package_arn(self) -> str | None:
        return self.server.model.package_arn if self.server.model else None

    def invoke(self, body: bytes, content_type: str = CSV, accept: str = JSON) -> bytes:
        """One raw request to ``/invocations``; a refused request raises ``ServingError`` with the server's
        status and message."""
        connection = http.client.HTTPConnection(self.server.host, self.port, timeout=300)
        try:
            connection.connect()
            # headers and body go in two writes: without TCP_NODELAY, Nagle holds the body for the delayed ACK
            connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            connection.request("POST", "/invocations", body, {"Content-Type": content_type, "Accept": accept})
            response = connection.getresponse()
            answer = response.read()
        except OSError as error:
            raise ServingError(f"the endpoint at {self.url} did not answer: {error}") from None
        finally:
            connection.close()
        if response.status != 200:
            message = answer.decode("utf-8", "replace")
            try:
                message = json.loads(message)["message"]
            except (ValueError, KeyError, TypeError):
                pass
            raise ServingError(f"the endpoint answered {response.status}: {message}")
        return answer

    def predict(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The predictions of ``frame``'s rows (columns by name; others ignored), in order: ``score``,
        ``predicted_label`` and ``label`` (the label value) for classifiers, ``score`` for regressors."""
        import pandas as pd

        from pipeline.api.frames import numeric_times

        rows: list[dict[str, Any]] = []
        for start in range(0, max(len(frame), 1), ROWS_PER_REQUEST):
            part = frame.iloc[start : start + ROWS_PER_REQUEST]
            if part.empty:
                break
            # dates and times as the seconds run_local trained on (its frames are written this way), not as text
            answer = self.invoke(numeric_times(part).to_csv(index=False).encode("utf-8"), CSV, JSON)
            rows.extend(json.loads(answer)["predictions"])
        return pd.DataFrame(rows, index=frame.index)

    def stop(self) -> None:
        """Stop the server (the requests in flight are answered first)."""
        self.server.stop()

    def __enter__(self) -> Predictor:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = self.url if self.server.running else "stopped"
        return f"<Predictor {self.endpoint_name} {state} {self.model_package_arn}>"


def local_server(
    model_package: str | int | None = None,
    *,
    port: int = 8080,
    host: str = "127.0.0.1",
    endpoint_name: str | None = None,
    variant: str | None = None,
    capture_percentage: float | None = 100.0,
    unseen_categories: str | None = None,
    workdir: str | Path | None = None,
    config: PipelineConfig | None = None,
) -> LocalServer:
    """The (not yet started) server of ``model_package`` (a version, ``group/version``, an ARN, or None /
    ``latest-approved``) from the work dir's registry: what ``llpipe serve`` runs until a signal, and what
    ``serve_local`` starts on a thread. Issue 29's local deploy runs one per stage, each on its own port.
    ``unseen_categories``: a text value never seen in training is scored as ``column=(other)`` and named in its
    prediction's ``unseen_categories`` ("other"), or answered 400 naming column and value ("refuse"); None: the
    version's own setting, its run's ``UnseenCategories`` parameter ("other" unless set)."""
    from pipeline.api._shared import DEFAULT_WORKDIR, load_settings
    from pipeline.local.serving.launch import DEFAULT_ENDPOINT, build_server
    from pipeline.local.workdir import Workdir

    options: dict[str, Any] = {"port": port, "host": host, "capture_percentage": capture_percentage}
    options["unseen_categories"] = unseen_categories
    options["endpoint"] = endpoint_name or DEFAULT_ENDPOINT
    if variant:
        options["variant"] = variant
    folder = Workdir.at(Path(workdir if workdir is not None else DEFAULT_WORKDIR))
    return build_server(folder, config or load_settings({}), model_package, **options)


def serve_local(model_package: str | int | None = None, *, port: int = 8080, **options: Any) -> Predictor:
    """Start serving ``model_package`` on ``port`` (0: any free port) in this process and return its predictor;
    stop it with ``predictor.stop()`` or a ``with`` block. Options as :func:`local_server`."""
    return Predictor(local_server(model_package, port=port, **options).start())
