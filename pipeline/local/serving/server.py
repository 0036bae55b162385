"""``LocalServer``: the application on uvicorn, on a thread of this process, its socket bound before it starts (so
port 0 works and a taken port fails at once); started and stopped from Python (a context manager), or run until
SIGINT/SIGTERM by ``llpipe serve``. Stopping finishes the requests in flight and closes the capture file."""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

from pipeline.core.errors import ServingError
from pipeline.local.serving.capture import CaptureWriter
from pipeline.local.serving.model import ServedModel

STARTUP_TIMEOUT_SECONDS = 60.0


class LocalServer:
    """One endpoint on ``host:port``; ``port`` is the bound one (pass 0 for any free port)."""

    def __init__(
        self,
        app: Any,
        endpoint: str,
        host: str = "127.0.0.1",
        port: int = 8080,
        capture: CaptureWriter | None = None,
        log_level: str = "warning",
        model: ServedModel | None = None,
    ) -> None:
        self.app, self.endpoint, self.host = app, endpoint, host
        self.model = model  # what the app serves: its spec (columns, labels) and package
        self.capture = capture
        self._requested_port = port
        self._log_level = log_level
        self._socket: socket.socket | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._socket is None:
            raise ServingError("the server is not started")
        return int(self._socket.getsockname()[1])

    @property
    def url(self) -> str:
        """``http://host:port``: the container protocol's root and the runtime API's ``endpoint_url``."""
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> LocalServer:
        """Bind the socket and serve on a thread; returns once the server accepts requests."""
        import uvicorn

        if self.running:
            return self
        # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on such sockets' connections, and without it
        # Nagle's algorithm holds a response's second write until the client's delayed ACK (~40 ms a request)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self._requested_port))
        except OverflowError:  # a port outside 0-65535: socket's own words name no value
            sock.close()
            raise ServingError(
                f"cannot listen on port {self._requested_port}: expected a port, 0 to 65535 (0: any free one)",
                option="port",
                value=self._requested_port,
            ) from None
        except OSError as error:
            sock.close()
            raise ServingError(f"cannot listen on {self.host}:{self._requested_port}: {error.strerror}") from None
        sock.listen(2048)
        self._socket = sock
        config = uvicorn.Config(
            self.app, log_level=self._log_level, access_log=False, lifespan="off", timeout_graceful_shutdown=30
        )
        self._server = uvicorn.Server(config)
        self._server.install_signal_handlers = lambda: None  # older uvicorn; newer ones skip them off the main thread
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name=f"llpipe-serve-{self.endpoint}", daemon=True
        )
        self._thread.start()
        started = threading.Event()
        while not started.wait(0.01):  # waits on the server's state, never on a fixed time
            if self._server.started:
                started.set()
            elif not self._thread.is_alive():
                self._close()
                raise ServingError(f"the server on {self.host}:{self.port} stopped while starting")
        return self

    def stop(self) -> None:
        """Stop accepting, finish the requests in flight, close the socket and the capture file."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(STARTUP_TIMEOUT_SECONDS)
        self._close()

    def _close(self) -> None:
        if self._socket is not None:
            self._socket.close()
        if self.capture is not None:
            self.capture.close()
        self._thread = None

    def serve_until_signal(self, on_started: Callable[[LocalServer], None] | None = None) -> None:
        """Serve until SIGINT (Ctrl-C) or SIGTERM, then stop cleanly (main thread only); ``on_started`` is called
        once the server accepts requests."""
        stop = threading.Event()
        previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.start()
            if on_started is not None:
                on_started(self)
            while not stop.wait(0.5) and self.running:
                pass
        finally:
            self.stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()
