"""The fork server ("zygote") of local job processes: started by path with a job's interpreter, it imports the heavy
libraries a kind of job imports anyway, once, then forks one child per job instance on request; each child starts the
job as a fresh ``python script.py`` / ``python -m module`` would, so only the start-up and imports are saved.

Self-contained on purpose: it runs under the processing image's Python 3.9 with the standard library and the image's
libraries only (``pipeline`` is not installed there), so no ``pipeline`` import and Python 3.9 syntax only. The client
is ``pipeline/core/forkserver.py``, which documents the protocol; in short, over the Unix socket
(``SOCK_SEQPACKET``: one message a packet) whose descriptor is its third argument:

- the server writes ``{"ready": true}`` (or ``{"ready": false, "error": ...}``) once its preload list is imported;
- a request is one JSON message with four file descriptors attached (``socket.send_fds``): the job's stdin, stdout,
  stderr and a *status pipe*; the server forks, answers ``{"pid": n}``, keeps the status pipe and, when it reaps the
  child, writes its raw wait status there (4 bytes, little-endian) and closes it. If the server dies, the status pipe
  reads end-of-file: the client then knows its job died with it (every child asks for SIGKILL when the server dies).

The child: a new session (``setsid``), SIGKILL on the server's death (``PR_SET_PDEATHSIG``), the default signal
dispositions of a fresh interpreter, stdio on the given descriptors and every other descriptor closed, ``os.environ``
replaced by the job's, its cwd, ``sys.argv`` and ``sys.path`` as a fresh interpreter computes them, the numpy global
random state drawn afresh (Python's ``random`` does so itself after a fork), the code run as ``__main__``, and the
interpreter's own shutdown: non-daemon threads joined, ``atexit`` handlers, stdio flushed, then ``os._exit``.
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import importlib
import importlib.machinery
import io
import json
import os
import runpy
import select
import signal
import socket
import struct
import sys
import threading
import traceback
import types

PR_SET_PDEATHSIG = 1
MAX_MESSAGE = 1 << 20
# sys.path as this interpreter computed it for a script, less the script's own folder: what every fresh interpreter
# with the same variables (PYTHONPATH among them, part of the server's key) puts after its first entry
BASE_PATH = list(sys.path[1:])
SELF = os.path.abspath(__file__)


def _prctl():
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None


PRCTL = _prctl()


def die_with_parent(parent: int) -> None:
    """SIGKILL from the kernel when ``parent`` (the thread that started this process) ends."""
    if PRCTL is not None:
        PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the request was in place
        os._exit(1)


def preload(modules) -> None:
    for name in modules:
        importlib.import_module(name)


def send(control: socket.socket, message: dict) -> None:
    control.send(json.dumps(message).encode())


def serve(control: socket.socket) -> None:
    """Fork a child per request until the client closes its end; reap children and report their statuses."""
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda number, frame: None)
    children = {}  # pid -> status pipe
    while True:
        ready, _, _ = select.select([control, wake_read], [], [])
        if wake_read in ready:
            os.read(wake_read, 4096)
        reap(children)
        if control not in ready:
            continue
        message, fds, _, _ = socket.recv_fds(control, MAX_MESSAGE, 4)
        if not message:  # the client is gone: so are we (the children die with us)
            return
        request = json.loads(message.decode())
        stdio, status = fds[:3], fds[3]
        server = os.getpid()
        pid = os.fork()
        if pid == 0:
            signal.set_wakeup_fd(-1)
            os.close(wake_read)
            os.close(wake_write)
            child(request, stdio, server, control)
        for fd in stdio:
            os.close(fd)
        children[pid] = status
        send(control, {"pid": pid})
        reap(children)  # a child that ended before the SIGCHLD handler's wake-up was read


def reap(children: dict) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fd = children.pop(pid, None)
        if fd is not None:
            try:
                os.write(fd, struct.pack("<i", status))
            except OSError:  # the client closed its end: nobody waits for it
                pass
            os.close(fd)


def child(request: dict, stdio, server: int, control: socket.socket) -> None:
    """The job instance: set up as a fresh interpreter, run, shut down as the interpreter does; never returns."""
    code = 1
    try:
        os.setsid()
        die_with_parent(server)
        for number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(number, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as the interpreter sets them at start
        if hasattr(signal, "SIGXFSZ"):
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        for target, fd in enumerate(stdio):
            os.dup2(fd, target)  # inheritable, as a fresh process's stdio
        control.detach()
        close_other_fds()
        os.chdir(request["cwd"])
        env = dict(request["env"])
        # a C locale coerced at start (PEP 538) sets LC_CTYPE, as a fresh interpreter with the same locale
        # variables (part of the server's key) would set it for the job
        if "LC_CTYPE" in os.environ and "LC_CTYPE" not in env:
            env["LC_CTYPE"] = os.environ["LC_CTYPE"]
        os.environ.clear()  # putenv/unsetenv too: C libraries see the job's variables
        os.environ.update(env)
        open_stdio()
        set_title([request["interpreter"], *request["argv"]])
        code = run(request)
    except BaseException:  # the set-up failed: say so as an interpreter would and exit 1
        try:
            traceback.print_exc()
        except BaseException:
            pass
    finally:
        os._exit(finish(code))


def close_other_fds() -> None:
    """Close every descriptor but stdio, as ``close_fds`` does for a fresh process (the status pipes of the other
    children, the control socket, whatever the preloaded libraries opened)."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2:
            try:
                os.close(fd)
            except OSError:  # the listing's own descriptor, closed by now
                pass


