"""The local stages' endpoints: one ``llpipe serve`` process per stage, on its own port, serving a version of the
local registry; :class:`LocalEndpoints` is the local :class:`~pipeline.core.deployment.DeployTarget`.

Each stage's state is one JSON file, ``<workdir>/endpoints/<stage>.json`` (written atomically): the endpoint's name
and port, the server's pid and process start time (so a reused pid is never taken for the server), the version it
serves, since when, and the smoke test it passed there. The servers outlive the ``llpipe deploy`` that started
them, as an endpoint outlives the deploy job on SageMaker; ``llpipe undeploy --stage`` stops one by its pid.

A roll-out stops the stage's server and starts one for the new version on the same port, so clients keep their
address; when the new server does not come up, the previous version is started again (the local form of SageMaker's
automatic rollback) and the roll-out reports ``RolledBack`` with the new server's last log lines.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pipeline.core.deployment import (
    FAILED,
    IN_SERVICE,
    LATEST_APPROVED,
    ROLLED_BACK,
    STAGING,
    DeployError,
    InvokeError,
    Live,
    Progress,
    Rollout,
    Version,
    stage_endpoint_name,
)
from pipeline.core.errors import UsageError
from pipeline.core.files import write_text_atomically
from pipeline.core.names import RECORDIO, TRANSFORM, StepStatus
from pipeline.core.signals import stop_signals_deferred
from pipeline.core.smoke import SmokeCase, SmokeError, SmokeResult, case_from_shards
from pipeline.local.executions import ExecutionStore, process_start
from pipeline.local.registry import LocalRegistry, ModelPackage, RegistryError
from pipeline.local.s3 import LocalS3
from pipeline.local.workdir import Workdir

DEFAULT_PORTS = {STAGING: 8081, "prod": 8080}
READY_TIMEOUT_SECONDS = 120.0  # a bound on a server that never comes up, not a wait: readiness is its ready file
STOP_TIMEOUT_SECONDS = 30.0
HOST = "127.0.0.1"
# the detached servers this process started: held (and reaped once they end) rather than left to the garbage
# collector, which would warn that they still run; they are meant to outlive the call that started them
_DETACHED: list[subprocess.Popen] = []


@dataclass(frozen=True)
class StageState:
    """What ``<workdir>/endpoints/<stage>.json`` holds."""

    stage: str
    endpoint: str
    port: int
    pid: int
    process_start: str | None
    package_arn: str
    version: int
    execution_arn: str | None
    since: str  # ISO 8601, UTC
    log: str
    smoke_test: str | None = None

    @property
    def handle(self) -> str:
        return f"pid {self.pid} on port {self.port}"


@dataclass(frozen=True)
class Server:
    """A started server: its process, port and log."""

    pid: int
    process_start: str | None
    port: int
    log: Path


# (endpoint name, package ARN, port, ready file, log file) -> the started server, once it answers; raises
# ServerStartError with the log's last lines when it does not come up
Launcher = Callable[[str, str, int, Path, Path], Server]


class ServerStartError(Exception):
    """A stage's server exited or never became ready; the message holds its last log lines."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _alive(pid: int, started: str | None) -> bool:
    """Whether the server still runs: the pid exists, is not a zombie (a killed server nobody reaped yet) and
    started when the state says (else the pid was reused by another process)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[0] not in ("Z", "X") and (started is None or fields[19] == started)


def _log_tail(log: Path, lines: int = 8) -> str:
    try:
        text = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:]) or "(empty log)"


def serve_command(
    endpoint: str, package_arn: str, port: int, ready_file: Path, workdir: Path, config: Path, capture: int
) -> list[str]:
    """The ``llpipe serve`` command line of a stage's server."""
    return [
        sys.executable,
        "-m",
        "pipeline",
        "serve",
        "--model-package",
        package_arn,
        "--port",
        str(port),
        "--endpoint-name",
        endpoint,
        "--ready-file",
        str(ready_file),
        "--workdir",
        str(workdir),
        "--config",
        str(config),
        "--capture-percentage",
        str(capture),
    ]


