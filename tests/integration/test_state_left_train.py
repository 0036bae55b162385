"""Issue 42, state left: a Train that fails keeps no instance's copy of the data (it kept them for ever, 475 MB on
the try-out's table), only its logs; and the reaper removes such copies that older versions left in a failed
record, as it does for an abandoned one's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pipeline.local.executions import ExecutionStore
from pipeline.local.interpreter import Interpreter
from pipeline.local.jobs import local_runners
from pipeline.local.reaper import reap
from pipeline.local.s3 import LocalS3
from pipeline.local.workdir import Workdir

IMAGE = "382416733822.dkr.ecr.us-east-1.amazonaws.com/linear-learner:1"


def training_definition(instances: int, hyperparameters: dict[str, str]) -> dict[str, Any]:
    return {
        "Version": "2020-12-01",
        "Parameters": [],
        "Steps": [
            {
                "Name": "Train",
                "Type": "Training",
                "Arguments": {
                    "AlgorithmSpecification": {"TrainingImage": IMAGE, "TrainingInputMode": "File"},
                    "ResourceConfig": {"InstanceCount": instances},
                    "HyperParameters": hyperparameters,
                    "InputDataConfig": [
                        {
                            "ChannelName": "train",
                            "ContentType": "text/csv",
                            "DataSource": {
                                "S3DataSource": {
                                    "S3Uri": "s3://bkt/train/",
                                    "S3DataType": "S3Prefix",
                                    "S3DataDistributionType": "ShardedByS3Key",
                                }
                            },
                        }
                    ],
                    "OutputDataConfig": {"S3OutputPath": "s3://bkt/model"},
                },
            }
        ],
    }


def run_training(root: Path, instances: int, hyperparameters: dict[str, str], rows: str) -> Any:
    s3 = LocalS3(root / "s3")
    rng = np.random.default_rng(instances)
    for part in range(2):
        lines = [",".join(f"{value:.4f}" for value in rng.normal(size=4)) for _ in range(50)]
        s3.put_bytes(f"s3://bkt/train/part-{part}.csv", ("\n".join(lines) + "\n" + rows).encode())
    interpreter = Interpreter(
        runners=local_runners(Workdir(root), region="us-east-1", account="111122223333"),
        store=ExecutionStore(root / "executions"),
        read_json=lambda uri: json.loads(s3.path(uri).read_text()),
        pipeline_name="state-test",
    )
    return interpreter.run(training_definition(instances, hyperparameters), {})


BINARY = {"predictor_type": "binary_classifier", "feature_dim": "3", "epochs": "2", "num_models": "2"}


@pytest.mark.parametrize(
    ("instances", "hyperparameters", "rows", "said"),
    [
        # a bad value: every instance refuses it after its data was laid out
        (1, {**BINARY, "mini_batch_size": "0"}, "", "mini_batch_size"),
        # bad data in one shard: one instance fails reading it, the other is aborted
        (2, BINARY, "1,oops,2,3\n", "oops"),
    ],
)
def test_a_failed_train_keeps_its_logs_and_no_copy_of_the_data(
    tmp_path: Path, instances: int, hyperparameters: dict[str, str], rows: str, said: str
) -> None:
    record = run_training(tmp_path, instances, hyperparameters, rows)
    step = record.steps["Train"]
    assert record.status == "Failed" and step.status == "Failed" and said in step.failure_reason
    folder = record.folder / "steps" / "Train"
    assert not (folder / "instances").exists()  # before: algo-N/input/data/... stayed in the record for ever
    assert not (folder / "output").exists()
    logs = sorted(path.name for path in (folder / "logs").iterdir())
    assert [f"algo-{index + 1}.log" for index in range(instances)] == [name for name in logs if name != "launcher.log"]
    assert any(said in (folder / "logs" / name).read_text() for name in logs)


def test_the_reaper_removes_the_instances_data_a_finished_record_kept(tmp_path: Path) -> None:
    record = run_training(tmp_path, 1, {**BINARY, "mini_batch_size": "0"}, "")
    folder = record.folder / "steps" / "Train"
    left = folder / "instances" / "algo-1" / "input" / "data" / "train"
    left.mkdir(parents=True)  # what a failed Train left before this fix
    (left / "000000-part-0.csv").write_text("1,2,3,4\n")
    (folder / "sandbox" / "algo-1").mkdir(parents=True)
    assert reap(Workdir(tmp_path)) == []  # nothing abandoned: the record is not touched, only its scratch space
    assert not (folder / "instances").exists() and not (folder / "sandbox").exists()
    assert (folder / "logs" / "algo-1.log").is_file()
    assert ExecutionStore(tmp_path / "executions").load(record.id).status == "Failed"
