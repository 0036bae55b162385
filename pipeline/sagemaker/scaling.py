"""A SageMaker training job's scaling record, from what the service reports about the job itself.

DescribeTrainingJob gives the hosts (InstanceCount), the per-host mini-batch, the time in each secondary status
(Starting, Downloading, Training, Uploading), training against billable time and the final ``train:throughput``;
ListObjectsV2 of the train channel gives the shards and so which host read which (ShardedByS3Key, as the local
launcher splits them); CloudWatch GetMetricData gives each host's CPUUtilization (dimension ``Host=<job>/algo-N``,
namespace ``/aws/sagemaker/TrainingJobs``); CloudWatch Logs FilterLogEvents gives each host's
``#throughput_metric`` lines. A host without shards is idle; a host far below the others is named slow.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from containerlib.s3_uri import split_s3_uri
from pipeline.core.s3_listing import list_objects
from pipeline.core.scaling import HostRecord, ScalingRecord
from pipeline.core.sharding import objects_for_instance

NAMESPACE = "/aws/sagemaker/TrainingJobs"
LOG_GROUP = "/aws/sagemaker/TrainingJobs"
PERIOD_SECONDS = 60
_THROUGHPUT = re.compile(r"#throughput_metric: host=(algo-\d+), train throughput=([0-9.eE+-]+) records/second")


def _seconds(start: Any, end: Any) -> float:
    if isinstance(start, datetime) and isinstance(end, datetime):
        return max((end - start).total_seconds(), 0.0)
    return 0.0


def status_seconds(described: dict[str, Any]) -> dict[str, float]:
    """Seconds in each secondary status (a status still running has no EndTime: not counted)."""
    found: dict[str, float] = {}
    for transition in described.get("SecondaryStatusTransitions") or []:
        if transition.get("EndTime") is None:
            continue
        status = transition["Status"]
        found[status] = found.get(status, 0.0) + _seconds(transition.get("StartTime"), transition.get("EndTime"))
    return found


def train_objects(s3: Any, uri: str) -> list[str]:
    """The keys under the train channel's S3 prefix, in key order (every page)."""
    bucket, prefix = split_s3_uri(uri)
    return sorted(item["Key"] for item in list_objects(s3, bucket, prefix) if not item["Key"].endswith("/"))


def cpu_utilization(cloudwatch: Any, job: str, hosts: list[str], start: Any, end: Any) -> dict[str, float]:
    """Each host's mean CPUUtilization over the job (one GetMetricData request, a query per host)."""
    queries = [
        {
            "Id": f"cpu{index}",
            "MetricStat": {
                "Metric": {
                    "Namespace": NAMESPACE,
                    "MetricName": "CPUUtilization",
                    "Dimensions": [{"Name": "Host", "Value": f"{job}/{host}"}],
                },
                "Period": PERIOD_SECONDS,
                "Stat": "Average",
            },
            "Label": host,
        }
        for index, host in enumerate(hosts)
    ]
    found: dict[str, float] = {}
    response = cloudwatch.get_metric_data(MetricDataQueries=queries, StartTime=start, EndTime=end)
    for result in response.get("MetricDataResults", []):
        values = result.get("Values") or []
        if values:
            found[hosts[int(result["Id"].removeprefix("cpu"))]] = sum(values) / len(values)
    return found


def throughput_lines(logs: Any, job: str) -> dict[str, list[float]]:
    """Each host's ``#throughput_metric`` values from the job's log streams (every page)."""
    found: dict[str, list[float]] = {}
    token = None
    while True:
        request = {
            "logGroupName": LOG_GROUP,
            "logStreamNamePrefix": f"{job}/algo-",
            "filterPattern": '"#throughput_metric"',
            **({"nextToken": token} if token else {}),
        }
        page = logs.filter_log_events(**request)
        for event in page.get("events", []):
            match = _THROUGHPUT.search(event.get("message", ""))
            if match:
                found.setdefault(match.group(1), []).append(float(match.group(2)))
        token = page.get("nextToken")
        if not token:
            return found


def training_job_scaling(sagemaker: Any, s3: Any, cloudwatch: Any, logs: Any, job: str) -> ScalingRecord:
    """The scaling record of training job ``job``."""
    described = sagemaker.describe_training_job(TrainingJobName=job)
    count = int(described["ResourceConfig"]["InstanceCount"])
    hosts = [f"algo-{index + 1}" for index in range(count)]
    channel = next(c for c in described.get("InputDataConfig", []) if c["ChannelName"] == "train")
    source = channel["DataSource"]["S3DataSource"]
    keys = train_objects(s3, source["S3Uri"])
    distribution = source.get("S3DataDistributionType", "FullyReplicated")
    start, end = described.get("TrainingStartTime"), described.get("TrainingEndTime")
    cpu = cpu_utilization(cloudwatch, job, hosts, start, end) if start and end else {}
    lines = throughput_lines(logs, job)
    records = tuple(
        HostRecord(
            host=host,
            train_shards=len(objects_for_instance(keys, distribution, index, count)),
            cpu_utilization=cpu.get(host),
            throughput_lines=tuple(lines.get(host, [])),
        )
        for index, host in enumerate(hosts)
    )
    metrics = {item["MetricName"]: item["Value"] for item in described.get("FinalMetricDataList", [])}
    service = {
        "status_seconds": status_seconds(described),
        "training_seconds": described.get("TrainingTimeInSeconds"),
        "billable_seconds": described.get("BillableTimeInSeconds"),
        "train_throughput": metrics.get("train:throughput"),
        "instance_type": described["ResourceConfig"].get("InstanceType"),
    }
    batch = int((described.get("HyperParameters") or {}).get("mini_batch_size", 1000))
    return ScalingRecord(job=job, mini_batch_size=batch, hosts=records, service=service)


def jobs_scaling(session: Any, jobs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The scaling records of ``(step, training job name)`` pairs, as dicts with the step's name."""
    clients = [session.client(name) for name in ("sagemaker", "s3", "cloudwatch", "logs")]
    return [{**training_job_scaling(*clients, job).to_dict(), "step": step} for step, job in jobs]


# the members of DescribeTrainingJob's answer that a CreateTrainingJob request takes as they are
_REQUEST_KEYS = (
    "RoleArn",
    "HyperParameters",
    "InputDataConfig",
    "OutputDataConfig",
    "ResourceConfig",
    "StoppingCondition",
    "VpcConfig",
    "EnableNetworkIsolation",
    "EnableInterContainerTrafficEncryption",
    "EnableManagedSpotTraining",
    "CheckpointConfig",
    "RetryStrategy",
    "Environment",
)


def study_request(described: dict[str, Any], name: str, count: int, execution_id: str) -> dict[str, Any]:
    """A CreateTrainingJob request repeating a described job with only its name and InstanceCount changed (tagged
    with the study's execution, so the jobs are found and told apart from the pipeline's)."""
    import copy

    request: dict[str, Any] = {key: copy.deepcopy(described[key]) for key in _REQUEST_KEYS if key in described}
    algorithm = described["AlgorithmSpecification"]
    request["AlgorithmSpecification"] = {
        "TrainingImage": algorithm["TrainingImage"],
        "TrainingInputMode": algorithm.get("TrainingInputMode", "File"),
    }
    request["TrainingJobName"] = name
    request["ResourceConfig"]["InstanceCount"] = count
    request["Tags"] = [{"Key": "llpipe:scaling-study", "Value": execution_id}]
    return request