def launch_server(command: Sequence[str], ready_file: Path, log: Path, timeout: float) -> Server:
    """Start ``command`` detached (its own session: it outlives this process) and wait until it writes
    ``ready_file`` (``{"port": N}``) or exits; a server that is not ready within ``timeout`` is stopped."""
    import time

    ready_file.unlink(missing_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as output:
        process = subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + timeout
    try:
        while True:
            if ready_file.is_file():
                try:
                    port = int(json.loads(ready_file.read_text())["port"])
                except (ValueError, KeyError, TypeError):
                    port = None
                if port:
                    _forget_ended()
                    _DETACHED.append(process)
                    return Server(process.pid, process_start(process.pid), port, log)
            if process.poll() is not None:
                raise ServerStartError(f"the server exited with status {process.returncode}: {_log_tail(log)}")
            if time.monotonic() > deadline:
                raise ServerStartError(f"the server was not ready after {timeout:.0f} s: {_log_tail(log)}")
            try:
                process.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                pass
    except BaseException:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        raise


def _forget_ended() -> None:
    """Reap and drop the detached servers that have ended; also at exit, so that a server another process stopped
    (a second ``llpipe deploy``) is not collected as a Popen that never saw its end ("subprocess N is still
    running")."""
    _DETACHED[:] = [kept for kept in _DETACHED if kept.poll() is None]


atexit.register(_forget_ended)


def stop_server(pid: int, started: str | None, timeout: float = STOP_TIMEOUT_SECONDS) -> bool:
    """SIGTERM the server's process group (it stops cleanly), SIGKILL after ``timeout``; False when it was not
    running (or the pid now belongs to another process, which is left alone)."""
    import time

    if not _alive(pid, started):
        return False
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout
    while _alive(pid, started):
        _reap(pid)
        if time.monotonic() > deadline:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _reap(pid)
            break
        time.sleep(0.02)
    _reap(pid)  # a child of ours that ended is a zombie, which _alive counts as gone: collect it
    return True


def _reap(pid: int) -> None:
    """Collect the exit status when the server is our own child (started in this process), so it does not linger:
    through its Popen when it is one of ``_DETACHED``, which then drops it (a Popen whose status was collected behind
    its back still counts as running and warns "subprocess N is still running" when collected at exit)."""
    for process in _DETACHED:
        if process.pid == pid:
            if process.poll() is not None:
                _DETACHED.remove(process)
            return
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


class LocalEndpoints:
    """The stages as ``llpipe serve`` processes of the work dir (the module's docstring)."""

    def __init__(
        self,
        workdir: Workdir,
        config: Any,  # PipelineConfig
        ports: dict[str, int] | None = None,
        launcher: Launcher | None = None,
        ready_timeout: float = READY_TIMEOUT_SECONDS,
    ) -> None:
        self.workdir = workdir
        self.config = config
        self.ports = {**DEFAULT_PORTS, **(ports or {})}
        self.ready_timeout = ready_timeout
        self.launcher = launcher or self._launch
        self.folder = workdir.root / "endpoints"

    # ------------------------------------------------------------------------------------------------- state
    def endpoint_name(self, stage: str) -> str:
        return stage_endpoint_name(self.config.pipeline_name, stage)

    def _state_path(self, stage: str) -> Path:
        return self.folder / f"{stage}.json"

    def state(self, stage: str) -> StageState | None:
        path = self._state_path(stage)
        if not path.is_file():
            return None
        try:
            return StageState(**json.loads(path.read_text()))
        except (ValueError, TypeError) as error:
            raise UsageError(f"{path}: not an endpoint state written by llpipe deploy ({error}); remove it") from None

    def _save(self, state: StageState) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        write_text_atomically(self._state_path(state.stage), json.dumps(asdict(state), indent=2) + "\n")

    def _forget(self, stage: str) -> None:
        self._state_path(stage).unlink(missing_ok=True)

    def url(self, stage: str) -> str | None:
        state = self.state(stage)
        return f"http://{HOST}:{state.port}" if state else None

    # ----------------------------------------------------------------------------------------- DeployTarget
    def resolve(self, requested: str) -> Version:
        registry = LocalRegistry(self.workdir.registry_db)
        group = self.config.model_package_group
        try:
            if requested == LATEST_APPROVED:
                package = registry.last_approved(group)
                if package is None:
                    raise DeployError(
                        f"model package group {group} has no approved version: approve one (llpipe models approve N)"
                    )
            else:
                key = requested if requested.startswith("arn:") or "/" in requested else f"{group}/{requested}"
                package = registry.describe(key)
        except RegistryError as error:
            raise DeployError(str(error)) from None
        return _version(package)

    def live(self, stage: str) -> Live | None:
        state = self.state(stage)
        if state is None:
            return None
        running = _alive(state.pid, state.process_start)
        stopped = f"the server (pid {state.pid}) is not running; its log: {state.log}"
        return Live(
            stage=stage,
            endpoint=state.endpoint,
            status=IN_SERVICE if running else FAILED,
            handle=state.handle,
            package_arn=state.package_arn,
            version=state.version,
            execution_arn=state.execution_arn,
            since=datetime.fromisoformat(state.since),
            smoke_test=state.smoke_test,
            failure_reason=None if running else stopped,
            url=f"http://{HOST}:{state.port}",
        )

    def smoke_case(self, version: Version, rows: int) -> SmokeCase:
        if not version.execution_arn:
            raise DeployError(f"model package {version.package_arn} names no execution: nothing to smoke-test against")
        execution_id = version.execution_arn.rsplit("/", 1)[-1]
        try:
            record = ExecutionStore(self.workdir.executions).load(execution_id)
        except KeyError:
            raise DeployError(
                f"execution {execution_id} that trained version {version.version} is not in {self.workdir.root}: "
                "its test split and batch-transform answers are needed for the smoke test"
            ) from None
        transform = record.steps.get(TRANSFORM)
        if transform is None or transform.status != StepStatus.SUCCEEDED:
            raise DeployError(f"execution {execution_id} has no succeeded {TRANSFORM} step to compare answers with")
        s3 = LocalS3(self.workdir.s3)
        test_dir = s3.path(transform.properties["TransformInput"]["DataSource"]["S3DataSource"]["S3Uri"])
        output_dir = s3.path(transform.properties["TransformOutput"]["S3OutputPath"])
        if transform.properties["TransformInput"].get("ContentType", RECORDIO) != RECORDIO:
            raise DeployError(f"execution {execution_id}'s {TRANSFORM} did not read {RECORDIO} records")

        def pairs():  # noqa: ANN202 - a generator of (shard, bytes, .out, bytes), read lazily
            for shard in sorted(path for path in test_dir.rglob("*") if path.is_file()):
                out = output_dir / f"{shard.relative_to(test_dir)}.out"
                yield str(shard), shard.read_bytes(), str(out), out.read_bytes() if out.is_file() else b""

        try:
            return case_from_shards(pairs(), rows)
        except SmokeError as error:
            raise DeployError(f"smoke test rows of execution {execution_id}: {error}") from None

    def invoke(self, stage: str, case: SmokeCase) -> bytes:
        url = self.url(stage)
        if url is None:
            raise InvokeError(f"stage {stage} has no endpoint")
        request = urllib.request.Request(
            f"{url}/invocations",
            data=case.body,
            method="POST",
            headers={"Content-Type": case.content_type, "Accept": case.accept},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - our own server, http only
                return response.read()
        except urllib.error.HTTPError as error:
            raise InvokeError(f"HTTP {error.code}: {error.read().decode(errors='replace')[:300]}") from None
        except (urllib.error.URLError, OSError) as error:
            raise InvokeError(f"{url} did not answer: {getattr(error, 'reason', error)}") from None

    def roll_out(self, stage: str, version: Version, current: Live | None, progress: Progress) -> Rollout:
        previous = self.state(stage)
        port = previous.port if previous else self.ports[stage]
        endpoint = self.endpoint_name(stage)
        action = "updated" if previous else "created"
        try:
            if previous:
                progress(f"stopping {endpoint}'s server for version {previous.version} ({previous.handle})")
                stop_server(previous.pid, previous.process_start)
            progress(f"starting {endpoint} for version {version.version} on port {port}")
            server = self._start(stage, endpoint, version, port)
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP (Interrupted) between the two: never leave it down
            self._serve_after_interrupt(stage, endpoint, previous, port, progress)
            raise
        except ServerStartError as error:
            if previous is None:
                self._forget(stage)
                return Rollout(action, FAILED, "", reason=str(error))
            progress(f"the new server did not start: starting version {previous.version} again")
            try:
                self._start(stage, endpoint, self.resolve(previous.package_arn), port, previous.smoke_test)
            except (ServerStartError, DeployError) as again:
                self._forget(stage)
                return Rollout(action, FAILED, "", reason=f"{error}; and the previous version did not start: {again}")
            return Rollout(action, ROLLED_BACK, self.state(stage).handle, reason=str(error))  # type: ignore[union-attr]
        state = self.state(stage)
        assert state is not None and state.pid == server.pid
        progress(f"{endpoint} serves version {version.version} at http://{HOST}:{server.port}")
        return Rollout(action, IN_SERVICE, state.handle)

    def _serve_after_interrupt(
        self, stage: str, endpoint: str, previous: StageState | None, port: int, progress: Progress
    ) -> None:
        """A roll-out interrupted after it began: when the new server is up, it serves (rolled forward); else the
        previous version is started again (rolled back), on the same port; a stage that had none is forgotten.
        A later stop signal is ignored meanwhile (``pipeline.core.signals``), so this runs to its end."""
        current = self.state(stage)
        new_is_up = previous is None or current is None or current.pid != previous.pid
        if current is not None and new_is_up and _alive(current.pid, current.process_start):
            progress(f"interrupted: {endpoint} serves version {current.version}")
            return
        if previous is None:
            self._forget(stage)
            return
        stop_server(previous.pid, previous.process_start)  # a stop under way is finished before starting again
        progress(f"interrupted: starting version {previous.version} again on {endpoint}")
        try:
            self._start(stage, endpoint, self.resolve(previous.package_arn), port, previous.smoke_test)
        except (ServerStartError, DeployError) as error:
            self._forget(stage)
            progress(f"interrupted: version {previous.version} could not be started again on {endpoint}: {error}")

    def restore(self, stage: str, previous: Live | None, progress: Progress) -> str:
        endpoint = self.endpoint_name(stage)
        current = self.state(stage)
        if current is not None:
            stop_server(current.pid, current.process_start)
        if previous is None or previous.package_arn is None:
            self._forget(stage)
            return f"{endpoint} removed: nothing served it before"
        port = current.port if current else self.ports[stage]
        try:
            self._start(stage, endpoint, self.resolve(previous.package_arn), port, previous.smoke_test)
        except ServerStartError as error:
            self._forget(stage)
            return f"version {previous.version} could not be started again on {endpoint}: {error}"
        return f"{endpoint} serves version {previous.version} again"

    def record_pass(self, stage: str, handle: str, result: SmokeResult) -> None:
        state = self.state(stage)
        if state is None or state.handle != handle:
            raise DeployError(f"stage {stage} no longer runs {handle}: the pass is not recorded")
        self._save(replace(state, smoke_test=f"passed: {result.summary()}"))

    def read_object(self, uri: str) -> bytes:
        path = LocalS3(self.workdir.s3).path(uri)
        if not path.is_file():
            raise DeployError(f"{uri} does not exist in the local S3 folder {self.workdir.s3}")
        return path.read_bytes()

    # -------------------------------------------------------------------------------------------- lifecycle
    @contextmanager
    def changing(self, stage: str) -> Iterator[None]:
        """Hold the stage for one change (a deployment, an undeploy): a second ``llpipe deploy`` of the same stage
        meanwhile is refused at once, as SageMaker refuses to update an endpoint that is updating."""
        import fcntl

        self.folder.mkdir(parents=True, exist_ok=True)
        with (self.folder / f"{stage}.lock").open("a+") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock.seek(0)
                holder = lock.read().strip() or "another process"
                raise DeployError(
                    f"stage {stage} is being changed by {holder}: deploy again when it has ended (llpipe endpoints)"
                ) from None
            lock.seek(0)
            lock.truncate()
            lock.write(f"llpipe pid {os.getpid()}")
            lock.flush()
            try:
                yield
            finally:
                lock.truncate(0)

    def undeploy(self, stage: str, progress: Progress = lambda message: None) -> StageState | None:
        """Stop the stage's server and forget it; the state it had, None when the stage had no endpoint."""
        state = self.state(stage)
        if state is None:
            return None
        progress(f"stopping {state.endpoint} ({state.handle})")
        stop_server(state.pid, state.process_start)
        self._forget(stage)
        return state

    def _start(self, stage: str, endpoint: str, version: Version, port: int, smoke_test: str | None = None) -> Server:
        folder = self.folder / stage
        # a stop landing while the server starts acts once it is recorded: between its ready file and its state an
        # interrupt left it running unknown, holding the stage's port, so that the roll-back could not bind it
        with stop_signals_deferred():
            server = self.launcher(endpoint, version.package_arn, port, folder / "ready.json", folder / "server.log")
            self._save(
                StageState(
                    stage=stage,
                    endpoint=endpoint,
                    port=server.port,
                    pid=server.pid,
                    process_start=server.process_start,
                    package_arn=version.package_arn,
                    version=version.version,
                    execution_arn=version.execution_arn,
                    since=_now(),
                    log=str(server.log),
                    smoke_test=smoke_test,
                )
            )
        return server

    def _launch(self, endpoint: str, package_arn: str, port: int, ready_file: Path, log: Path) -> Server:
        config_file = ready_file.parent / "config.json"
        ready_file.parent.mkdir(parents=True, exist_ok=True)
        names = ("region", "bucket", "pipeline_name", "model_package_group")
        settings = {key: getattr(self.config, key) for key in names}
        write_text_atomically(config_file, json.dumps(settings, indent=2) + "\n")
        capture = self.config.data_capture_percentage
        command = serve_command(endpoint, package_arn, port, ready_file, self.workdir.root, config_file, capture)
        return launch_server(command, ready_file, log, self.ready_timeout)


def deployed_package(workdir: Workdir, endpoint: str) -> str | None:
    """The package ARN a stage's endpoint named ``endpoint`` serves, None when no stage of the work dir has it."""
    for path in sorted((workdir.root / "endpoints").glob("*.json")):
        try:
            state = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(state, dict) and state.get("endpoint") == endpoint:
            return state.get("package_arn")
    return None


def _version(package: ModelPackage) -> Version:
    return Version(
        package_arn=package.arn,
        version=package.version,
        group=package.group,
        approval_status=package.approval_status,
        execution_arn=package.source_execution,
        containers=tuple(dict(container) for container in package.containers),
    )
