"""Cheaper starts for local job processes: fork servers ("zygotes") that import a job kind's heavy libraries once and
fork one child per job instance, the pattern of multiprocessing's forkserver and Android's zygote.

A job instance stays its own process, exactly as :func:`pipeline.core.processes.start` makes it: its own session and
process group (``kill_group`` and the memory limits' ``groups_rss`` work unchanged), its argv, environment, working
directory and stdio, SIGKILL when its server dies, and the server dies with ``llpipe`` (SIGKILL from the kernel when the
pool's thread ends). Only the interpreter's start-up and the preloaded imports are saved; the child's set-up is
``forkserver_main.py``'s (run by path with the job's interpreter, standard library only, Python 3.9).

Protocol (a ``SOCK_SEQPACKET`` socketpair, JSON packets): the server's first packet says whether its preload list
imported; a request is the job's argv (after the interpreter), environment and cwd with four descriptors attached by
``socket.send_fds``: the job's stdin, stdout, stderr (the client's own files: a log file, a pipe's write end) and the
write end of a status pipe. The server answers the child's pid and, when it reaps the child, writes the raw wait status
into the status pipe; end-of-file there without a status means the server died, and with it the child.

One server per (interpreter, preload list, start-up variables): the variables a preloaded library or the interpreter
reads at start (``START_PREFIXES``) must be the job's, so a job with other values gets a server of its own. The
preload list names only modules the job imports anyway (``tests/contract/test_preload_lists.py``), so a job's
memory, measured against its instance type, does not grow.

Lifetime: a :class:`ForkServers` pool, a context manager; a local run makes its own (ended with the run on every exit
path) unless the caller passes one to share across runs. ``LLPIPE_FORKSERVER=0`` turns it off; a server that cannot
start (its interpreter, a failed import) leaves its jobs to fresh processes, and :meth:`ForkServers.start` says why.
"""

from __future__ import annotations

import json
import os
import queue
import select
import signal
import socket
import struct
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pipeline.core.processes import start as start_fresh

