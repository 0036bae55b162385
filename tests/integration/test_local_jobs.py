"""Local jobs keep SageMaker's container contracts: real subprocesses run a real code bundle from the local S3 folder,
each instance sees its ShardedByS3Key share, its resourceconfig.json and remapped /opt/ml paths; outputs appear in S3
only when every instance succeeded; unsupported images and empty inputs are errors naming them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.processing_jobs import processing_definition, run

from pipeline.local.s3 import LocalS3

SCRIPT = """
import argparse, json, os, pathlib, sys
parser = argparse.ArgumentParser()
parser.add_argument("--data-dir")
parser.add_argument("--output-dir")
parser.add_argument("--resource-config")
parser.add_argument("--fail-on")
args = parser.parse_args()
host = json.loads(pathlib.Path(args.resource_config).read_text())
print("hello from", host["current_host"], flush=True)
if host["current_host"] == args.fail_on:
    raise SystemExit("ValueError: boom on " + host["current_host"] + " reading " + args.data_dir)
seen = sorted(p.relative_to(args.data_dir).as_posix() for p in pathlib.Path(args.data_dir).rglob("*") if p.is_file())
out = pathlib.Path(args.output_dir) / (host["current_host"] + ".json")
out.write_text(json.dumps({"host": host, "seen": seen, "env": os.environ.get("GREETING"), "argv": sys.argv}))
"""


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    s3 = LocalS3(tmp_path / "s3")
    s3.put_bytes("s3://bkt/code/job.py", SCRIPT.encode())
    for name in ("a.csv", "b.csv", "c.csv", "d.csv", "nested/e.csv"):
        s3.put_bytes(f"s3://bkt/data/{name}", b"x\n")
    return tmp_path


def test_processing_instances_get_their_share_host_config_and_remapped_paths(workdir: Path) -> None:
    record, s3 = run(workdir, processing_definition())
    assert record.status == "Succeeded", record.failure_reason
    outputs = {Path(uri).name: json.loads(s3.path(uri).read_text()) for uri in s3.list_objects("s3://bkt/out/")}
    assert sorted(outputs) == ["algo-1.json", "algo-2.json", "algo-3.json"]
    # sorted keys a, b, c, d, nested/e dealt round-robin over 3 hosts; sub-folders kept below the local path
    assert outputs["algo-1.json"]["seen"] == ["a.csv", "d.csv"]
    assert outputs["algo-2.json"]["seen"] == ["b.csv", "nested/e.csv"]
    assert outputs["algo-3.json"]["seen"] == ["c.csv"]
    assert outputs["algo-2.json"]["host"] == {"current_host": "algo-2", "hosts": ["algo-1", "algo-2", "algo-3"]}
    assert outputs["algo-1.json"]["env"] == "hi"
    argv = outputs["algo-3.json"]["argv"]
    sandbox = record.folder / "steps" / "Job" / "sandbox" / "algo-3" / "opt" / "ml"
    assert argv[0] == str(sandbox / "processing/input/code/job.py")
    assert argv[2] == str(sandbox / "processing/input/data")
    assert argv[3] == f"--output-dir={sandbox / 'processing/output'}"
    assert all(uri.startswith(f"s3://bkt/out/{record.id}/") for uri in s3.list_objects("s3://bkt/out/"))
    logs = [Path(log) for log in record.steps["Job"].logs]
    assert [log.name for log in logs] == ["algo-1.log", "algo-2.log", "algo-3.log"]
    assert logs[1].read_text().strip() == "hello from algo-2"
    assert not sandbox.exists()  # the sandbox goes once outputs are uploaded


def test_a_failing_instance_fails_the_job_with_its_error_and_uploads_nothing(workdir: Path) -> None:
    record, s3 = run(workdir, processing_definition(fail_on="algo-2"))
    assert record.status == "Failed"
    assert record.steps["Job"].failure_reason == (
        "algo-2 exited with code 1: ValueError: boom on algo-2 reading /opt/ml/processing/input/data"
    )
    assert s3.list_objects("s3://bkt/out/") == []
    assert "boom on algo-2" in (record.folder / "steps" / "Job" / "logs" / "algo-2.log").read_text()


SAYS = """
import argparse, json, pathlib, time
parser = argparse.ArgumentParser()
parser.add_argument("--data-dir")
parser.add_argument("--resource-config")
parser.add_argument("--exit-message-file")
parser.add_argument("--say", type=json.loads)  # host -> [message as hex, {data} its data dir; exit code; after]
args = parser.parse_args()
host = json.loads(pathlib.Path(args.resource_config).read_text())["current_host"]
root = pathlib.Path(args.exit_message_file).parents[3]  # <sandbox>/<host>: /opt/ml/output/message is in it
said = lambda host: bytes.fromhex(args.say[host][0]).replace(  # as `host` writes it, naming its own data dir
    b"{data}", str(root.parent / host / pathlib.Path(args.data_dir).relative_to(root)).encode()
)
message, code, after = args.say.get(host, ["", 0, ""])
if message:
    pathlib.Path(args.exit_message_file).write_bytes(said(host))
