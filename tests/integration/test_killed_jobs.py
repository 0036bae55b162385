"""A job instance ended by a signal llpipe did not send says so: a SIGKILL from outside (the kernel's out-of-memory
killer, when this machine runs out before the instance type's memory is reached) is named as most likely out of
memory, with what the instance's processes last held, the machine's and the instance type's memory and the parameter
to change; never "exited with code -9: no output"."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from support.processing_jobs import processing_definition, run

from pipeline.local.s3 import LocalS3

SCRIPT = """
import argparse, os, signal, time
parser = argparse.ArgumentParser()
for name in ("--data-dir", "--output-dir", "--resource-config", "--fail-on"):
    parser.add_argument(name)
args = parser.parse_args()
held = bytearray({megabytes} * 1024 * 1024)  # resident: measured by the local limits' watch
for index in range(0, len(held), 4096):
    held[index] = 1
time.sleep(1.0)
os.kill(os.getpid(), signal.{signal})
time.sleep(30)
"""


def _killed(tmp_path: Path, megabytes: int, name: str, instance_type: object) -> str:
    s3 = LocalS3(tmp_path / "s3")
    s3.put_bytes("s3://bkt/code/job.py", SCRIPT.format(megabytes=megabytes, signal=name).encode())
    s3.put_bytes("s3://bkt/data/a.csv", b"x\n")
    definition = processing_definition(instances=1)
    definition["Parameters"].append({"Name": "EvaluationInstanceType", "Type": "String", "DefaultValue": "ml.m5.large"})
    cluster = definition["Steps"][0]["Arguments"]["ProcessingResources"]["ClusterConfig"]
    cluster["InstanceType"] = instance_type
    record, _ = run(tmp_path, definition)
    assert record.status == "Failed"
    return record.steps["Job"].failure_reason


@pytest.mark.parametrize(
    ("megabytes", "instance_type", "named"),
    [
        (120, {"Get": "Parameters.EvaluationInstanceType"}, "EvaluationInstanceType"),
        (60, "ml.m5.large", "instance type than ml.m5.large"),
    ],
)
def test_an_instance_killed_from_outside_is_named_as_out_of_memory(
    tmp_path: Path, megabytes: int, instance_type: object, named: str
) -> None:
    reason = _killed(tmp_path, megabytes, "SIGKILL", instance_type)
    assert reason.startswith("Job: algo-1 was killed (SIGKILL, not sent by llpipe): most likely out of memory")
    assert "code -9" not in reason and "no output" not in reason
    held = int(re.search(r"its processes held ([\d,]+) MB", reason).group(1).replace(",", ""))
    assert megabytes <= held < megabytes + 200, reason
    assert re.search(r"this machine has [\d,]+ MB", reason)
    assert re.search(r"the ml\.m5\.large's limit here is [\d,]+ MB", reason)
    assert f"use a larger {named}, less data per instance" in reason


def test_another_signal_is_named_as_sent_from_outside(tmp_path: Path) -> None:
    reason = _killed(tmp_path, 1, "SIGTERM", "ml.m5.large")
    assert reason == "Job: algo-1 was ended by SIGTERM (signal 15), sent from outside llpipe"


def _children_running(marker: str) -> list[int]:
    """The processes whose command line holds ``marker`` (the training instances of one work dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in command:
                found.append(int(entry.name))
    return found


def test_a_training_instance_killed_from_outside_is_named_as_out_of_memory(tmp_path: Path) -> None:
    """The local Linear Learner's instance processes: one killed by SIGKILL while it trains (found by its work dir
    on its command line, once it runs) fails the job naming the kill, not "exit code -9"."""
    from containerlib.recordio import write_dense
    from pipeline.linear_learner.launcher import Channel, TrainingError, train

    rng = np.random.default_rng(3)
    features = rng.normal(size=(4000, 20)).astype(np.float32)
    labels = (features[:, 0] > 0).astype(np.float32)
    shard = tmp_path / "train.pbr"
    with shard.open("wb") as stream:
        write_dense(stream, features, labels)
    work = tmp_path / "instances"
    hyperparameters = {"predictor_type": "binary_classifier", "epochs": "500", "num_models": "4"}
    outcome: dict[str, BaseException] = {}

    def training() -> None:
        try:
            train(hyperparameters, {"train": Channel([shard])}, tmp_path / "out", work_dir=work)
        except BaseException as error:  # noqa: BLE001 - the test reads it
            outcome["error"] = error

    thread = threading.Thread(target=training)
    thread.start()
    victims: list[int] = []
    while not victims and thread.is_alive():  # wait for the instance to run, then kill it as the OOM killer would
        victims = [pid for pid in _children_running(str(work)) if pid != os.getpid()]
        time.sleep(0.05)
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    thread.join(300)
    assert isinstance(outcome.get("error"), TrainingError), outcome
    message = str(outcome["error"])
    assert "algo-1 was killed (SIGKILL, not sent by llpipe): most likely out of memory" in message, message
    assert "exit code -9" not in message
