"""A local processing job with SageMaker's container contract, one subprocess per instance.

Each instance gets a sandbox standing in for the container's file system: ``/opt/ml/...`` in the entrypoint, the
arguments, the environment variables and the inputs' and outputs' ``LocalPath`` is ``<sandbox>/algo-N/opt/ml/...``;
the inputs are the instance's share of each S3 prefix (``ShardedByS3Key`` or ``FullyReplicated``), including the
``code`` input the entrypoint runs from; ``/opt/ml/config/resourceconfig.json`` names the host and its peers. Python
entrypoints run in the image's environment (``pipeline.local.environments``: its Python and library pins, built once
and cached), from the sandbox root as the container runs them from ``/``, with the image's variables and none of this
process's ``PYTHONPATH``: only the code bundle is importable, as in the container. ``environment.json`` in the step's
folder says what ran. The outputs are uploaded to the local S3 folder only when every instance succeeded.

As on SageMaker, an instance can say why it failed in ``/opt/ml/output/message`` (its sandbox's): the files make the
job's ``ExitMessage`` (:func:`exit_message`), kept in the step's properties, and the failure reason shows it.

As on SageMaker, a job can call AWS with boto3: the job's variables point ``AWS_ENDPOINT_URL`` at a stand-in endpoint
(``pipeline.local.aws_endpoint``) serving the local registry and S3 folder, started for the job and stopped after it;
none of this process's ``AWS_*`` configuration reaches the job. A job with network isolation gets no endpoint and no
credentials: its AWS calls fail, as they do in an isolated container.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.core.errors import one_line
from pipeline.core.forkserver import ForkServers
from pipeline.core.images import image_for_uri
from pipeline.core.limits import Limits, groups_rss, held_bytes
from pipeline.core.names import EXIT_MESSAGE_BYTES, EXIT_MESSAGE_FILE, RESOURCE_CONFIG
from pipeline.core.processes import kill_group
from pipeline.core.processes import start as start_process
from pipeline.local.environments import ImageEnvironments, JobEnvironment, clean_variables
from pipeline.local.executions import write_json_atomically
from pipeline.local.jobs.bytecode import bytecode_for, place_bytecode
from pipeline.local.jobs.contract import Job, StepFailed
from pipeline.local.jobs.limits import job_limits
from pipeline.local.jobs.storage import download, upload_folder
from pipeline.local.s3 import LocalS3

# No AWS configuration file in the job's "container": credentials and region come from its variables only.
NO_AWS_FILES = {"AWS_CONFIG_FILE": "/nonexistent/aws-config", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-creds"}
CONTAINER_ROOT = "/opt/ml"
PYTHON_COMMANDS = ("python", "python3")
CODE_INPUT = "code"  # the input a job's code bundle comes in (the definition's ProcessingInput of its bundle)
MEMORY_CHECK_SECONDS = 0.2  # how often an instance's process group is measured against its memory
VOLUME_CHECK_SECONDS = 0.5  # how often an instance's sandbox is measured against its volume
# entry script -> the libraries its fork server imports once for all its instances: only what the job imports on every
# run (tests/contract/test_preload_lists.py), so an instance's memory is what a fresh process's would be
PROCESSING_PRELOAD = {
    "preprocess.py": ("numpy", "pandas", "pyarrow", "pyarrow.csv"),  # a Parquet input imports pyarrow.parquet itself
    "evaluate.py": ("numpy", "sklearn.metrics"),
    "analyze.py": ("numpy", "pandas"),
}


def host_name(index: int) -> str:
    """SageMaker's host name of instance ``index`` (0-based)."""
    return f"algo-{index + 1}"


def remap(value: str, root: Path) -> str:
    """``/opt/ml/x`` (alone or as ``--flag=/opt/ml/x``) -> ``<root>/opt/ml/x``; anything else unchanged."""
    flag, separator, path = value.partition("=")
    if separator and not flag.startswith("/"):
        return f"{flag}={remap(path, root)}"
    if value == CONTAINER_ROOT or value.startswith(CONTAINER_ROOT + "/"):
        return str(root / value.lstrip("/"))
    return value


