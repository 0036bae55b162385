"""Synchronous data-parallel aggregation between training instances (a tiny parameter server).

Every instance pushes a float64 vector each round; the server waits for all of them, sums them in host order and
sends the same sum back to everyone, so all replicas apply bit-identical updates (MXNet KVStore ``dist_sync``
semantics). Transport: TCP on 127.0.0.1 with TCP_NODELAY (one round is one small request and reply; Nagle's
algorithm would add ~40 ms per step), frames of an 8-byte length plus payload, and a shared secret checked when an
instance connects. If any instance disconnects (crash) or a round times out, the server closes every connection, so
no instance waits forever.
"""

from __future__ import annotations

import hmac
import socket
import struct
import threading
import time

import numpy as np

DEFAULT_TIMEOUT_SECONDS = 600.0
_LENGTH = struct.Struct("<Q")
_HELLO = struct.Struct("<i")


class CollectiveAborted(RuntimeError):
    """Another instance failed (or the server went away), so this instance cannot continue."""


class PeerSilent(CollectiveAborted):
    """A peer published nothing for the heartbeat (stopped or hung): this instance names the root cause, which will
    not end by itself to report it."""


def _configure(sock: socket.socket, timeout: float) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.settimeout(timeout)


def _receive_exactly(sock: socket.socket, size: int) -> bytes:
    buffer = bytearray(size)
    view = memoryview(buffer)
    received = 0
    while received < size:
        count = sock.recv_into(view[received:])
        if count == 0:
            raise EOFError("connection closed")
        received += count
    return bytes(buffer)


def _send_frame(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(_LENGTH.pack(len(payload)) + payload)


def _receive_frame(sock: socket.socket) -> bytes:
    (size,) = _LENGTH.unpack(_receive_exactly(sock, _LENGTH.size))
    return _receive_exactly(sock, size)


class LocalCollective:
    """The single-instance case: the sum over one host is the host's own vector."""

    rank = 0
    size = 1
    wait_seconds = 0.0  # nothing to wait for

    def allreduce(self, vector: np.ndarray) -> np.ndarray:
        """Return ``vector`` unchanged (as float64)."""
        return np.asarray(vector, dtype=np.float64)

    def close(self) -> None:
        """Nothing to release."""


class ClientCollective:
    """One instance's connection to the parameter server."""

    def __init__(
        self, address: tuple[str, int], authkey: bytes, rank: int, size: int, timeout: float = DEFAULT_TIMEOUT_SECONDS
    ) -> None:
        self.rank = rank
        self.size = size
        self.wait_seconds = 0.0  # time in the exchange: sending, the server's wait for every host, the answer
        try:
            self._sock = socket.create_connection(address, timeout=timeout)
            _configure(self._sock, timeout)
            _send_frame(self._sock, authkey + _HELLO.pack(rank))
        except OSError as error:
            where = f"{address[0]}:{address[1]}"
            raise CollectiveAborted(f"cannot reach the parameter server at {where}: {error}") from error

    def allreduce(self, vector: np.ndarray) -> np.ndarray:
        """Sum ``vector`` over all instances; every instance must call this the same number of times."""
        started = time.monotonic()
        try:
            _send_frame(self._sock, np.ascontiguousarray(vector, dtype=np.float64).tobytes())
            return np.frombuffer(_receive_frame(self._sock), dtype=np.float64).copy()
        except TimeoutError as error:
            raise CollectiveAborted("no answer from the parameter server in time") from error
        except (EOFError, OSError) as error:
            raise CollectiveAborted(
                "training aborted: another instance failed or the parameter server stopped"
            ) from error
        finally:
            self.wait_seconds += time.monotonic() - started

    def close(self) -> None:
        """Close the connection."""
        self._sock.close()


class ParameterServer:
    """Aggregates pushes from ``size`` instances; runs in a background thread of the launcher."""

    def __init__(
        self,
        size: int,
        authkey: bytes,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        names: list[str] | None = None,
        connect_timeout: float | None = None,
        relay: bool = True,
    ) -> None:
        """``relay=False``: only check that every instance connects, then hold the connections until ``stop``
        (the instances exchange through shared memory, ``shared.py``)."""
        self.size = size
        self._relay = relay
        self._names = names or [f"rank {rank}" for rank in range(size)]
        self._authkey = authkey
        self._timeout = timeout
        self._connect_timeout = connect_timeout  # None: wait for every instance until stop()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)  # accept() wakes up regularly to notice stop()
        self._connections: list[socket.socket | None] = [None] * size
        self._thread = threading.Thread(target=self._serve, name="linear-learner-parameter-server", daemon=True)
        self._stopped = threading.Event()
        self.error: str | None = None
        self.stalled = False  # an instance did not connect or went silent (stopped or hung): ``error`` names it

    @property
    def address(self) -> tuple[str, int]:
        """Host and port the instances connect to."""
        host, port = self._listener.getsockname()[:2]
        return host, port

    @property
    def connected(self) -> bool:
        """Whether every instance has connected (it stays so once the connections are closed)."""
        return all(conn is not None for conn in self._connections)

    def start(self) -> None:
        """Start serving in the background."""
        self._thread.start()

    def stop(self) -> None:
        """Close every connection so blocked instances fail fast, and stop the thread."""
        self._stopped.set()
        self._close_all()
        self._thread.join(timeout=5)
        self._listener.close()

    def _close_all(self) -> None:
        for conn in self._connections:
            if conn is not None:
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                conn.close()

    def _accept_all(self) -> None:
        deadline = None if self._connect_timeout is None else time.monotonic() + self._connect_timeout
        while any(conn is None for conn in self._connections):
            if self._stopped.is_set():
                raise EOFError("stopped before every instance connected")
            if deadline is not None and time.monotonic() > deadline:
                missing = [self._names[rank] for rank, conn in enumerate(self._connections) if conn is None]
                self.stalled = True
                raise TimeoutError(
                    f"{', '.join(missing)} did not connect to the parameter server within "
                    f"{self._connect_timeout:g} s: the instance is stopped, hung or still reading its "
                    "data"
                )
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            _configure(conn, self._timeout)
            hello = _receive_frame(conn)
            key, rank_bytes = hello[: -_HELLO.size], hello[-_HELLO.size :]
            (rank,) = _HELLO.unpack(rank_bytes)
            if (
                not hmac.compare_digest(key, self._authkey)
                or not 0 <= rank < self.size
                or self._connections[rank] is not None
            ):
                conn.close()  # not one of ours
                continue
            self._connections[rank] = conn

    def _serve(self) -> None:
        try:
            self._accept_all()
            if not self._relay:
                self._stopped.wait()
                return
            connections = [c for c in self._connections if c is not None]
            while not self._stopped.is_set():
                total: np.ndarray | None = None
                for rank, conn in enumerate(connections):
                    try:
                        frame = _receive_frame(conn)
                    except TimeoutError:
                        self.stalled = True
                        raise TimeoutError(
                            f"{self._names[rank]} sent no update for {self._timeout:g} s: "
                            "the instance is stopped or hung"
                        ) from None
                    part = np.frombuffer(frame, dtype=np.float64)
                    total = part.copy() if total is None else total + part
                assert total is not None
                payload = total.tobytes()
                for conn in connections:
                    _send_frame(conn, payload)
        except (EOFError, OSError, ValueError) as error:  # TimeoutError is an OSError
            if not self._stopped.is_set():
                self.error = str(error) or type(error).__name__
        finally:
            self._close_all()