if after:  # end only once host `after` has written its whole message
    other = root.parent / after / pathlib.Path(args.exit_message_file).relative_to(root)
    deadline = time.monotonic() + 60  # a guard against a hang only
    while not (other.is_file() and other.read_bytes() == said(after)):
        if time.monotonic() > deadline:
            raise SystemExit(f"{after} wrote no message in 60 s")
        time.sleep(0.01)
raise SystemExit(code)
"""


def saying(workdir: Path, say: dict[str, tuple[bytes, int, str]]) -> dict[str, Any]:
    """Two instances of SAYS: each writes its bytes (if any) to /opt/ml/output/message and exits with its code,
    once the host it names (if any) has written its message."""
    LocalS3(workdir / "s3").put_bytes("s3://bkt/code/says.py", SAYS.encode())
    definition = processing_definition(instances=2)
    app = definition["Steps"][0]["Arguments"]["AppSpecification"]
    app["ContainerEntrypoint"] = ["python3", "/opt/ml/processing/input/code/says.py"]
    app["ContainerArguments"] = [
        "--data-dir=/opt/ml/processing/input/data",
        "--resource-config=/opt/ml/config/resourceconfig.json",
        "--exit-message-file=/opt/ml/output/message",
        "--say",
        json.dumps({host: [text.hex(), code, after] for host, (text, code, after) in say.items()}),
    ]
    return definition


def test_the_instances_exit_messages_make_the_job_s_exit_message_and_failure_reason(workdir: Path) -> None:
    """As SageMaker: each instance's /opt/ml/output/message, concatenated in host order, is the ExitMessage; paths
    are named as the container saw them. algo-2 fails only once algo-1 has written its message (a failure ends the
    other instances: algo-1 could be ended before writing it)."""
    say = {"algo-1": (b"algo-1: cannot read {data}\n", 0, ""), "algo-2": (b"algo-2: no rows in {data}\n", 3, "algo-1")}
    record, s3 = run(workdir, saying(workdir, say))
    step = record.steps["Job"]
    assert step.properties["ExitMessage"] == (
        "algo-1: cannot read /opt/ml/processing/input/data\nalgo-2: no rows in /opt/ml/processing/input/data\n"
    )
    assert step.properties["ProcessingJobStatus"] == "Failed"
    assert step.properties["ProcessingJobName"] == f"pipelines-{record.id}-Job"
    assert step.failure_reason == (
        "algo-2 exited with code 3; ExitMessage: algo-1: cannot read /opt/ml/processing/input/data | "
        "algo-2: no rows in /opt/ml/processing/input/data"
    )
    assert s3.list_objects("s3://bkt/out/") == []


def test_the_exit_message_keeps_its_first_kilobyte_and_fails_the_job_unless_utf_8(workdir: Path) -> None:
    """Concatenated, then cut to 1024 bytes on a character boundary (a job that succeeds keeps its message too); a
    message that is not UTF-8 fails the job, as SageMaker's ClientError does."""
    say = {"algo-1": ("é" * 350).encode(), "algo-2": ("x" + "é" * 350).encode()}  # 700 + 701 bytes
    record, _ = run(workdir, saying(workdir, {host: (text, 0, "") for host, text in say.items()}))
    assert record.status == "Succeeded", record.failure_reason
    message = record.steps["Job"].properties["ExitMessage"]
    assert message == "é" * 350 + "x" + "é" * 161 and len(message.encode()) == 1023  # byte 1024 was half an é
    record, _ = run(workdir, saying(workdir, {"algo-2": (b"bad \xff byte", 0, "")}))
    assert record.status == "Failed"
    assert record.steps["Job"].failure_reason == (
        "ClientError: algo-2's /opt/ml/output/message is not UTF-8 "
        "('utf-8' codec can't decode byte 0xff in position 4: invalid start byte)"
    )


def test_more_instances_than_objects_leave_an_instance_without_data(workdir: Path) -> None:
    record, s3 = run(workdir, processing_definition(instances=6))
    assert record.status == "Succeeded", record.failure_reason
    seen = json.loads(s3.path(s3.list_objects("s3://bkt/out/")[-1]).read_text())
    assert seen["host"]["current_host"] == "algo-6" and seen["seen"] == []


def test_non_python_entrypoints_and_empty_inputs_are_errors_naming_them(workdir: Path) -> None:
    record, _ = run(workdir, processing_definition(entrypoint="/bin/bash"))
    assert "runs Python entrypoints only" in record.steps["Job"].failure_reason
    assert "/bin/bash" in record.steps["Job"].failure_reason
    definition = processing_definition()
    definition["Steps"][0]["Arguments"]["ProcessingInputs"][0]["S3Input"]["S3Uri"] = "s3://bkt/nothing-here/"
    record, _ = run(workdir, definition)
    assert record.steps["Job"].failure_reason == "input data: no S3 objects found under s3://bkt/nothing-here/"