@dataclass(frozen=True)
class ProcessingJobs:
    """Runs Processing steps against one local S3 folder; jobs reach the registry at ``registry_db`` through boto3."""

    s3: LocalS3
    environments: ImageEnvironments = field(default_factory=ImageEnvironments.default)
    registry_db: Path | None = None
    region: str = "us-east-1"
    # the fork servers that start the instances' processes (None: fresh processes, as before)
    fork_servers: ForkServers | None = None

    def __call__(self, job: Job) -> dict[str, Any]:
        return self.run(job, job.arguments)

    def run(self, job: Job, arguments: dict[str, Any], environment_image: str | None = None) -> dict[str, Any]:
        """Run the processing job ``arguments`` describes; ``environment_image`` names the image whose environment
        runs it when the request's own image is one the local backend stands in for (Model Monitor's analyzer)."""
        cluster = arguments["ProcessingResources"]["ClusterConfig"]
        count = int(cluster["InstanceCount"])
        written = ((job.step.arguments.get("ProcessingResources") or {}).get("ClusterConfig")) or {}
        limits = job_limits(job.step.name, cluster, written if isinstance(written, dict) else {})
        if count < 1:
            raise StepFailed(f"InstanceCount must be at least 1, got {count}")
        app = arguments["AppSpecification"]
        entrypoint = [str(part) for part in app.get("ContainerEntrypoint") or []]
        if not entrypoint or Path(entrypoint[0]).name not in PYTHON_COMMANDS:
            raise StepFailed(
                f"image {app.get('ImageUri')}: the local backend runs Python entrypoints only, got {entrypoint or None}"
            )
        container_arguments = [str(argument) for argument in app.get("ContainerArguments") or []]
        variables = {str(k): str(v) for k, v in (arguments.get("Environment") or {}).items()}
        environment = self._environment(job, environment_image or str(app.get("ImageUri", "")))
        sandbox = job.folder / "sandbox"
        shutil.rmtree(sandbox, ignore_errors=True)
        logs = job.folder / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        try:
            roots = [self._prepare_instance(sandbox, index, count, arguments) for index in range(count)]
            self._place_bytecode(roots, arguments, environment)
            job.report(f"{count} instance(s) running")
            with self._aws(job, arguments) as aws_variables:  # the job's own variables: AWS_ENDPOINT_URL ...
                job_variables = {**variables, **aws_variables}
                peaks: dict[int, int] = {}  # instance -> the most memory its processes were measured to hold
                failed = self._run(
                    job, roots, entrypoint, container_arguments, environment, job_variables, logs, limits, peaks
                )
            described = {
                **arguments,
                "ProcessingJobName": job.job_name,
                "ProcessingJobArn": job.arn(f"processing-job/{job.job_name.lower()}"),
                "ProcessingJobStatus": "Completed",
            }
            message = exit_message(roots)
            if message is not None:
                described["ExitMessage"] = message
            if isinstance(failed, str):  # past its volume or its memory: the service fails it so
                raise StepFailed(failed, {**described, "ProcessingJobStatus": "Failed"})
            if failed is not None:
                index, code = failed
                killed = limits.signal_error(host_name(index), code, peaks.get(index, 0))
                if killed:  # ended by a signal from outside (the OOM killer): says so, whatever the log holds
                    raise StepFailed(killed, {**described, "ProcessingJobStatus": "Failed"})
                if message is None:  # the failing instance's last log line, its paths as the container saw them
                    source, text = "log", container_paths(last_error(logs / f"{host_name(index)}.log"), roots[index])
                else:
                    source, text = "ExitMessage", one_line(message)
                full = full_disk(job.folder)  # the cause first: its log then says little ("no output")
                if full:
                    detail = f": {full} (its {source}: {text})"
                else:
                    detail = f": {text}" if message is None else f"; ExitMessage: {text}"
                reason = f"{host_name(index)} exited with code {code}{detail}"
                raise StepFailed(reason, {**described, "ProcessingJobStatus": "Failed"})
            for output in arguments.get("ProcessingOutputConfig", {}).get("Outputs", []):
                s3_output = output.get("S3Output")
                if s3_output is None:
                    raise StepFailed(f"output {output.get('OutputName')}: only S3Output is supported locally")
                for root in roots:
                    upload_folder(self.s3, Path(remap(s3_output["LocalPath"], root)), s3_output["S3Uri"])
        finally:
            shutil.rmtree(sandbox, ignore_errors=True)
        return described

    def warm(self, arguments: dict[str, Any]) -> None:
        """Start the fork server of a processing step's instances now (``arguments``: the step's, as written), its
        preloading overlapping the run's set-up; nothing when its image's environment is not built yet, or its image
        or entry point is a value only the run decides."""
        app = arguments.get("AppSpecification") or {}
        image_uri, entrypoint = app.get("ImageUri"), app.get("ContainerEntrypoint")
        if self.fork_servers is None or not isinstance(image_uri, str) or not isinstance(entrypoint, list):
            return
        preload = processing_preload([str(part) for part in entrypoint])
        image = image_for_uri(image_uri)
        environment = self.environments.cached(image) if preload and image is not None else None
        if environment is not None:
            written = arguments.get("Environment") or {}
            variables = {str(k): str(v) for k, v in written.items() if isinstance(v, str)}
            self.fork_servers.warm(environment.python, preload, job_variables(environment, variables, Path("/")))

    def _environment(self, job: Job, image_uri: str) -> JobEnvironment:
        """The image's environment (built on first use, progress shown), recorded in ``environment.json``."""
        environment = self.environments.for_image_uri(image_uri, job.report)
        write_json_atomically(job.folder / "environment.json", environment.to_json())
        if environment.build_seconds is not None:
            job.note(f"built the {environment.image} environment in {environment.build_seconds:.0f}s")
        if not environment.exact:
            job.note(f"approximate environment: {environment.summary()}")
        return environment

    def _place_bytecode(self, roots: list[Path], arguments: dict[str, Any], environment: JobEnvironment) -> None:
        """The code bundle's bytecode beside each instance's copy of it, compiled once per bundle and interpreter
        (``bytecode.py``): the instances would otherwise each compile the same modules on every run."""
        for item in arguments.get("ProcessingInputs", []):
            local_path = (item.get("S3Input") or {}).get("LocalPath")
            if item.get("InputName") != CODE_INPUT or not local_path:
                continue
            compiled = bytecode_for(environment.python, Path(remap(local_path, roots[0])), self.environments.cache_dir)
            if compiled is not None:
                for root in roots:
                    place_bytecode(compiled, Path(remap(local_path, root)))

    @contextmanager
    def _aws(self, job: Job, arguments: dict[str, Any]) -> Iterator[dict[str, str]]:
        """The job's AWS variables: a stand-in endpoint for its lifetime, or nothing under network isolation."""
        from pipeline.local.aws_endpoint import serve

        isolated = bool((arguments.get("NetworkConfig") or {}).get("EnableNetworkIsolation"))
        if isolated or self.registry_db is None:
            yield {**NO_AWS_FILES, "AWS_EC2_METADATA_DISABLED": "true"}
            return
        with serve(self.s3, self.registry_db, self.region) as endpoint:
            try:
                yield {**NO_AWS_FILES, **endpoint.environment()}
            finally:
                if endpoint.endpoint.requests:
                    write_json_atomically(job.folder / "aws-requests.json", endpoint.endpoint.requests)

    def _prepare_instance(self, sandbox: Path, index: int, count: int, arguments: dict[str, Any]) -> Path:
        root = sandbox / host_name(index)
        hosts = [host_name(i) for i in range(count)]
        write_json_atomically(Path(remap(RESOURCE_CONFIG, root)), {"current_host": hosts[index], "hosts": hosts})
        Path(remap(EXIT_MESSAGE_FILE, root)).parent.mkdir(parents=True, exist_ok=True)  # where it can say why it failed
        for item in arguments.get("ProcessingInputs", []):
            name = item.get("InputName")
            s3_input = item.get("S3Input")
            if s3_input is None:
                raise StepFailed(f"input {name}: only S3Input is supported locally (got {sorted(item)})")
            if s3_input.get("S3DataType", "S3Prefix") != "S3Prefix":
                raise StepFailed(f"input {name}: S3DataType {s3_input['S3DataType']} is not supported locally")
            if s3_input.get("S3CompressionType", "None") != "None":
                raise StepFailed(f"input {name}: S3CompressionType {s3_input['S3CompressionType']} is not supported")
            download(
                self.s3,
                s3_input["S3Uri"],
                Path(remap(s3_input["LocalPath"], root)),
                s3_input.get("S3DataDistributionType", "FullyReplicated"),
                index,
                count,
                f"input {name}",
            )
        for output in arguments.get("ProcessingOutputConfig", {}).get("Outputs", []):
            local_path = (output.get("S3Output") or {}).get("LocalPath")
            if local_path:
                Path(remap(local_path, root)).mkdir(parents=True, exist_ok=True)
        return root

    def _run(
        self,
        job: Job,
        roots: list[Path],
        entrypoint: list[str],
        container_arguments: list[str],
        environment: JobEnvironment,
        variables: dict[str, str],
        logs: Path,
        limits: Limits | None = None,
        peaks: dict[int, int] | None = None,
    ) -> tuple[int, int] | str | None:
        """Run every instance until all end, one fails or the execution stops; the failed instance and its exit code,
        or why an instance was ended past its volume or memory (``limits``)."""
        processes = []
        starts: list[str] = []  # how each instance's process started: by a fork server, or fresh and why
        preload = processing_preload(entrypoint)
        started = time.monotonic()
        checked = measured = 0.0
        exceeded = None
        try:
            for index, root in enumerate(roots):
                arguments = [remap(part, root) for part in entrypoint[1:] + container_arguments]
                command = [str(environment.python), *arguments]
                log_path = logs / f"{host_name(index)}.log"
                job.add_log(log_path)
                env = job_variables(environment, variables, root)
                with log_path.open("w") as log:
                    # its own process group, ended as a whole; dies with llpipe
                    if self.fork_servers is None:
                        process = start_process(command, stdout=log, stderr=subprocess.STDOUT, cwd=root, env=env)
                        starts.append("fresh process")
                    else:
                        begun = self.fork_servers.start(
                            command, env=env, preload=preload, cwd=root, stdout=log, stderr=subprocess.STDOUT
                        )
                        process = begun.process
                        starts.append(begun.how)
                    processes.append(process)
            while any(process.poll() is None for process in processes):
                failed = [i for i, process in enumerate(processes) if process.returncode not in (None, 0)]
                if failed or job.stop.is_set():
                    break  # one instance failed (the job has failed) or the execution stops: end the others
                now = time.monotonic()
                if limits is not None and now - checked >= MEMORY_CHECK_SECONDS:
                    volume = now - measured >= VOLUME_CHECK_SECONDS
                    checked, measured = now, (now if volume else measured)
                    exceeded = past_limits(limits, roots, processes, volume, peaks)
                    if exceeded:
                        break
                job.report(f"{len(roots)} instance(s) running, {time.monotonic() - started:.0f}s")
                time.sleep(0.05)
        finally:
            if starts:
                record_starts(job.folder / "environment.json", starts)
            killed = set()
            for index, process in enumerate(processes):
                if process.poll() is None:
                    kill_group(process)
                    killed.add(index)
                process.wait()
        if job.stop.is_set():
            raise StepFailed(f"stopped: {len(killed)} running instance(s) ended")
        if limits is not None:  # what the instances left at the end counts too (a job shorter than one measurement)
            exceeded = exceeded or past_limits(limits, roots, [], True)
        if exceeded:
            return exceeded
        # the root cause is an instance that ended by itself, not one stopped here because another one failed
        failed = [i for i, process in enumerate(processes) if process.returncode != 0 and i not in killed]
        failed = failed or [i for i, process in enumerate(processes) if process.returncode != 0]
        return (failed[0], processes[failed[0]].returncode) if failed else None


