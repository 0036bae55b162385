"""Synchronous data-parallel aggregation between training instances (a tiny parameter server).

Every instance pushes a float64 vector each round; the server waits for all of them, sums them in host order and
sends the same sum back to everyone, so all replicas apply bit-identical updates (MXNet KVStore ``dist_sync``
semantics). Connections are ``multiprocessing.connection`` sockets on 127.0.0.1 with an auth key. If any instance
disconnects (crash) or a round times out, the server closes every connection, so no instance waits forever.
"""

from __future__ import annotations

import threading
from multiprocessing.connection import Client, Connection, Listener

import numpy as np

DEFAULT_TIMEOUT_SECONDS = 600.0


class CollectiveAborted(RuntimeError):
    """Another instance failed (or the server went away), so this instance cannot continue."""


class LocalCollective:
    """The single-instance case: the sum over one host is the host's own vector."""

    rank = 0
    size = 1

    def allreduce(self, vector: np.ndarray) -> np.ndarray:
        """Return ``vector`` unchanged (as float64)."""
        return np.asarray(vector, dtype=np.float64)

    def close(self) -> None:
        """Nothing to release."""


class ClientCollective:
    """One instance's connection to the parameter server."""

    def __init__(self, address: tuple[str, int], authkey: bytes, rank: int, size: int,
                 timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self.rank = rank
        self.size = size
        self._timeout = timeout
        try:
            self._conn: Connection = Client(address, authkey=authkey)
            self._conn.send(rank)
        except OSError as error:
            where = f"{address[0]}:{address[1]}"
            raise CollectiveAborted(f"cannot reach the parameter server at {where}: {error}") from error

    def allreduce(self, vector: np.ndarray) -> np.ndarray:
        """Sum ``vector`` over all instances; every instance must call this the same number of times."""
        try:
            self._conn.send_bytes(np.ascontiguousarray(vector, dtype=np.float64).tobytes())
            if not self._conn.poll(self._timeout):
                raise CollectiveAborted(f"no answer from the parameter server within {self._timeout:.0f} s")
            return np.frombuffer(self._conn.recv_bytes(), dtype=np.float64).copy()
        except (EOFError, OSError) as error:
            raise CollectiveAborted("training aborted: another instance failed or the parameter server stopped") \
                from error

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()


class ParameterServer:
    """Aggregates pushes from ``size`` instances; runs in a background thread of the launcher."""

    def __init__(self, size: int, authkey: bytes, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self.size = size
        self._authkey = authkey
        self._timeout = timeout
        self._listener = Listener(("127.0.0.1", 0), authkey=authkey)
        self._connections: list[Connection | None] = [None] * size
        self._thread = threading.Thread(target=self._serve, name="linear-learner-parameter-server", daemon=True)
        self._stopped = threading.Event()
        self.error: str | None = None

    @property
    def address(self) -> tuple[str, int]:
        """Host and port the instances connect to."""
        return self._listener.address  # type: ignore[return-value]

    def start(self) -> None:
        """Start serving in the background."""
        self._thread.start()

    def stop(self) -> None:
        """Close every connection so blocked instances fail fast, and stop the thread."""
        self._stopped.set()
        self._close_all()
        if self._thread.is_alive() and any(conn is None for conn in self._connections):
            try:  # wake a thread still waiting in accept() for instances that never connected
                Client(self.address, authkey=self._authkey).close()
            except OSError:
                pass
        try:
            self._listener.close()
        except OSError:
            pass
        self._thread.join(timeout=5)

    def _close_all(self) -> None:
        for conn in self._connections:
            if conn is not None:
                try:
                    conn.close()
                except OSError:
                    pass

    def _serve(self) -> None:
        try:
            for _ in range(self.size):
                conn = self._listener.accept()
                rank = conn.recv()
                self._connections[rank] = conn
            connections = [c for c in self._connections if c is not None]
            while not self._stopped.is_set():
                total: np.ndarray | None = None
                for rank, conn in enumerate(connections):
                    if not conn.poll(self._timeout):
                        raise TimeoutError(f"algo-{rank + 1} sent nothing for {self._timeout:.0f} s")
                    part = np.frombuffer(conn.recv_bytes(), dtype=np.float64)
                    total = part.copy() if total is None else total + part
                assert total is not None
                payload = total.tobytes()
                for conn in connections:
                    conn.send_bytes(payload)
        except (EOFError, OSError, TimeoutError, ValueError) as error:
            if not self._stopped.is_set():
                self.error = str(error) or type(error).__name__
        finally:
            self._close_all()