def open_stdio() -> None:
    """New ``sys.stdin/stdout/stderr`` on fds 0-2, as the interpreter makes them at start (buffering by whether
    each is a terminal and ``-u``; the encodings this interpreter chose from the same locale variables)."""
    unbuffered = bool(getattr(sys.__stdout__, "write_through", False))  # -u or PYTHONUNBUFFERED (the job's too)
    old = (sys.__stdin__, sys.__stdout__, sys.__stderr__)
    made = []
    for fd, stream in enumerate(old):
        encoding = getattr(stream, "encoding", None) or "utf-8"
        errors = getattr(stream, "errors", None) or ("backslashreplace" if fd == 2 else "strict")
        try:
            tty = os.isatty(fd)
            if fd == 0:
                raw = io.FileIO(fd, "rb", closefd=False)
                buffered = io.BufferedReader(raw)
            else:
                raw = io.FileIO(fd, "wb", closefd=False)
                buffered = raw if unbuffered else io.BufferedWriter(raw)
            made.append(
                io.TextIOWrapper(
                    buffered,
                    encoding=encoding,
                    errors=errors,
                    line_buffering=not unbuffered and (tty or fd == 2),
                    write_through=unbuffered,
                )
            )
        except OSError:  # a closed descriptor: None, as the interpreter leaves it
            made.append(None)
    sys.stdin, sys.stdout, sys.stderr = made
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = made


def set_title(command) -> None:
    """Show the job's command line in ``ps`` and ``/proc/<pid>/cmdline`` instead of the server's, as setproctitle
    does: written over the server's own argument area (the client pads it), space-separated and ended by a NUL, with
    the area's last byte left non-NUL so that the kernel reads it up to that NUL. Longer commands are cut."""
    try:
        with open("/proc/self/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end (fields 48 and 49 of stat)
    except (OSError, IndexError, ValueError):
        return
    size = end - start
    if size < 2:
        return
    title = " ".join(command).encode("utf-8", "replace")[: size - 2]
    ctypes.memmove(start, title + b"\0" + b" " * (size - len(title) - 1), size)


def fresh_main() -> types.ModuleType:
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = main
    return main


def run(request: dict) -> int:
    """Run the job's code as ``__main__``; its exit code as the interpreter would end with it."""
    if "numpy.random" in sys.modules:  # a fresh interpreter draws the legacy global state from the OS
        sys.modules["numpy.random"].seed()
    argv = list(request["argv"])  # what follows the interpreter: script and arguments, or -m, module and arguments
    if hasattr(sys, "orig_argv"):  # 3.10+: the command line as the interpreter got it
        sys.orig_argv = [sys.orig_argv[0], *argv]
    module = argv[1] if argv[0] == "-m" else None
    try:
        if module:
            sys.path[:] = [os.getcwd(), *BASE_PATH]
            sys.argv = ["-m", *argv[2:]]  # runpy puts the module's file in argv[0]
            fresh_main()
            runpy._run_module_as_main(module, alter_argv=True)
        else:
            script = os.path.abspath(argv[0])
            sys.path[:] = [os.path.dirname(os.path.realpath(script)), *BASE_PATH]
            sys.argv = argv
            main = fresh_main()
            main.__file__ = argv[0]
            main.__cached__ = None
            main.__loader__ = importlib.machinery.SourceFileLoader("__main__", argv[0])
            with io.open_code(script) as handle:
                source = handle.read()
            code = compile(source, argv[0], "exec", dont_inherit=True)
            exec(code, main.__dict__)
    except SystemExit as exit:
        return exit_code(exit)
    except KeyboardInterrupt:
        print_exception()
        return -signal.SIGINT
    except BaseException:
        print_exception()
        return 1
    return 0


def exit_code(exit: SystemExit) -> int:
    """SystemExit's code as the interpreter ends with it: None 0, an int itself, anything else printed and 1."""
    if exit.code is None:
        return 0
    if isinstance(exit.code, int):
        return exit.code
    try:
        print(exit.code, file=sys.stderr)
    except BaseException:
        pass
    return 1


def print_exception() -> None:
    """The uncaught exception through ``sys.excepthook``, this file's frames left out (the job's traceback)."""
    kind, value, trace = sys.exc_info()
    while trace is not None and os.path.abspath(trace.tb_frame.f_code.co_filename) == SELF:
        trace = trace.tb_next
    if value is not None:
        value.__traceback__ = trace
    try:
        sys.excepthook(kind, value, trace)
    except BaseException:
        traceback.print_exception(kind, value, trace)


def finish(code: int) -> int:
    """The interpreter's shutdown: join non-daemon threads, run atexit, flush stdio; the exit status to end with
    (a KeyboardInterrupt ends by SIGINT, as Python does)."""
    try:
        threading._shutdown()
    except BaseException:
        pass
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:
            code = code or 120
    if code == -signal.SIGINT:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        code = 130
    return code & 0xFF if code >= 0 else 1


def main() -> None:
    parent = int(sys.argv[1])
    modules = [name for name in sys.argv[2].split(",") if name]
    die_with_parent(parent)
    control = socket.socket(fileno=int(sys.argv[3]))
    try:
        preload(modules)
    except BaseException as error:  # the client falls back to fresh processes and records why
        send(control, {"ready": False, "error": f"{type(error).__name__}: {error}"})
        return
    threads = threading.active_count()
    send(control, {"ready": True, "threads": threads, "modules": modules})
    serve(control)


if __name__ == "__main__":
    main()