def job_variables(environment: JobEnvironment, variables: dict[str, str], root: Path) -> dict[str, str]:
    """An instance's environment variables: this process's less the project's path and AWS configuration, the image's,
    the job's (``/opt/ml`` paths in them mapped into the instance's sandbox ``root``), unbuffered output."""
    return {
        **without_aws(clean_variables(os.environ)),
        **environment.variables,
        # a path the container reads from its variables is in its sandbox too
        **{name: remap(value, root) for name, value in variables.items()},
        "PYTHONUNBUFFERED": "1",
        "PYTHONNOUSERSITE": "1",  # the container has no user site-packages
    }


def processing_preload(entrypoint: Sequence[str]) -> tuple[str, ...]:
    """The modules the fork server preloads for a job whose entry script is ``entrypoint[1]`` (``preprocess.py``...);
    none for a script the table does not know."""
    return PROCESSING_PRELOAD.get(Path(entrypoint[1]).name, ()) if len(entrypoint) > 1 else ()


def record_starts(path: Path, starts: list[str]) -> None:
    """Add how the instances' processes started to ``environment.json``: ``instances_started`` per instance."""
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError):
        document = {}
    document["instances_started"] = starts
    write_json_atomically(path, document)


def past_limits(
    limits: Limits,
    roots: Sequence[Path],
    processes: Sequence[Any],
    volume: bool,
    peaks: dict[int, int] | None = None,
) -> str | None:
    """Why the first instance past its memory (its process group's RSS) or, when ``volume``, past its storage volume
    (its sandbox's files: the inputs it downloaded and what it wrote) must fail, else None; ``peaks`` keeps the most
    each instance's processes were measured to hold."""
    running = [index for index, process in enumerate(processes) if process.poll() is None]
    measured = groups_rss(processes[index].pid for index in running)
    for index in running:
        rss = measured[processes[index].pid]
        if peaks is not None:
            peaks[index] = max(peaks.get(index, 0), rss)
        error = limits.memory_error(host_name(index), rss)
        if error:
            return error
    if volume:
        for index, root in enumerate(roots):
            error = limits.volume_error(host_name(index), held_bytes([root]))
            if error:
                return error
    return None