def test_training_with_another_image_is_an_error_naming_it(workdir: Path) -> None:
    definition = {
        "Version": "2020-12-01",
        "Parameters": [],
        "Steps": [
            {
                "Name": "Train",
                "Type": "Training",
                "Arguments": {
                    "AlgorithmSpecification": {"TrainingImage": "123.dkr.ecr.us-east-1.amazonaws.com/xgboost:1"},
                    "ResourceConfig": {"InstanceCount": 1},
                    "InputDataConfig": [],
                    "OutputDataConfig": {"S3OutputPath": "s3://bkt/model"},
                },
            }
        ],
    }
    record, _ = run(workdir, definition)
    assert record.status == "Failed"
    assert (
        "'123.dkr.ecr.us-east-1.amazonaws.com/xgboost:1' is not Linear Learner" in record.steps["Train"].failure_reason
    )


def test_create_model_needs_an_existing_artifact(workdir: Path) -> None:
    definition = {
        "Version": "2020-12-01",
        "Parameters": [],
        "Steps": [
            {
                "Name": "CreateModel",
                "Type": "Model",
                "Arguments": {
                    "ModelName": "m",
                    "PrimaryContainer": {"Image": "linear-learner:1", "ModelDataUrl": "s3://bkt/missing/model.tar.gz"},
                },
            }
        ],
    }
    record, _ = run(workdir, definition)
    assert record.steps["CreateModel"].failure_reason == (
        "ModelDataUrl s3://bkt/missing/model.tar.gz does not exist in the local S3 folder"
    )


def test_executions_and_execution_show_read_the_records(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pipeline import cli

    succeeded, _ = run(workdir, processing_definition())
    failed, _ = run(workdir, processing_definition(fail_on="algo-1"))
    assert cli.main(["executions", "--workdir", str(workdir), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(row["id"], row["status"]) for row in listed] == [(failed.id, "Failed"), (succeeded.id, "Succeeded")]
    assert listed[0]["failure_reason"] == (
        "step Job failed: algo-1 exited with code 1: ValueError: boom on algo-1 reading /opt/ml/processing/input/data"
    )
    assert cli.main(["executions", "--workdir", str(workdir), "--max-results", "1"]) == 0
    table = capsys.readouterr().out
    assert failed.id in table and succeeded.id not in table

    assert cli.main(["execution", "show", failed.id, "--workdir", str(workdir), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["status"] == "Failed" and shown["parameters"] == {"Instances": 3}
    [step] = shown["steps"]
    assert step["status"] == "Failed" and len(step["logs"]) == 3 and step["start_time"] and step["end_time"]
    assert cli.main(["execution", "show", failed.id, "--workdir", str(workdir), "--logs"]) == 0
    assert "boom on algo-1" in capsys.readouterr().out
    assert cli.main(["execution", "show", "nope", "--workdir", str(workdir)]) == 2
    assert "no execution 'nope'" in capsys.readouterr().err


def test_live_table_and_summary_render_what_the_run_knows(workdir: Path) -> None:
    from rich.console import Console

    from pipeline.cli.render.progress import step_table
    from pipeline.cli.render.summary import print_summary

    record, _ = run(workdir, processing_definition(fail_on="algo-3"))
    console = Console(record=True, width=200)
    console.print(step_table(record, "Execution"))
    table = console.export_text()
    assert "Job" in table and "Processing" in table and "Failed" in table
    assert "algo-3 exited with code 1: ValueError: boom on algo-3" in table
    summary = {
        "execution_id": record.id,
        "status": "Succeeded",
        "cache_hits": {"Preprocess": "20261201-000000-aaaa", "Train": "20261201-000000-aaaa"},
        "metrics": {"auc": 0.97, "accuracy": 0.9, "accuracy_best_constant_classifier": 0.6},
        "gate": {"metric": "auc", "value": 0.97, "threshold": 0.6, "passed": True},
        "model_package": {"group": "g", "version": 3, "arn": "arn:x", "approval_status": "PendingManualApproval"},
        "failure_reason": None,
        "paths": {"execution": "/e", "model": "/m.tar.gz", "report": "/r.json", "plots": ["/p.png"]},
    }
    print_summary(summary, console)
    text = console.export_text()
    assert f"Execution {record.id}: Succeeded" in text
    assert "Cache hits: Preprocess, Train reused from execution 20261201-000000-aaaa" in text
    assert "Quality gate: auc = 0.9700 vs threshold 0.6000: passed" in text
    assert "Registered: g version 3 (PendingManualApproval)" in text
    assert "accuracy" in text and "0.6000" in text  # the baseline column
    assert "Model: /m.tar.gz" in text and "Plots: /p.png" in text