SETTING = "LLPIPE_FORKSERVER"  # 0, off, false or no: every job process starts fresh
SERVER_SCRIPT = Path(__file__).with_name("forkserver_main.py")
# variables read at start by the interpreter (PYTHON*, the locale's) or at import by the preloaded libraries (BLAS
# and OpenMP thread counts, numpy's CPU features, the allocator, Arrow): a job must have the server's values
START_PREFIXES = ("PYTHON", "OMP_", "OPENBLAS_", "GOTO_", "MKL_", "BLIS_", "NPY_", "NUMPY_", "LD_", "MALLOC", "ARROW_")
START_NAMES = ("HOME", "PATH", "TMPDIR", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE")
READY_SECONDS = 120.0  # how long the first job waits for a server's preloading before starting fresh
MAX_PACKET = 1 << 20
TITLE_ROOM = " " * 4096
# the pool a caller shares across the runs it starts (``sharing``); a run without one makes its own
_SHARED: ContextVar[ForkServers | None] = ContextVar("llpipe_fork_servers", default=None)


def enabled(environ: Mapping[str, str] = os.environ) -> bool:
    """False when ``LLPIPE_FORKSERVER`` turns the fork servers off."""
    return environ.get(SETTING, "").strip().lower() not in ("0", "off", "false", "no")


def start_variables(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The variables of ``environ`` a server is started with, and keyed by."""
    return tuple(
        sorted(
            (name, value)
            for name, value in environ.items()
            if name in START_NAMES or name.startswith(START_PREFIXES) or name.startswith("LC_")
        )
    )


class ForkedProcess:
    """A job process forked by a server, with ``subprocess.Popen``'s ``pid``, ``returncode`` (negative: ended by
    that signal), ``poll``, ``wait``, ``send_signal``, ``kill``, ``terminate`` and ``stdout`` (a pipe when asked)."""

    def __init__(self, args: Sequence[str], pid: int, status: int, stdout: IO[Any] | None) -> None:
        self.args = list(args)
        self.pid = pid
        self.stdout = stdout
        self.stdin = self.stderr = None
        self.returncode: int | None = None
        self._status = status  # the status pipe's read end
        self._lock = threading.Lock()

    def poll(self) -> int | None:
        return self._read_status(0.0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._read_status(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return code

    def send_signal(self, number: int) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, number)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def _read_status(self, timeout: float | None) -> int | None:
        with self._lock:
            if self.returncode is not None:
                return self.returncode
            ready, _, _ = select.select([self._status], [], [], timeout)
            if not ready:
                return None
            data = b""
            while len(data) < 4:
                chunk = os.read(self._status, 4 - len(data))
                if not chunk:
                    break
                data += chunk
            os.close(self._status)
            if len(data) == 4:
                self.returncode = os.waitstatus_to_exitcode(struct.unpack("<i", data)[0])
            else:  # the server died: the kernel kills its children (PDEATHSIG); make sure of the whole group
                try:
                    os.killpg(self.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                self.returncode = -signal.SIGKILL
            return self.returncode

    def __del__(self) -> None:
        if self.returncode is None:
            try:
                os.close(self._status)
            except OSError:
                pass


class ServerUnavailable(Exception):
    """Why a server cannot fork this job: its job starts fresh, and the reason is recorded."""


class ForkServer:
    """One server process: ``python forkserver_main.py`` with a preload list and start-up variables."""

    def __init__(self, python: str, preload: tuple[str, ...], variables: tuple[tuple[str, str], ...]) -> None:
        self.python = python
        self.preload = preload
        self.variables = variables
        self._socket, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.process = start_fresh(  # its own session; dies with this process (and its children with it)
                # the padding is room for each child's command line (ps, /proc/<pid>/cmdline): see set_title
                [python, str(SERVER_SCRIPT), str(os.getpid()), ",".join(preload), str(theirs.fileno()), TITLE_ROOM],
                pass_fds=(theirs.fileno(),),
                env=dict(variables),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
            )
        except OSError as error:
            self._socket.close()
            raise ServerUnavailable(f"cannot start {python}: {error}") from None
        finally:
            theirs.close()
        self._lock = threading.Lock()
        self._ready: str | None = None  # "" once ready, else why not

    def _await_ready(self) -> None:
        if self._ready is None:
            ready, _, _ = select.select([self._socket], [], [], READY_SECONDS)
            packet = self._socket.recv(MAX_PACKET) if ready else b""
            message = json.loads(packet) if packet else {}
            if message.get("ready"):
                self._ready = ""
            elif not ready:
                self._ready = f"not ready after {READY_SECONDS:g}s"
            else:
                self._ready = message.get("error") or f"exited with code {self.process.poll()} before it was ready"
        if self._ready:
            raise ServerUnavailable(f"fork server of {self.python} ({', '.join(self.preload)}): {self._ready}")

    def fork(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: str, stdio: tuple[int, int, int]
    ) -> tuple[int, int]:
        """Fork a child running ``argv`` (what follows the interpreter); its pid and its status pipe's read end."""
        request = json.dumps({"interpreter": self.python, "argv": list(argv), "env": dict(env), "cwd": cwd}).encode()
        status_read, status_write = os.pipe()
        try:
            with self._lock:
                self._await_ready()
                try:
                    socket.send_fds(self._socket, [request], [*stdio, status_write])
                    packet = self._socket.recv(MAX_PACKET)
                except OSError as error:
                    raise ServerUnavailable(f"fork server of {self.python}: {error}") from None
                if not packet:
                    code = self.process.poll()
                    self._ready = f"ended (exit code {code})"
                    raise ServerUnavailable(f"fork server of {self.python}: {self._ready}")
        except BaseException:
            os.close(status_read)
            raise
        finally:
            os.close(status_write)
        return int(json.loads(packet)["pid"]), status_read

    def close(self) -> None:
        """End the server (its children die with it) and reap it."""
        self._socket.close()
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


@dataclass(frozen=True)
class Started:
    """A started job process and how it started: ``forked`` by a server, else fresh and ``reason`` says why."""

    process: Any  # ForkedProcess or subprocess.Popen
    forked: bool
    reason: str = ""

    @property
    def how(self) -> str:
        """What a job's record says: ``fork server`` or ``fresh process: <why>``."""
        return "fork server" if self.forked else f"fresh process: {self.reason}"


class ForkServers:
    """The fork servers of one local run, or of several when a caller shares them (a context manager; ``close``
    ends every server, and the pool can be used again afterwards: servers start on demand).

    Servers are started by the pool's own thread, which lives as long as they do: the kernel's "die with the parent"
    signal is tied to the thread that started a process, and job threads come and go."""

    def __init__(self, environ: Mapping[str, str] = os.environ) -> None:
        self.active = enabled(environ)
        self._servers: dict[tuple, ForkServer | str] = {}  # a key -> its server, or why it could not start
        self._lock = threading.Lock()
        self._requests: queue.Queue[tuple[Callable[[], Any], Future] | None] = queue.Queue()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ForkServers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def warm(self, python: str | Path, preload: Sequence[str], environ: Mapping[str, str]) -> None:
        """Start the server for these jobs now, without waiting for its preloading (it overlaps the caller's work)."""
        if self.active and preload:
            try:
                self._server(str(python), tuple(preload), start_variables(environ))
            except ServerUnavailable:
                pass  # its jobs will start fresh and say why

    def start(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        preload: Sequence[str],
        cwd: str | Path | None = None,
        stdout: Any = None,
        stderr: Any = None,
        text: bool = False,
    ) -> Started:
        """Start ``command`` (an interpreter, then ``script args`` or ``-m module args``) as a job process: forked by
        the server for ``preload`` when there is one, else fresh as :func:`pipeline.core.processes.start` starts it.
        ``stdout`` and ``stderr`` as Popen takes them: a file, ``subprocess.PIPE`` (stdout), ``subprocess.STDOUT``."""
        reason = self._unsupported(command, preload)
        if not reason:
            try:
                server = self._server(str(command[0]), tuple(preload), start_variables(env))
                return Started(self._fork(server, command, env, cwd, stdout, stderr, text), True)
            except ServerUnavailable as error:
                reason = str(error)
        process = start_fresh(command, cwd=cwd, env=dict(env), stdout=stdout, stderr=stderr, text=text)
        return Started(process, False, reason)

    def _unsupported(self, command: Sequence[str], preload: Sequence[str]) -> str:
        if not self.active:
            return f"{SETTING} is off"
        if not preload:
            return "no preload list for this job"
        if len(command) < 2 or (command[1].startswith("-") and (command[1] != "-m" or len(command) < 3)):
            return f"the fork server runs scripts and -m modules only, not {list(command[:2])}"
        return ""

    def _fork(
        self,
        server: ForkServer,
        command: Sequence[str],
        env: Mapping[str, str],
        cwd: str | Path | None,
        stdout: Any,
        stderr: Any,
        text: bool,
    ) -> ForkedProcess:
        opened: list[int] = []  # descriptors made here, closed once the server has its copies
        pipe_read = None

        def descriptor(target: Any, default: int) -> int:
            nonlocal pipe_read
            if target is None:
                return default
            if target == subprocess.DEVNULL:
                opened.append(os.open(os.devnull, os.O_RDWR))
                return opened[-1]
            if target == subprocess.PIPE:
                pipe_read, write = os.pipe()
                opened.append(write)
                return write
            return target if isinstance(target, int) else target.fileno()

        try:
            stdin_fd = descriptor(None, 0 if _is_open(0) else descriptor(subprocess.DEVNULL, 0))
            out_fd = descriptor(stdout, 1)
            err_fd = out_fd if stderr == subprocess.STDOUT else descriptor(stderr, 2)
            workdir = os.path.abspath(cwd if cwd is not None else os.getcwd())
            pid, status = server.fork(command[1:], env, workdir, (stdin_fd, out_fd, err_fd))
        except BaseException:
            if pipe_read is not None:
                os.close(pipe_read)
            raise
        finally:
            for fd in opened:
                os.close(fd)
        pipe = None
        if pipe_read is not None:
            pipe = open(pipe_read, "r" if text else "rb")  # noqa: SIM115 (the caller closes it, as Popen's)
        return ForkedProcess(command, pid, status, pipe)

    def _server(self, python: str, preload: tuple[str, ...], variables: tuple[tuple[str, str], ...]) -> ForkServer:
        key = (python, preload, variables)
        with self._lock:
            server = self._servers.get(key)
            if server is None:
                try:
                    server = self._on_thread(lambda: ForkServer(python, preload, variables))
                except ServerUnavailable as error:
                    server = str(error)
                self._servers[key] = server
        if isinstance(server, str):
            raise ServerUnavailable(server)
        return server

    def _on_thread(self, work: Callable[[], Any]) -> Any:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._serve, name="llpipe-fork-servers", daemon=True)
            self._thread.start()
        done: Future = Future()
        self._requests.put((work, done))
        return done.result()

    def _serve(self) -> None:
        while True:
            item = self._requests.get()
            if item is None:
                return
            work, done = item
            try:
                done.set_result(work())
            except BaseException as error:
                done.set_exception(error)

    def close(self) -> None:
        """End every server (their children die with them) and the pool's thread."""
        with self._lock:
            servers = [server for server in self._servers.values() if isinstance(server, ForkServer)]
            self._servers.clear()
            thread, self._thread = self._thread, None
        for server in servers:
            server.close()
        if thread is not None:
            self._requests.put(None)
            thread.join()

    def server_pids(self) -> list[int]:
        """The pids of the running servers (for tests and diagnostics)."""
        with self._lock:
            return [server.process.pid for server in self._servers.values() if isinstance(server, ForkServer)]


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


@contextmanager
def sharing(pool: ForkServers) -> Iterator[ForkServers]:
    """Within this block every local run started from this context (thread) takes its job processes from ``pool``
    instead of a pool of its own: its servers, and their preloading, serve all those runs. The caller closes it."""
    token = _SHARED.set(pool)
    try:
        yield pool
    finally:
        _SHARED.reset(token)


def shared_pool() -> ForkServers | None:
    """The pool :func:`sharing` made current here, if any."""
    return _SHARED.get()