def without_aws(variables: Any) -> dict[str, str]:
    """This process's variables minus its AWS configuration (profile, keys, endpoints): the job gets its own."""
    return {name: value for name, value in variables.items() if not name.startswith("AWS_")}


def last_error(log_path: Path, lines: int = 1) -> str:
    """The last non-empty line(s) of an instance's log: where a Python error states its message."""
    try:
        text = log_path.read_text(errors="replace")
    except OSError:
        return "no log"
    tail = [line for line in text.splitlines() if line.strip()][-lines:]
    return one_line("\n".join(tail)) or "no output"


FULL_BYTES = 1024 * 1024  # less free than this where the job's logs and sandbox are: too little to write a log line


def full_disk(folder: Path) -> str:
    """Why a job failed when the disk holding ``folder`` (the job's logs and sandbox) is full: a job that cannot
    write its log or its exit message leaves "no output" behind, and this says why; empty otherwise."""
    from containerlib.file_errors import free_bytes

    free = free_bytes(str(folder))
    if free is None or free >= FULL_BYTES:
        return ""
    return (
        f"the disk holding its logs and sandbox, {folder}, is full: {free / 1024 / 1024:,.1f} MB free; free space "
        "there, or run with another work dir"
    )


def container_paths(text: str, root: Path) -> str:
    """``text`` naming an instance's sandbox paths as the container saw them, ``/opt/ml/...``: the sandbox is gone
    once the job ends, and SageMaker's messages name those paths."""
    return text.replace(str(root / "opt" / "ml"), CONTAINER_ROOT)


def exit_message(roots: Sequence[Path]) -> str | None:
    """DescribeProcessingJob's ExitMessage, built as SageMaker builds it from the instances' exit-message files: their
    text (in host order, paths as the container saw them) concatenated, then cut to the first ``EXIT_MESSAGE_BYTES``
    (on a character boundary); None when no instance wrote one. A file that is not UTF-8 fails the job, as on
    SageMaker (ClientError)."""
    parts = []
    for index, root in enumerate(roots):
        path = Path(remap(EXIT_MESSAGE_FILE, root))
        if not path.is_file():
            continue
        try:
            parts.append(container_paths(path.read_bytes().decode("utf-8"), root))
        except UnicodeDecodeError as error:
            raise StepFailed(f"ClientError: {host_name(index)}'s {EXIT_MESSAGE_FILE} is not UTF-8 ({error})") from None
    text = "".join(parts).encode("utf-8")[:EXIT_MESSAGE_BYTES].decode("utf-8", "ignore")
    return text or None
