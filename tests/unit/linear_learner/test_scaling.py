"""Scaling: the shared-memory gradient exchange of the local hosts and the jobs' scaling records."""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from pipeline.linear_learner.collective import CollectiveAborted
from pipeline.linear_learner.shared import SharedMemoryCollective


@pytest.mark.parametrize("futex", [True, False])
def test_shared_memory_allreduce_sums_in_host_order_for_every_host(
    tmp_path: Path, futex: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three hosts, interleaved lengths and many rounds (the double buffer is reused): every host gets the same
    sum, bit for bit, added in host order like the parameter server's; waiting on futexes and, where there are
    none, sleeping; spinning or not (the waits decide every window)."""
    from pipeline.linear_learner import shared

    if not futex:
        monkeypatch.setattr(shared, "_futex_syscall", lambda: None)
    monkeypatch.setattr(shared, "_SPIN_WINDOW", 4)
    names = ["algo-1", "algo-2", "algo-3"]
    rng = np.random.default_rng(0)
    rounds = [(rng.standard_normal((3, 7)), rng.standard_normal((3, 1))) for _ in range(25)]
    results: dict[int, list[np.ndarray]] = {}
    errors: list[BaseException] = []

    def host(rank: int) -> None:
        collective = SharedMemoryCollective(tmp_path, rank, 3, names, timeout=30)
        try:
            results[rank] = [
                part
                for big, small in rounds
                for part in (collective.allreduce(big[rank]), collective.allreduce(small[rank]))
            ]
        except BaseException as error:  # noqa: BLE001 - reported by the test
            errors.append(error)
        finally:
            collective.close()

    threads = [threading.Thread(target=host, args=(rank,)) for rank in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    expected = [(part[0] + part[1]) + part[2] for big, small in rounds for part in (big, small)]
    for rank in range(3):
        assert len(results[rank]) == len(expected)
        for got, want in zip(results[rank], expected, strict=True):
            np.testing.assert_array_equal(got, want)


def test_shared_memory_exchange_names_the_silent_host_after_the_heartbeat(tmp_path: Path) -> None:
    collective = SharedMemoryCollective(tmp_path, 0, 2, ["algo-1", "algo-2"], timeout=0.2)
    try:
        with pytest.raises(CollectiveAborted, match="algo-2 sent no update for 0.2 s"):
            collective.allreduce(np.ones(4))
    finally:
        collective.close()


def test_preflight_warns_of_idle_hosts_and_a_mini_batch_larger_than_a_host_sees(tmp_path: Path) -> None:
    """The bundled example (569 rows, 70% train) on 2 instances: about 199 train records per host, so the default
    MiniBatchSize 1000 is named; a smaller batch is not. More instances than shards: the idle hosts are counted."""
    from pipeline.core.scaling import preflight_warnings
    from pipeline.definition.config import load_config
    from pipeline.local.data import example_data
    from pipeline.local.runner import build_local_run
    from pipeline.local.workdir import Workdir

    workdir = Workdir(tmp_path)
    run = build_local_run(load_config(env={}), workdir)
    [warning] = run.prepare(example_data(workdir), {}, None).warnings
    assert "MiniBatchSize=1000 is larger than the about 199 train records one of the 2 host(s)" in warning
    assert run.prepare(example_data(workdir), {"MiniBatchSize": "100"}, None).warnings == ()
    [idle] = preflight_warnings(4, 10, train_shards=2, train_rows=1000)
    assert "TrainingInstanceCount=4 but the run will have 2 train shard(s)" in idle and "2 host(s) would get no" in idle


def test_a_sagemaker_training_job_s_scaling_record_with_an_idle_host() -> None:
    """A 3-instance job on 2 ShardedByS3Key objects: the exact DescribeTrainingJob, ListObjectsV2, GetMetricData
    (Host=<job>/algo-N) and FilterLogEvents requests; algo-3 had no shard and is idle; the secondary statuses,
    training and billable time and train:throughput are kept."""
    from datetime import datetime, timezone

    from support.aws_stubs import StubbedSession, cpu_utilization_queries

    from pipeline.core.scaling import ScalingRecord
    from pipeline.sagemaker.scaling import training_job_scaling

    job = "pipelines-abc123-Train-x1"
    t = [datetime(2026, 12, 4, 10, minute, tzinfo=timezone.utc) for minute in (0, 2, 3, 9, 10)]
    session = StubbedSession("sagemaker", "s3", "cloudwatch", "logs")
    session.stubs["sagemaker"].add_response(
        "describe_training_job",
        {
            "TrainingJobName": job,
            "TrainingJobArn": f"arn:aws:sagemaker:us-west-2:111122223333:training-job/{job}",
            "ModelArtifacts": {"S3ModelArtifacts": "s3://bucket/models/model.tar.gz"},
            "TrainingJobStatus": "Completed",
            "SecondaryStatus": "Completed",
            "AlgorithmSpecification": {"TrainingImage": "image", "TrainingInputMode": "File"},
            "HyperParameters": {"mini_batch_size": "500"},
            "InputDataConfig": [
                {
                    "ChannelName": "train",
                    "DataSource": {
                        "S3DataSource": {
                            "S3DataType": "S3Prefix",
                            "S3Uri": "s3://bucket/run/train/",
                            "S3DataDistributionType": "ShardedByS3Key",
                        }
                    },
                }
            ],
            "ResourceConfig": {"InstanceType": "ml.m5.xlarge", "InstanceCount": 3, "VolumeSizeInGB": 30},
            "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
            "CreationTime": t[0],
            "TrainingStartTime": t[1],
            "TrainingEndTime": t[4],
            "TrainingTimeInSeconds": 480,
            "BillableTimeInSeconds": 480,
            "SecondaryStatusTransitions": [
                {"Status": "Starting", "StartTime": t[0], "EndTime": t[1]},
                {"Status": "Downloading", "StartTime": t[1], "EndTime": t[2]},
                {"Status": "Training", "StartTime": t[2], "EndTime": t[3]},
                {"Status": "Uploading", "StartTime": t[3], "EndTime": t[4]},
                {"Status": "Completed", "StartTime": t[4]},
            ],
            "FinalMetricDataList": [{"MetricName": "train:throughput", "Value": 120000.0, "Timestamp": t[3]}],
        },
        {"TrainingJobName": job},
    )
    session.stubs["s3"].add_response(
        "list_objects_v2",
        {"Contents": [{"Key": "run/train/train-algo-1-00000.pbr"}, {"Key": "run/train/train-algo-2-00000.pbr"}]},
        {"Bucket": "bucket", "Prefix": "run/train/"},
    )
    hosts = ["algo-1", "algo-2", "algo-3"]
    queries = cpu_utilization_queries(job, hosts)
    session.stubs["cloudwatch"].add_response(
        "get_metric_data",
        {
            "MetricDataResults": [
                {"Id": "cpu0", "Label": "algo-1", "Values": [96.0, 98.0], "Timestamps": [t[2], t[3]]},
                {"Id": "cpu1", "Label": "algo-2", "Values": [90.0, 94.0], "Timestamps": [t[2], t[3]]},
                {"Id": "cpu2", "Label": "algo-3", "Values": [1.0, 1.0], "Timestamps": [t[2], t[3]]},
            ]
        },
        {"MetricDataQueries": queries, "StartTime": t[1], "EndTime": t[4]},
    )
    line = "[12/04/2026 10:05:00 INFO 140] #throughput_metric: host={}, train throughput={} records/second"
    filter_request = {
        "logGroupName": "/aws/sagemaker/TrainingJobs",
        "logStreamNamePrefix": f"{job}/algo-",
        "filterPattern": '"#throughput_metric"',
    }
    session.stubs["logs"].add_response(
        "filter_log_events",
        {"events": [{"message": line.format("algo-1", 61000.5)}], "nextToken": "page-2"},
        filter_request,
    )
    session.stubs["logs"].add_response(
        "filter_log_events",
        {"events": [{"message": line.format("algo-2", 59000.0)}, {"message": line.format("algo-1", 62000.0)}]},
        {**filter_request, "nextToken": "page-2"},
    )
    record = training_job_scaling(*(session.client(name) for name in ("sagemaker", "s3", "cloudwatch", "logs")), job)
    session.verify()
    assert record.instances == 3 and record.global_batch == 1500
    assert [host.train_shards for host in record.hosts] == [1, 1, 0] and record.idle_hosts == ["algo-3"]
    assert [host.throughput_lines for host in record.hosts] == [(61000.5, 62000.0), (59000.0,), ()]
    assert [host.cpu_utilization for host in record.hosts] == [97.0, 92.0, 1.0]
    assert record.throughput == 62000.0 + 59000.0 and record.slow_hosts == []
    assert record.imbalance == pytest.approx(62000.0 / 59000.0)
    assert record.service["status_seconds"] == {"Starting": 120, "Downloading": 60, "Training": 360, "Uploading": 60}
    assert record.service["training_seconds"] == 480 and record.service["train_throughput"] == 120000.0
    assert ScalingRecord.from_dict(record.to_dict()).to_dict() == record.to_dict()


def _described_train_job(name: str, count: int, status: str = "Completed", **extra: object) -> dict:
    """DescribeTrainingJob's answer for a Linear Learner job of the pipeline's shape."""
    from datetime import datetime, timezone

    t = [datetime(2026, 12, 4, 10, minute, tzinfo=timezone.utc) for minute in (0, 2, 3, 9)]
    return {
        "TrainingJobName": name,
        "TrainingJobArn": f"arn:aws:sagemaker:us-west-2:111122223333:training-job/{name}",
        "ModelArtifacts": {"S3ModelArtifacts": f"s3://bucket/models/{name}/output/model.tar.gz"},
        "TrainingJobStatus": status,
        "SecondaryStatus": status,
        "AlgorithmSpecification": {
            "TrainingImage": "174872318107.dkr.ecr.us-west-2.amazonaws.com/linear-learner:1",
            "TrainingInputMode": "File",
            "MetricDefinitions": [{"Name": "train:throughput", "Regex": "x"}],
        },
        "RoleArn": "arn:aws:iam::111122223333:role/llpipe-sagemaker",
        "HyperParameters": {"predictor_type": "binary_classifier", "mini_batch_size": "200"},
        "InputDataConfig": [
            {
                "ChannelName": "train",
                "DataSource": {
                    "S3DataSource": {
                        "S3DataType": "S3Prefix",
                        "S3Uri": "s3://bucket/run/train/",
                        "S3DataDistributionType": "ShardedByS3Key",
                    }
                },
            }
        ],
        "OutputDataConfig": {"S3OutputPath": "s3://bucket/models/"},
        "ResourceConfig": {"InstanceType": "ml.m5.xlarge", "InstanceCount": count, "VolumeSizeInGB": 30},
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
        "CreationTime": t[0],
        "TrainingStartTime": t[1],
        "TrainingEndTime": t[3],
        "TrainingTimeInSeconds": 420,
        "BillableTimeInSeconds": 420,
        "SecondaryStatusTransitions": [
            {"Status": "Downloading", "StartTime": t[1], "EndTime": t[2]},
            {"Status": "Training", "StartTime": t[2], "EndTime": t[3]},
        ],
        **extra,
    }


def test_the_sagemaker_study_creates_the_train_job_again_at_each_count(tmp_path: Path) -> None:
    """--sagemaker: DescribeTrainingJob of the Train step's job, ListObjectsV2 of its train channel, then one
    CreateTrainingJob per count with only the name and InstanceCount changed, the study's tag and Preprocess's test
    split as a streamed test channel (so the service reports the test metric the study compares), watched to the
    end; too few shards for a count is refused before any job is created."""
    from support.aws_stubs import StubbedSession

    from pipeline.api.scaling import ScalingStudyError, study_on_sagemaker

    train = "pipelines-abc123-Train-x1"
    session = StubbedSession("sagemaker", "s3")
    stub = session.stubs["sagemaker"]
    stub.add_response("describe_training_job", _described_train_job(train, 2), {"TrainingJobName": train})
    listing = {"Contents": [{"Key": "run/train/a.pbr"}, {"Key": "run/train/b.pbr"}]}
    session.stubs["s3"].add_response("list_objects_v2", listing, {"Bucket": "bucket", "Prefix": "run/train/"})
    base = _described_train_job(train, 2)
    for count in (1, 2):
        name = f"scaling-abc123-{count}x-1"
        expected = {
            "TrainingJobName": name,
            "AlgorithmSpecification": {
                "TrainingImage": base["AlgorithmSpecification"]["TrainingImage"],
                "TrainingInputMode": "File",
            },
            "RoleArn": base["RoleArn"],
            "HyperParameters": base["HyperParameters"],
            "InputDataConfig": [
                *base["InputDataConfig"],
                {
                    "ChannelName": "test",
                    "ContentType": "application/x-recordio-protobuf",
                    "DataSource": {
                        "S3DataSource": {
                            "S3DataType": "S3Prefix",
                            "S3Uri": "s3://bucket/run/test/",
                            "S3DataDistributionType": "FullyReplicated",
                        }
                    },
                    "InputMode": "Pipe",
                },
            ],
            "OutputDataConfig": base["OutputDataConfig"],
            "ResourceConfig": {**base["ResourceConfig"], "InstanceCount": count},
            "StoppingCondition": base["StoppingCondition"],
            "Tags": [{"Key": "llpipe:scaling-study", "Value": "abc123"}],
        }
        stub.add_response(
            "create_training_job", {"TrainingJobArn": f"arn:aws:sagemaker:us-west-2:1:training-job/{name}"}, expected
        )
    metrics = lambda value: [  # noqa: E731
        {"MetricName": name, "Value": figure, "Timestamp": base["CreationTime"]}
        for name, figure in (("train:throughput", value), ("test:roc_auc_score", 0.9))
    ]
    stub.add_response(
        "describe_training_job",
        _described_train_job("scaling-abc123-1x-1", 1, "InProgress"),
        {"TrainingJobName": "scaling-abc123-1x-1"},
    )
    stub.add_response(
        "describe_training_job",
        _described_train_job("scaling-abc123-2x-1", 2, FinalMetricDataList=metrics(2000.0)),
        {"TrainingJobName": "scaling-abc123-2x-1"},
    )
    stub.add_response(
        "describe_training_job",
        _described_train_job("scaling-abc123-1x-1", 1, FinalMetricDataList=metrics(1100.0)),
        {"TrainingJobName": "scaling-abc123-1x-1"},
    )
    options = {"repeats": 1, "within": 0.1, "floor": 0.7, "poll_seconds": 0.0}
    study = study_on_sagemaker(
        session,
        train,
        "abc123",
        "binary_classifier",
        [1, 2],
        output=tmp_path,
        test_uri="s3://bucket/run/test/",
        **options,
    )
    session.verify()
    assert study.test_metric_name == "test:roc_auc_score" and [row.test_metric for row in study.rows] == [0.9, 0.9]
    assert [(row.instances, row.throughput, row.global_batch) for row in study.rows] == [
        (1, 1100.0, 200),
        (2, 2000.0, 400),
    ]
    assert [row.instance_seconds for row in study.rows] == [420.0, 840.0] and study.train_shards == 2
    assert [row.sync_share for row in study.rows] == [None, None]  # the service does not measure waiting
    assert (tmp_path / "scaling-study.png").is_file() and (tmp_path / "scaling-study.json").is_file()

    refused = StubbedSession("sagemaker", "s3")
    refused.stubs["sagemaker"].add_response(
        "describe_training_job", _described_train_job(train, 2), {"TrainingJobName": train}
    )
    refused.stubs["s3"].add_response("list_objects_v2", listing, {"Bucket": "bucket", "Prefix": "run/train/"})
    with pytest.raises(ScalingStudyError, match=r"up to 3 but Preprocess wrote 2 train shard\(s\)"):
        study_on_sagemaker(refused, train, "abc123", "binary_classifier", [1, 3], output=tmp_path / "no", **options)
    refused.verify()


def test_the_sagemaker_study_finds_the_test_split_preprocess_wrote() -> None:
    """DescribeProcessingJob of the execution's Preprocess job: its ``test`` output is the study's test channel."""
    from support.aws_stubs import StubbedSession

    from pipeline.api.scaling import preprocess_test_uri

    session = StubbedSession("sagemaker")
    outputs = [
        {"OutputName": name, "S3Output": {"S3Uri": f"s3://bucket/run/{name}/", "LocalPath": f"/opt/ml/{name}",
                                         "S3UploadMode": "EndOfJob"}}
        for name in ("train", "validation", "test")
    ]  # fmt: skip
    described = {
        "ProcessingJobName": "pipelines-abc123-Preprocess-x1",
        "ProcessingJobArn": "arn:aws:sagemaker:us-west-2:1:processing-job/pipelines-abc123-preprocess-x1",
        "ProcessingJobStatus": "Completed",
        "CreationTime": datetime(2026, 12, 7, tzinfo=timezone.utc),
        "AppSpecification": {"ImageUri": "image"},
        "ProcessingResources": {
            "ClusterConfig": {"InstanceCount": 2, "InstanceType": "ml.m5.xlarge", "VolumeSizeInGB": 30}
        },
        "RoleArn": "arn:aws:iam::1:role/r",
        "ProcessingOutputConfig": {"Outputs": outputs},
    }
    session.stubs["sagemaker"].add_response(
        "describe_processing_job", described, {"ProcessingJobName": "pipelines-abc123-preprocess-x1"}
    )
    arn = "arn:aws:sagemaker:us-west-2:1:processing-job/pipelines-abc123-preprocess-x1"
    assert preprocess_test_uri(session.client("sagemaker"), arn) == "s3://bucket/run/test/"
    session.verify()


@pytest.mark.parametrize(("dim", "rows", "blocks"), [(3, 16507, 1), (1024, 5000, 3)])
def test_hosts_sharing_the_validation_scoring_get_one_host_s_losses_bit_for_bit(
    tmp_path: Path, dim: int, rows: int, blocks: int
) -> None:
    """A FullyReplicated validation channel on 3 hosts (three chunks of one block on disk, or three blocks of one
    chunk): each host scores every third chunk and the exchanged sums add up to exactly the losses one host computes
    alone; a host without the channel turns the sharing off on every host."""
    from pipeline.linear_learner.blocks import write_blocks
    from pipeline.linear_learner.hyperparameters import parse_hyperparameters
    from pipeline.linear_learner.trainer import Dataset, Objective, ParallelModels, Scaler, model_settings
    from pipeline.linear_learner.validation_losses import (
        EVALUATION_CHUNK,
        evaluation_losses,
        validation_on_every_host,
    )

    rng = np.random.default_rng(1)
    features = rng.standard_normal((rows, dim)).astype(np.float32)
    labels = (rng.random(rows) < 0.4).astype(np.float32)
    pieces = [Dataset(features[start : start + 5000], labels[start : start + 5000]) for start in range(0, rows, 5000)]
    channel = write_blocks(tmp_path / "blocks", pieces)
    hp = parse_hyperparameters({"predictor_type": "binary_classifier", "num_models": "4"})
    scaler = Scaler(np.zeros(dim), np.ones(dim))
    models = ParallelModels(hp, scaler, dim)
    objective = Objective(hp, scaler, model_settings(hp, 1.5), None)
    alone = evaluation_losses(models, objective, channel)
    whole = evaluation_losses(models, objective, Dataset(features, labels))  # all in one in-memory block
    names = ["algo-1", "algo-2", "algo-3"]
    results: dict[int, tuple[bool, np.ndarray, bool]] = {}

    def host(rank: int) -> None:
        collective = SharedMemoryCollective(tmp_path / "exchange", rank, 3, names, timeout=30)
        try:
            shared = validation_on_every_host(channel, collective)
            losses = evaluation_losses(models, objective, channel, collective=collective)
            results[rank] = (shared, losses, validation_on_every_host(channel if rank == 0 else None, collective))
        finally:
            collective.close()

    (tmp_path / "exchange").mkdir()
    threads = [threading.Thread(target=host, args=(rank,)) for rank in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(channel.sizes) == blocks and -(-rows // EVALUATION_CHUNK) * len(channel.sizes) >= 3
    for rank in range(3):
        shared, losses, leader_only = results[rank]
        assert shared and not leader_only
        assert losses.tobytes() == alone.tobytes()
    np.testing.assert_allclose(whole, alone, rtol=1e-12)  # another chunking: the same up to rounding


def test_sharing_the_validation_scoring_trains_the_same_model_as_algo_1_scoring_alone(tmp_path: Path) -> None:
    """Two hosts training through ``fit``: with the validation channel on both (shared scoring) the selected model,
    epochs and train loss are bit for bit those of algo-1 scoring it alone while algo-2 waits."""
    from pipeline.linear_learner.hyperparameters import parse_hyperparameters
    from pipeline.linear_learner.trainer import Dataset, fit

    rng = np.random.default_rng(2)
    features = rng.standard_normal((3000, 5)).astype(np.float32)
    labels = (features @ np.arange(1, 6) + rng.standard_normal(3000) > 0).astype(np.float32)
    shards = [Dataset(features[:1200], labels[:1200]), Dataset(features[1200:2400], labels[1200:2400])]
    validation = Dataset(features[2400:], labels[2400:])
    hp = parse_hyperparameters(
        {"predictor_type": "binary_classifier", "epochs": "4", "num_models": "4", "mini_batch_size": "50"}
    )

    def train(everywhere: bool, folder: Path) -> object:
        folder.mkdir()
        results: dict[int, object] = {}

        def host(rank: int) -> None:
            collective = SharedMemoryCollective(folder, rank, 2, ["algo-1", "algo-2"], timeout=30)
            try:
                mine = validation if rank == 0 or everywhere else None
                results[rank] = fit(hp, shards[rank], mine, collective, lambda line: None, f"algo-{rank + 1}")
            finally:
                collective.close()

        threads = [threading.Thread(target=host, args=(rank,)) for rank in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return results[0]

    alone, shared = train(False, tmp_path / "alone"), train(True, tmp_path / "shared")
    assert shared.epochs == alone.epochs
    assert shared.metrics["train:objective_loss"] == alone.metrics["train:objective_loss"]  # throughput is timing
    assert shared.model.weights.tobytes() == alone.model.weights.tobytes()
    assert shared.model.bias.tobytes() == alone.model.bias.tobytes()
    assert shared.model.threshold == alone.model.threshold


def test_a_host_stops_spinning_while_most_waits_outlast_the_spin_and_spins_again_once_they_are_short(
    tmp_path: Path,
) -> None:
    """Over a window of rounds: more than a quarter of the waits longer than the spin (a descheduled peer on an
    oversubscribed machine) and the next window blocks at once; a window of short waits and it spins again."""
    from pipeline.linear_learner import shared

    collective = SharedMemoryCollective(tmp_path, 0, 2, ["algo-1", "algo-2"], timeout=1)
    try:
        long, short = 2 * shared._SPIN_SECONDS, shared._SPIN_SECONDS / 2
        quarter = shared._SPIN_WINDOW // 4
        for waited in [long] * quarter + [short] * (shared._SPIN_WINDOW - quarter):
            collective._adapt(waited)
        assert collective._spin == shared._SPIN_SECONDS  # a quarter is still fine
        for waited in [long] * (quarter + 1) + [short] * (shared._SPIN_WINDOW - quarter - 1):
            collective._adapt(waited)
        assert collective._spin == 0.0
        for _ in range(shared._SPIN_WINDOW):
            collective._adapt(short)
        assert collective._spin == shared._SPIN_SECONDS
    finally:
        collective.close()


def test_a_sharded_validation_channel_is_scored_as_the_whole_channel_on_every_host(tmp_path: Path) -> None:
    """ShardedByS3Key validation on 2 hosts (shares of unequal size): every host gets the losses of all the records
    together, the same as one host scoring the whole channel, not the leader's share."""
    from pipeline.linear_learner.hyperparameters import parse_hyperparameters
    from pipeline.linear_learner.trainer import Dataset, Objective, ParallelModels, Scaler, model_settings
    from pipeline.linear_learner.validation_losses import evaluation_losses, sharded_evaluation_losses

    rng = np.random.default_rng(3)
    features = rng.standard_normal((90, 4)).astype(np.float32)
    labels = (features @ np.array([1.0, -2.0, 0.5, 3.0]) + rng.standard_normal(90)).astype(np.float32)
    hp = parse_hyperparameters({"predictor_type": "regressor", "num_models": "4"})
    scaler = Scaler(np.zeros(4), np.ones(4), label_mean=0.1, label_scale=2.0)
    models = ParallelModels(hp, scaler, 4)
    objective = Objective(hp, scaler, model_settings(hp, 1.0), None)
    whole = evaluation_losses(models, objective, Dataset(features, labels))
    leader_share = evaluation_losses(models, objective, Dataset(features[:30], labels[:30]))
    shares = [Dataset(features[:30], labels[:30]), Dataset(features[30:], labels[30:])]
    results: dict[int, np.ndarray] = {}

    def host(rank: int) -> None:
        collective = SharedMemoryCollective(tmp_path / "exchange", rank, 2, ["algo-1", "algo-2"], timeout=30)
        try:
            results[rank] = sharded_evaluation_losses(models, objective, shares[rank], collective)
        finally:
            collective.close()

    (tmp_path / "exchange").mkdir()
    threads = [threading.Thread(target=host, args=(rank,)) for rank in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for rank in range(2):
        np.testing.assert_allclose(results[rank], whole, rtol=1e-12)
    assert not np.allclose(leader_share, whole, rtol=1e-3)


def test_two_hosts_with_validation_shares_select_the_model_the_whole_validation_channel_selects(
    tmp_path: Path,
) -> None:
    """Two hosts through ``fit``: each holding half the validation records (``sharded_validation``) stops and selects
    as when both hold all of them (FullyReplicated), not as the leader's half alone would."""
    from pipeline.linear_learner.hyperparameters import parse_hyperparameters
    from pipeline.linear_learner.trainer import Dataset, fit

    rng = np.random.default_rng(4)
    features = rng.standard_normal((400, 5)).astype(np.float32)
    labels = (features @ np.arange(1, 6) + 2.0 * rng.standard_normal(400)).astype(np.float32)
    shards = [Dataset(features[:140], labels[:140]), Dataset(features[140:280], labels[140:280])]
    halves = [Dataset(features[280:340], labels[280:340]), Dataset(features[340:], labels[340:])]
    whole = Dataset(features[280:], labels[280:])
    hp = parse_hyperparameters({"predictor_type": "regressor", "epochs": "6", "num_models": "8"})

    def train(validations: list[Dataset], sharded: bool, folder: Path) -> object:
        folder.mkdir()
        results: dict[int, object] = {}

        def host(rank: int) -> None:
            collective = SharedMemoryCollective(folder, rank, 2, ["algo-1", "algo-2"], timeout=30)
            try:
                results[rank] = fit(
                    hp, shards[rank], validations[rank], collective, lambda line: None, f"algo-{rank + 1}", sharded
                )
            finally:
                collective.close()

        threads = [threading.Thread(target=host, args=(rank,)) for rank in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return results[0]

    replicated = train([whole, whole], False, tmp_path / "replicated")
    sharded = train(halves, True, tmp_path / "sharded")
    assert sharded.epochs == replicated.epochs
    np.testing.assert_allclose(sharded.model.weights, replicated.model.weights, rtol=1e-6)
    np.testing.assert_allclose(sharded.model.bias, replicated.model.bias, rtol=1e-6)
