"""A local training job: the built-in Linear Learner image is run by the local Linear Learner, one process per host.

Channels are the S3 prefixes of ``InputDataConfig`` (sharded by the launcher per ``S3DataDistributionType``); the
artifact lands where SageMaker puts it, ``<S3OutputPath>/<TrainingJobName>/output/model.tar.gz``; the final metrics
become ``FinalMetricDataList``. Any other training image is an error naming it.
"""

from __future__ import annotations

import re
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.core.images import is_linear_learner
from pipeline.core.names import RECORDIO, media_type
from pipeline.local.executions import now
from pipeline.local.jobs.contract import Job, StepFailed
from pipeline.local.jobs.limits import job_limits
from pipeline.local.jobs.storage import list_prefix, upload_file
from pipeline.local.s3 import LocalS3

if TYPE_CHECKING:
    from pipeline.core.forkserver import ForkServers

_HOST_LINE = re.compile(r"^\[(algo-\d+)\] (.*)$")


@dataclass(frozen=True)
class TrainingJobs:
    """Runs Training steps against one local S3 folder."""

    s3: LocalS3
    fork_servers: ForkServers | None = None  # what starts the instances' processes (None: fresh processes)

    def __call__(self, job: Job) -> dict[str, Any]:
        from pipeline.linear_learner import launcher

        arguments = job.arguments
        algorithm = arguments.get("AlgorithmSpecification") or {}
        image = algorithm.get("TrainingImage", "")
        if not is_linear_learner(image):
            raise StepFailed(f"training image {image!r} is not Linear Learner, the only algorithm run locally")
        resources = arguments["ResourceConfig"]
        count = int(resources["InstanceCount"])
        channels = {}
        for channel in arguments.get("InputDataConfig", []):
            name = channel["ChannelName"]
            source = channel.get("DataSource", {}).get("S3DataSource")
            if source is None:
                raise StepFailed(f"channel {name}: only S3DataSource is supported locally")
            if source.get("S3DataType", "S3Prefix") != "S3Prefix":
                raise StepFailed(f"channel {name}: S3DataType {source['S3DataType']} is not supported locally")
            files = [self.s3.path(uri) for uri in list_prefix(self.s3, source["S3Uri"], f"channel {name}")]
            channels[name] = launcher.Channel(
                files=files,
                distribution=source.get("S3DataDistributionType", "FullyReplicated"),
                content_type=media_type(channel.get("ContentType") or RECORDIO),
                input_mode=str(channel.get("InputMode") or algorithm.get("TrainingInputMode") or "File"),
                shuffle_seed=_seed(channel.get("ShuffleConfig")),
            )
        job_name = str(arguments.get("TrainingJobName") or job.job_name)
        logs = HostLogs(job, job.folder / "logs")
        try:
            result = launcher.train(
                {str(k): str(v) for k, v in (arguments.get("HyperParameters") or {}).items()},
                channels,
                job.folder / "output",
                instance_count=count,
                work_dir=job.folder / "instances",
                on_log=logs.write,
                stop=job.stop,
                limits=job_limits(job.step.name, resources, written_resources(job.step.arguments)),
                fork_servers=self.fork_servers,
            )
        except launcher.TrainingError as error:
            raise StepFailed(str(error)) from None
        finally:
            logs.close()
            # the instances' copies of the data go whatever the outcome (a failure's logs and reason say why)
            shutil.rmtree(job.folder / "instances", ignore_errors=True)
        artifact = f"{arguments['OutputDataConfig']['S3OutputPath'].rstrip('/')}/{job_name}/output/model.tar.gz"
        upload_file(self.s3, result.model_path, artifact)
        job.record.scaling.append({**result.scaling, "job": job_name})  # a tuning step's trials share the record
        shutil.rmtree(job.folder / "output", ignore_errors=True)  # the staged artifact, uploaded
        timestamp = now()
        return {
            **arguments,
            "TrainingJobName": job_name,
            "TrainingJobArn": job.arn(f"training-job/{job_name.lower()}"),
            "TrainingJobStatus": "Completed",
            "ModelArtifacts": {"S3ModelArtifacts": artifact},
            "FinalMetricDataList": [
                {"MetricName": name, "Value": value, "Timestamp": timestamp}
                for name, value in sorted(result.metrics.items())
            ],
        }


def _seed(shuffle: Any) -> int | None:
    """A channel's ShuffleConfig.Seed (None without one)."""
    return int(shuffle["Seed"]) if isinstance(shuffle, dict) and "Seed" in shuffle else None


def written_resources(arguments: dict[str, Any]) -> dict[str, Any]:
    """The step's ResourceConfig as the definition writes it (a tuning step's in its training job definition)."""
    job = arguments.get("TrainingJobDefinition") or arguments
    resources = job.get("ResourceConfig") if isinstance(job, dict) else None
    return resources if isinstance(resources, dict) else {}


class HostLogs:
    """Splits the launcher's ``[algo-N] line`` stream into one log file per host; the latest line is the progress."""

    def __init__(self, job: Job, folder: Path) -> None:
        self.job = job
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.files: dict[str, Any] = {}
        self.lock = threading.Lock()

    def write(self, line: str) -> None:
        match = _HOST_LINE.match(line)
        host, text = match.groups() if match else ("launcher", line)
        with self.lock:
            if host not in self.files:
                path = self.folder / f"{host}.log"
                self.job.add_log(path)
                self.files[host] = path.open("w")
            self.files[host].write(text + "\n")
        if text.strip():
            self.job.report(f"{host}: {text.strip()[:80]}")

    def close(self) -> None:
        with self.lock:
            for handle in self.files.values():
                handle.close()
