"""Faults and bad input found by a hostile try-out (issue 11), each run through the real CLI or the real local backend.

Every test here failed before its fix (its docstring says how); they use real files, real subprocesses and real
signals. Runs are kept short with tiny data and few epochs.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support import drift_table
from support.finished_run import FinishedRun
from support.settings import FAST, fast_params

from pipeline import cli
from pipeline.core.errors import TrainingError
from pipeline.core.files import atomic_path
from pipeline.linear_learner import launcher
from pipeline.local.data import DataSource, stage_data, user_data
from pipeline.local.executions import ExecutionStore
from pipeline.local.registry import LocalRegistry
from pipeline.local.s3 import LocalS3

FAST_ARGS = fast_params(Epochs=2)  # these runs fail or stop: their models do not matter
REPOSITORY = Path(__file__).resolve().parents[2]
LLPIPE = [sys.executable, "-m", "pipeline"]  # a real llpipe process; the definition cache spares it the build


def binary_csv(path: Path, rows: int = 200, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(rows, 3))
    frame = pd.DataFrame(features, columns=["a", "b", "c"])
    frame["label"] = (features[:, 0] > 0).astype(int)
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return path


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(argv)
    return code, capsys.readouterr().err


# ------------------------------------------------------------------------------------------ the data option


def test_data_folder_holding_the_work_dir_never_reads_the_staged_copies(tmp_path: Path) -> None:
    """Before: `llpipe run --data .` with the work dir inside `.` staged its own earlier copies (rows 300, 600...)."""
    binary_csv(tmp_path / "data.csv")
    staged = tmp_path / "work" / "s3" / "bucket" / "input" / "data-123" / "data.csv"
    binary_csv(staged)  # what an earlier run left in the work dir
    source = user_data(tmp_path, "label", "binary_classifier", tmp_path / "work")
    assert source.files == [tmp_path / "data.csv"]
    with pytest.raises(Exception, match="inside the work dir"):
        user_data(staged.parent, "label", "binary_classifier", tmp_path / "work")


def test_staging_copies_so_later_edits_do_not_rewrite_an_earlier_execution_s_data(tmp_path: Path) -> None:
    """Before: staging hard-linked the user's file, so appending to it changed what an earlier execution read."""
    data = binary_csv(tmp_path / "data" / "data.csv")
    original = data.read_bytes()
    s3 = LocalS3(tmp_path / "s3")
    uri = stage_data(s3, DataSource("data", [data], data.parent, {}), "s3://bucket/p", "v1").uri
    with data.open("a") as handle:
        handle.write("9,9,9,1\n")
    assert s3.path(uri + "data.csv").read_bytes() == original


NON_NUMERIC = (
    "row 301: column 'b' has non-numeric value 'oops'; declare text columns as categorical (feature-hashed) with "
    "--categorical-columns (pipeline parameter CategoricalColumns), adding b to the columns already declared"
)


def unwrapped(text: str) -> str:
    """Text without its white space: rich wraps the summary's lines, a long path even inside a word."""
    return "".join(text.split())


def test_a_bad_value_is_named_by_the_path_the_user_gave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: Preprocess failed naming /opt/ml/processing/input/data/bad.csv row 301, the file's path inside the
    job's container, in the step table, the summary and `llpipe execution show`; the user gave bad.csv.

    The reason is the job's ExitMessage, as SageMaker would record it from the instance's /opt/ml/output/message: the
    step's properties keep it verbatim (naming the object the job read), the failure reason shows it."""
    monkeypatch.chdir(tmp_path)
    bad = binary_csv(tmp_path / "bad.csv", rows=300)
    with bad.open("a") as handle:
        handle.write("0.1,oops,0.3,1\n")
    folder = tmp_path / "parts"
    binary_csv(folder / "a.csv")
    (folder / "sub").mkdir()
    shutil.copyfile(bad, folder / "sub" / "bad.csv")  # the second object: algo-2's
    runs = [
        ("bad.csv", "algo-1", "bad.csv", "bad.csv"),
        (str(folder), "algo-2", f"{folder}/sub/bad.csv", "sub/bad.csv"),
    ]
    for data, host, named, key in runs:  # as passed: relative, or a folder's absolute path and the file below it
        argv = ["run", "--workdir", "w", "--data", data, "--label-column", "label", "--no-infer"]
        code = cli.main(argv + ["--predictor-type", "binary_classifier"])
        said = f"{host}: preprocess: error: {named} {NON_NUMERIC}"
        expected = f"step Preprocess failed: {host} exited with code 1; ExitMessage: {said}"
        assert code == 1 and unwrapped(f"Failure: {expected}") in unwrapped(capsys.readouterr().out)
        [record, *_] = ExecutionStore(tmp_path / "w" / "executions").list()
        assert record.failure_reason == expected
        assert record.steps["Preprocess"].failure_reason == expected.removeprefix("step Preprocess failed: ")
        assert cli.main(["execution", "show", record.id, "--workdir", "w"]) == 0
        assert unwrapped(f"Failure: {expected}") in unwrapped(capsys.readouterr().out)
        log = (record.folder / "steps" / "Preprocess" / "logs" / f"{host}.log").read_text()
        staged = record.parameters["InputDataUrl"] + key  # the job itself names the object it read, as on SageMaker
        assert staged.startswith("s3://") and f"preprocess: error: {staged} {NON_NUMERIC}\n" in log
        assert cli.main(["execution", "show", record.id, "--workdir", "w", "--json"]) == 0
        [shown] = [step for step in json.loads(capsys.readouterr().out)["steps"] if step["name"] == "Preprocess"]
        assert shown["properties"]["ExitMessage"] == f"{host}: preprocess: error: {staged} {NON_NUMERIC}\n"
        assert shown["properties"]["ProcessingJobStatus"] == "Failed"


def test_staged_objects_are_named_back_by_the_user_s_paths(tmp_path: Path) -> None:
    data = tmp_path / "data"
    files = [binary_csv(data / "a.csv"), data / "a.csv.gz", binary_csv(data / "sub" / "b.csv")]
    files[1].write_bytes(gzip.compress(files[0].read_bytes()))
    staged = stage_data(LocalS3(tmp_path / "s3"), DataSource("data", files, data, {}), "s3://bucket/p", "v1")
    assert staged.uri == "s3://bucket/p/input/data-v1/"
    text = f"{staged.uri}a.csv.gz row 2; {staged.uri}a.csv row 3; {staged.uri}sub/b.csv: unreadable; {staged.uri}"
    assert staged.user_paths(text) == f"{files[1]} row 2; {files[0]} row 3; {files[2]}: unreadable; {staged.uri}"


# ------------------------------------------------------------------------------------- checks before anything runs


@pytest.mark.parametrize(
    ("params", "named"),
    [
        (["Epochs=0"], "Epochs"),
        (["MiniBatchSize=0"], "MiniBatchSize"),
        (["LearningRate=-1"], "LearningRate"),
        (["Loss=softmax_loss"], "Loss"),
        (["Wd=lots"], "Wd"),
        (["MetricThreshold=nan"], "MetricThreshold"),
        (["MetricThreshold=1.5"], "MetricThreshold"),
        (["MetricThreshold=-0.1"], "MetricThreshold"),
        (["LabelValues=a,b,c"], "LabelValues"),
        (["ProcessingInstanceCount=2"], "ProcessingInstanceCount"),
        (["TrainingInstanceCount=500"], "TrainingInstanceCount"),
    ],
)
def test_inconsistent_parameters_are_usage_errors_before_preprocess_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], params: list[str], named: str
) -> None:
    """Before: each of these started Preprocess and failed minutes later in Train or the gate (or, for a threshold
    out of range, ran to a gate that could never pass); now exit 2 naming the parameter, nothing created."""
    data = binary_csv(tmp_path / "data.csv")
    argv = ["run", "--workdir", str(tmp_path / "w"), "--data", str(data), "--label-column", "label"]
    argv += ["--predictor-type", "binary_classifier", "--quiet"]
    code, err = run_cli(argv + [item for p in params for item in ("--param", p)], capsys)
    assert code == 2, err
    assert named in err and "Traceback" not in err
    assert not (tmp_path / "w" / "executions").exists()


def test_num_classes_must_match_label_values_and_thresholds_fit_the_gate_metric(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: NumClasses=3 with four LabelValues, or a regressor's MetricThreshold=2 (r2 <= 1), ran and failed late."""
    data = tmp_path / "iris.csv"
    pd.DataFrame({"x": np.arange(40.0), "y": ["a", "b", "c", "d"] * 10}).to_csv(data, index=False)
    base = ["run", "--workdir", str(tmp_path / "w"), "--data", str(data), "--label-column", "y", "--quiet"]
    code, err = run_cli(
        base
        + ["--predictor-type", "multiclass_classifier", "--param", "LabelValues=a,b,c,d", "--param", "NumClasses=3"],
        capsys,
    )
    assert code == 2 and "NumClasses=3" in err and "4 classes" in err
    code, err = run_cli(base + ["--predictor-type", "regressor", "--param", "MetricThreshold=2"], capsys)
    assert code == 2 and "r2 is at most 1" in err


def test_a_split_that_would_be_empty_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: 5 rows with 15 % validation gave an empty validation split that failed inside the jobs."""
    data = binary_csv(tmp_path / "tiny.csv", rows=5)
    argv = ["run", "--workdir", str(tmp_path / "w"), "--data", str(data), "--label-column", "label"]
    code, err = run_cli(argv + ["--predictor-type", "binary_classifier", "--quiet"], capsys)
    assert code == 2 and "ValidationFraction" in err and "5 data rows" in err


def test_a_header_only_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a CSV with a header and no rows was refused as '--data has a header but no data rows', naming no
    file (with a folder of files, which one?)."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "header.csv").write_text("a,b,c,label\n")
    argv = ["run", "--workdir", str(tmp_path / "w"), "--data", str(tmp_path / "data"), "--label-column", "label"]
    code, err = run_cli(argv + ["--predictor-type", "binary_classifier", "--quiet"], capsys)
    assert code == 2 and f"{tmp_path / 'data' / 'header.csv'}: a header but no data rows" in err


def test_bad_bytes_extra_fields_and_truncated_gzip_name_the_file_and_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a non-UTF-8 byte or a truncated .csv.gz failed inside Preprocess naming a sandbox path and a chunk,
    and a trailing comma on every row was read silently as an index column (the features shifted by one)."""
    base = ["run", "--workdir", str(tmp_path / "w"), "--label-column", "label"]
    base += ["--predictor-type", "binary_classifier", "--quiet", "--data"]
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"a,b,c,label\n1,2,3,0\n4,5,6,1\ncaf\xe9,5,6,1\n" + b"1,2,3,0\n" * 40)
    code, err = run_cli(base + [str(latin)], capsys)
    assert code == 2 and str(latin) in err and "data row 3" in err and "UTF-8" in err
    trailing = tmp_path / "trailing.csv"
    trailing.write_text("a,b,c,label\n" + "".join(f"{i},2,3,{i % 2},\n" for i in range(60)))
    code, err = run_cli(base + [str(trailing)], capsys)
    assert code == 2 and str(trailing) in err and "data row 1" in err and "5 fields" in err
    truncated = tmp_path / "cut.csv.gz"
    whole = gzip.compress(binary_csv(tmp_path / "src" / "x.csv").read_bytes())
    truncated.write_bytes(whole[: len(whole) // 2])
    code, err = run_cli(base + [str(truncated)], capsys)
    assert code == 2 and str(truncated) in err and "truncated" in err
    assert not (tmp_path / "w" / "executions").exists()


# ---------------------------------------------------------------------------------------- a damaged work dir


def test_damaged_records_and_registry_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a corrupt execution.json or registry.db ended in a JSONDecodeError / sqlite3.DatabaseError traceback."""
    record = tmp_path / "executions" / "abc123" / "execution.json"
    record.parent.mkdir(parents=True)
    record.write_text('{"id": "abc123", "status": "Exec')
    code, err = run_cli(["execution", "show", "abc123", "--workdir", str(tmp_path)], capsys)
    assert code == 1 and str(record) in err and "not a readable execution record" in err
    (tmp_path / "registry.db").write_bytes(b"this is not SQLite" * 100)
    code, err = run_cli(["models", "list", "--workdir", str(tmp_path)], capsys)
    assert code == 1 and "registry.db" in err and "move it aside" in err and "Traceback" not in err
    with pytest.raises(Exception, match="cannot be used"):
        LocalRegistry(tmp_path / "registry.db").list_packages()


def test_a_damaged_registry_fails_the_run_before_training(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `llpipe run` with a damaged registry.db (or a folder in its place) preprocessed, trained, evaluated
    and only then failed at the Register step; now it fails before anything runs, naming the file."""
    data = binary_csv(tmp_path / "data.csv")
    argv = ["run", "--data", str(data), "--label-column", "label", "--predictor-type", "binary_classifier", "--quiet"]
    for name, damage in (("bytes", lambda path: path.write_bytes(b"not SQLite" * 300)), ("folder", Path.mkdir)):
        work = tmp_path / name
        work.mkdir()
        damage(work / "registry.db")
        code, err = run_cli([*argv, "--workdir", str(work), *FAST_ARGS], capsys)
        assert code == 1 and f"{work / 'registry.db'}: the model registry cannot be used" in err, err
        assert "before the run" in err and not (work / "executions").exists()


def test_a_work_dir_that_cannot_be_created_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a work dir under a regular file ended in a NotADirectoryError traceback; then, after the definition
    was built, in a generic `<path>/example-data: Not a directory` (exit 1). Now a usage error before anything
    runs, naming the file in the way."""
    (tmp_path / "file").write_text("x")
    code, err = run_cli(["run", "--workdir", str(tmp_path / "file" / "w"), "--quiet", *FAST_ARGS], capsys)
    assert code == 2 and f"{tmp_path / 'file'} is a file, not a folder" in err and "--workdir" in err


def _read_only_mount_works() -> bool:
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    probe = subprocess.run([unshare, "--user", "--map-root-user", "--mount", "true"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _read_only_mount_works(), reason="needs unprivileged user and mount namespaces (unshare)")
def test_a_read_only_work_dir(tmp_path: Path) -> None:
    """A work dir on a read-only file system (a read-only bind mount in a user namespace: root ignores chmod).
    Before: `llpipe run` built the definition, then failed writing the example data with a generic OSError hint
    (exit 1), and `llpipe models list` with no registry yet said 'unable to open database file'. Now `run` is a
    usage error naming --workdir before anything runs, and the reading commands work or say there is nothing."""
    folder = tmp_path / "ro"
    kept = ExecutionStore(folder / "w" / "executions").create("p", {"Steps": []}, {})
    script = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" && exec "$@"'

    def read_only(*argv: str) -> subprocess.CompletedProcess:
        command = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, str(folder)]
        return subprocess.run([*command, sys.executable, "-m", "pipeline", *argv], capture_output=True, text=True)

    for workdir in (folder / "w", folder / "new"):
        result = read_only("run", "--workdir", str(workdir), "--quiet", *FAST_ARGS)
        assert result.returncode == 2, result.stderr
        assert f"--workdir {workdir}: cannot be created or written (Read-only file system)" in result.stderr
        assert "Traceback" not in result.stderr
    listed = read_only("executions", "--workdir", str(folder / "w"), "--json")
    assert listed.returncode == 0 and [row["id"] for row in json.loads(listed.stdout)] == [kept.id], listed.stderr
    models = read_only("models", "list", "--workdir", str(folder / "w"))
    assert "Traceback" not in models.stderr and "unable to open" not in models.stderr, models.stderr
    assert list(folder.iterdir()) == [folder / "w"]


# ----------------------------------------------------------------------------------------------- concurrency


def test_temporary_names_differ_even_for_writers_with_the_same_pid(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Before: the temporary name was pid + thread id, equal for two containers (pid namespaces) sharing a work dir."""
    monkeypatch.setattr(os, "getpid", lambda: 1)
    monkeypatch.setattr(threading, "get_ident", lambda: 7)
    names = []
    for _ in range(2):
        with atomic_path(tmp_path / "x.json") as temporary:
            temporary.write_text("{}")
            names.append(temporary.name)
    assert names[0] != names[1]


# ------------------------------------------------------------------------------------------------- the cache


def test_a_cached_step_whose_outputs_were_deleted_runs_again(finished_run: FinishedRun, tmp_path: Path) -> None:
    """Before: the cache hit was taken and Train failed with 'no S3 objects found' under the deleted prefix.

    The shared finished run's copy is the first run (its Preprocess the cache entry); the same run again, with the
    entry's train shards deleted, must run Preprocess instead of taking the hit."""
    from pipeline.api import run_local

    workdir = finished_run.copy_to(tmp_path / "w")
    train = next((workdir / "s3").rglob("preprocess/train"))
    shards = [shard for shard in train.rglob("*") if shard.is_file()]
    assert shards
    for shard in shards:
        shard.unlink()
    execution = run_local(
        finished_run.frame, drift_table.LABEL, "binary_classifier", workdir=workdir, progress=False, **FAST
    )
    assert execution.status == "Succeeded", execution.failure_reason
    record = ExecutionStore(workdir / "executions").load(execution.id)
    preprocess = record.steps["Preprocess"]
    assert preprocess.cache_hit_source is None and "is gone; re-running" in preprocess.detail
    assert finished_run.execution_id in preprocess.detail


# ------------------------------------------------------------------------------------------------- signals


def _wait_for_step(folder: Path, step: str, process: subprocess.Popen) -> str:
    """Poll the only execution record until ``step`` is executing; its id."""
    while process.poll() is None:
        for path in folder.glob("*/execution.json"):
            try:
                document = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            if any(s["name"] == step and s["status"] == "Executing" for s in document["steps"]):
                return document["id"]
        time.sleep(0.1)
    raise AssertionError(f"the run ended before {step} started: {process.stderr.read() if process.stderr else ''}")


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.parametrize(
    ("sent", "step", "code"),
    [(signal.SIGTERM, "Train", 143), (signal.SIGINT, "Preprocess", 130), (signal.SIGHUP, "Preprocess", 129)],
)
def test_sigterm_and_ctrl_c_stop_the_jobs_and_record_stopped(
    tmp_path: Path, sent: signal.Signals, step: str, code: int
) -> None:
    """Before: SIGTERM killed llpipe at once: the job processes ran on, the sandbox stayed, the record said
    Executing forever; SIGHUP (a closed terminal or SSH session) still does not clean up; SIGINT was lost when the
    test runner had been started in the background (SIGINT inherited ignored: the run exited 0). Now the three
    signals end the jobs' process groups and record Stopped with exit 128 + signal, whatever was inherited: the
    child here starts with SIGINT ignored, as under `make test &`."""
    work = tmp_path / "w"
    argv = [*LLPIPE, "run", "--workdir", str(work), "--quiet"]
    argv += ["--param", "Epochs=400", "--param", "MiniBatchSize=10", "--param", "NumModels=2"]
    process = subprocess.Popen(
        argv,
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        execution_id = _wait_for_step(work / "executions", step, process)
        while len(_processes_mentioning(f"{work / 'executions' / execution_id / 'steps' / step}/")) < 2:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            time.sleep(0.05)  # until both instances of the step run: they are still starting up (imports)
        process.send_signal(sent)
        assert process.wait(timeout=120) == code
    finally:
        if process.poll() is None:
            process.kill()
    assert process.stderr is not None
    with process.stderr:  # read to its end, then closed
        assert signal.Signals(sent).name in process.stderr.read()
    record = ExecutionStore(work / "executions").load(execution_id)
    assert record.status == "Stopped" and record.steps[step].status == "Stopped"
    assert signal.Signals(sent).name in record.failure_reason
    assert not (record.folder / "steps" / step / "sandbox").exists()
    assert not (record.folder / "steps" / step / "instances").exists()
    assert _processes_mentioning(str(work)) == []


def test_a_stopped_training_instance_is_reported_within_the_heartbeat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a SIGSTOPped instance left the others waiting 600 s in silence; now the job fails after the
    configured heartbeat (LLPIPE_TRAINING_HEARTBEAT_SECONDS) naming the stopped instance. The report is algo-1's
    (exit 4, a peer silent): before, it exited as aborted (3) and the launcher waited 30 s more for the stopped one."""

    monkeypatch.setenv(launcher.HEARTBEAT_ENV, "2")
    rng = np.random.default_rng(0)
    features = rng.normal(size=(2000, 4)).astype(np.float32)
    labels = (features[:, 0] > 0).astype(np.float32)
    files = []
    for part in range(2):
        path = tmp_path / "data" / f"part-{part}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savetxt(path, np.column_stack([labels[part::2], features[part::2]]), delimiter=",", fmt="%.6f")
        files.append(path)
    stopped: list[int] = []

    def on_log(line: str) -> None:
        if not stopped and "#quality_metric" in line and "epoch=" in line:  # both instances are connected by now
            [pid] = [p for p in _processes_mentioning(str(tmp_path / "work" / "algo-2")) if p != os.getpid()]
            os.kill(pid, signal.SIGSTOP)
            stopped.append(pid)

    hyperparameters = {
        "predictor_type": "binary_classifier",
        "feature_dim": "4",
        "epochs": "100000",
        "mini_batch_size": "10",
        "num_models": "2",
        "early_stopping_patience": "100000",
    }
    channels = {"train": launcher.Channel(files=files, distribution="ShardedByS3Key", content_type="text/csv")}
    said = rf"algo-1 failed \(exit code {launcher.EXIT_PEER_SILENT}\): AlgorithmError: algo-2 sent no update for 2 s"
    with pytest.raises(TrainingError, match=said):
        launcher.train(
            hyperparameters, channels, tmp_path / "out", instance_count=2, work_dir=tmp_path / "work", on_log=on_log
        )
    assert stopped and _processes_mentioning(str(tmp_path / "work")) == []


def test_a_killed_run_takes_its_job_processes_with_it_and_is_shown_abandoned(tmp_path: Path) -> None:
    """Before: SIGKILL of `llpipe run` (which cannot clean up) left its job processes behind in their own process
    groups: a training instance died only when it next wrote to its closed log pipe, one that was busy or stopped
    (SIGSTOP here, to make it certain) stayed forever, and the record stayed 'Executing' as if still running. Now
    the kernel ends every job process with its parent (PR_SET_PDEATHSIG) and the next command (`llpipe executions`)
    marks the record Stopped as abandoned and removes the instances' folders (their blocks folders with them)."""
    work = tmp_path / "w"
    system_temp = tmp_path / "tmp"  # the run's system temp folder: nothing may be left there either
    system_temp.mkdir()
    argv = [*LLPIPE, "run", "--workdir", str(work), "--quiet"]
    argv += ["--param", "Epochs=400", "--param", "MiniBatchSize=10", "--param", "NumModels=2"]
    env = {**os.environ, "TMPDIR": str(system_temp)}
    process = subprocess.Popen(argv, cwd=tmp_path, stderr=subprocess.PIPE, text=True, start_new_session=True, env=env)
    try:
        execution_id = _wait_for_step(work / "executions", "Train", process)
        train = f"{work / 'executions' / execution_id / 'steps' / 'Train'}/"
        while len(instances := _processes_mentioning(train)) < 2:  # both training instances started
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            time.sleep(0.1)
        for pid in instances:
            os.kill(pid, signal.SIGSTOP)  # an instance that writes nothing more: only its parent's death can end it
        process.kill()
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
        if process.stderr is not None:
            process.stderr.close()  # what a killed run said is not what this test checks
    survivors = _processes_mentioning(str(work))
    for _ in range(600):  # the kernel sends the signal at once; the killed instances take a moment to be reaped
        if not survivors:
            break
        time.sleep(0.05)
        survivors = _processes_mentioning(str(work))
    for pid in survivors:  # leave no orphan behind even when the test fails
        os.kill(pid, signal.SIGKILL)
    assert survivors == []
    listed = subprocess.run(
        [sys.executable, "-m", "pipeline", "executions", "--workdir", str(work), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    [row] = json.loads(listed.stdout)  # the next command finished the record off
    assert row["id"] == execution_id and row["status"] == "Stopped" and row["abandoned"] is False
    assert f"abandoned: llpipe process {process.pid}" in row["failure_reason"]
    record = ExecutionStore(work / "executions").load(execution_id)
    assert record.steps["Train"].status == "Stopped" and not (record.folder / "steps" / "Train" / "instances").exists()
    assert list(work.rglob("*.tmp")) == [] and list(work.rglob("linear-learner-blocks-*")) == []
    assert list(system_temp.iterdir()) == []


def test_an_instance_stopped_before_it_connects_is_reported_within_the_connect_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a training instance SIGSTOPped before it reached the parameter server left the others waiting 600 s
    in silence; now the job fails after LLPIPE_TRAINING_CONNECT_SECONDS naming the instance that never connected."""
    monkeypatch.setenv(launcher.CONNECT_ENV, "2")
    started: list[int] = []
    real_start = launcher.start_process

    def start_then_stop_algo_2(command: list[str], **arguments: object) -> subprocess.Popen:
        process = real_start(command, **arguments)
        if any(part.endswith("algo-2") for part in command):
            os.kill(process.pid, signal.SIGSTOP)  # just after exec: long before it has read its data and connected
            started.append(process.pid)
        return process

    monkeypatch.setattr(launcher, "start_process", start_then_stop_algo_2)
    files = []
    for part in range(2):
        files.append(binary_csv(tmp_path / "data" / f"part-{part}.csv", rows=100, seed=part))
        frame = pd.read_csv(files[-1])
        frame[["label", "a", "b", "c"]].to_csv(files[-1], index=False, header=False)  # label first, no header
    hyperparameters = {"predictor_type": "binary_classifier", "feature_dim": "3", "epochs": "2"}
    channels = {"train": launcher.Channel(files=files, distribution="ShardedByS3Key", content_type="text/csv")}
    with pytest.raises(TrainingError, match=f"algo-2 did not connect .* within 2 s.*{launcher.CONNECT_ENV}"):
        launcher.train(hyperparameters, channels, tmp_path / "out", instance_count=2, work_dir=tmp_path / "work")
    assert started and _processes_mentioning(str(tmp_path / "work")) == []


def test_executions_says_which_damaged_records_it_skips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `llpipe executions` left damaged records out without a word, so an execution silently vanished."""
    store = ExecutionStore(tmp_path / "executions")
    kept = store.create("p", {"Steps": []}, {})
    for name, text in (("cut", '{"id": "cut", "sta'), ("list", "[]"), ("binary", "\udcff")):
        path = tmp_path / "executions" / name / "execution.json"
        path.parent.mkdir(parents=True)
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
    code = cli.main(["executions", "--workdir", str(tmp_path), "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and [row["id"] for row in json.loads(out)] == [kept.id]
    skipped = [line for line in err.splitlines() if line.startswith("llpipe executions: skipped ")]
    assert len(skipped) == 3 and all("not a readable execution record" in line for line in skipped)
    for name in ("cut", "list", "binary"):
        assert any(str(tmp_path / "executions" / name / "execution.json") in line for line in skipped)


def test_two_runs_at_once_in_one_work_dir(tmp_path: Path) -> None:
    """Two real `llpipe run` processes in one work dir (staging, code uploads, records, registry at the same time):
    both succeed with their own execution, no temporary file is left and the registry numbers the versions 1, 2.
    Before (once main cached rendered plots in <workdir>/plots-cache/): the two runs' equal reports were rendered
    into one folder, one run removing it under the other, which failed with FileNotFoundError (seen here once in
    two runs); now each renders privately and renames the result into place."""
    work = tmp_path / "w"
    argv = [*LLPIPE, "run", "--workdir", str(work), "--json", "--no-cache", *FAST_ARGS]
    processes = [
        subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [process.communicate(timeout=600) for process in processes]
    assert [process.returncode for process in processes] == [0, 0], [err for _, err in results]
    summaries = [json.loads(out) for out, _ in results]
    assert summaries[0]["execution_id"] != summaries[1]["execution_id"]
    assert all(summary["status"] == "Succeeded" for summary in summaries)
    packages = LocalRegistry(work / "registry.db").list_packages()
    assert sorted(package.version for package in packages) == [1, 2]
    assert len({package.model_data_url for package in packages}) == 2
    assert list(work.rglob("*.tmp")) == []


def test_a_damaged_recordio_shard_is_named_once_by_the_user_s_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a truncated RecordIO train file failed naming the instance's temporary copy
    (/tmp/linear-learner-*/algo-1/input/data/train/000000-part.rec, gone by the time it is read) twice over, and
    left its linear-learner-blocks-* folder in the system temp folder."""
    from containerlib.recordio import write_dense

    rng = np.random.default_rng(0)
    features = rng.normal(size=(200, 3)).astype(np.float32)
    shard = tmp_path / "train" / "part.rec"
    shard.parent.mkdir()
    with shard.open("wb") as handle:
        write_dense(handle, features, (features[:, 0] > 0).astype(np.float32))
    shard.write_bytes(shard.read_bytes()[:-5])
    channels = {"train": launcher.Channel(files=[shard])}
    system_temp = tmp_path / "tmp"  # the job's system temp folder (its instances inherit TMPDIR)
    system_temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(system_temp))
    monkeypatch.setattr(tempfile, "tempdir", None)
    with pytest.raises(TrainingError) as caught:
        launcher.train(
            {"predictor_type": "binary_classifier", "feature_dim": "3", "epochs": "1"}, channels, tmp_path / "out"
        )
    message = str(caught.value)
    assert message.count(str(shard)) == 1 and "input/data/train" not in message, message
    assert "record 199 at byte offset" in message and "truncated" in message
    assert list(system_temp.iterdir()) == []


SECOND_INTERRUPT = """
import json, signal, sys, threading, time
from pathlib import Path

from support.definitions import definition, processing

from pipeline.local.executions import ExecutionStore
from pipeline.local.interpreter import Interpreter
from pipeline.local.jobs.contract import StepFailed

folder = Path(sys.argv[1])
cleaned = []
main = threading.main_thread().ident


def slow_to_stop(job):
    time.sleep(0.5)  # the main thread is waiting for this job by now
    signal.pthread_kill(main, signal.SIGINT)  # Ctrl-C while the job runs
    assert job.stop.wait(60)
    time.sleep(1.0)  # the main thread now waits for this job's clean-up
    signal.pthread_kill(main, signal.SIGINT)  # the second interrupt
    time.sleep(0.5)  # the job's own clean-up
    cleaned.append(job.step.name)
    raise StepFailed("stopped")


interpreter = Interpreter(
    runners={"Processing": slow_to_stop},
    store=ExecutionStore(folder / "executions"),
    read_json=lambda uri: {},
    pipeline_name="p",
)
try:
    interpreter.run(definition(processing("Slow")), {})
    outcome = "returned"
except KeyboardInterrupt:
    outcome = "interrupted"
[record] = ExecutionStore(folder / "executions").list()
print(json.dumps({"outcome": outcome, "cleaned": cleaned, "status": record.status,
                  "step": record.steps["Slow"].status}))
"""


def test_a_second_interrupt_still_waits_for_the_jobs_to_clean_up(tmp_path: Path) -> None:
    """Before: `timeout` sends SIGTERM to llpipe and again to its process group; the second one, landing while
    llpipe waited for its jobs to end, cut the wait short: llpipe exited with a training job's instance folder (a
    copy of the data) and empty logs left behind. Now the interpreter waits for its jobs whatever arrives.
    Also before: under a test runner started in the background (SIGINT inherited ignored) the first interrupt was
    lost and the job failed ("returned", Failed); the child starts with SIGINT ignored to pin that.
    Run in a child process: the signals go to that process's main thread, never to the test runner's."""
    tests = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), str(tests.parent)])}
    result = subprocess.run(
        [sys.executable, "-c", SECOND_INTERRUPT, str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome == {"outcome": "interrupted", "cleaned": ["Slow"], "status": "Stopped", "step": "Stopped"}


STOP_INSIDE_WAIT = """
import json, os, signal, sys
from pathlib import Path

from support.definitions import definition, processing

from pipeline.local import interpreter as module
from pipeline.local.executions import ExecutionStore
from pipeline.local.interpreter import Interpreter
from pipeline.local.jobs.contract import StepFailed

folder = Path(sys.argv[1])
real_wait, slices = module.wait, []


def signalling_wait(futures, *args, **kwargs):  # the third slice: SIGTERM lands with a future's condition held
    slices.append(len(slices))
    if len(slices) == 3:
        for future in futures:
            condition, acquire = future._condition, future._condition.acquire

            def acquired_then_signalled(*given, condition=condition, acquire=acquire):
                got = acquire(*given)
                condition.acquire = acquire
                os.kill(os.getpid(), signal.SIGTERM)  # the handler runs now, inside concurrent.futures.wait
                return got

            condition.acquire = acquired_then_signalled
    return real_wait(futures, *args, **kwargs)


def until_stopped(job):
    assert job.stop.wait(60)
    raise StepFailed("stopped")


module.wait = signalling_wait
interpreter = Interpreter(
    runners={"Processing": until_stopped},
    store=ExecutionStore(folder / "executions"),
    read_json=lambda uri: {},
    pipeline_name="p",
)
try:
    interpreter.run(definition(processing("Slow")), {})
    outcome = "returned"
except KeyboardInterrupt as interrupt:
    outcome = f"interrupted by {interrupt.signal_name}"
[record] = ExecutionStore(folder / "executions").list()
print(json.dumps({"outcome": outcome, "status": record.status, "step": record.steps["Slow"].status}))
"""


def test_a_stop_landing_inside_the_wait_for_the_jobs_does_not_hang(tmp_path: Path) -> None:
    """Before: the interpreter's main thread waits for its jobs in slices, in concurrent.futures.wait, which takes
    each running future's lock in Python code; SIGTERM raised right after such an acquisition left the lock held by
    the main thread, the job's thread then blocked setting its result, and llpipe hung in the stop's wait for the
    jobs, ignoring further SIGTERMs, until SIGKILL. Now a stop is acted on between the slices. Run in a child
    process: the signal goes to that process, never to the test runner."""
    tests = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), str(tests.parent)])}
    result = subprocess.run(
        [sys.executable, "-c", STOP_INSIDE_WAIT, str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome == {"outcome": "interrupted by SIGTERM", "status": "Stopped", "step": "Stopped"}


def _dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_what_killed_processes_left_is_swept_by_the_next_one(tmp_path: Path) -> None:
    """Before: a SIGKILLed staging left its hidden .tmp copy in the local S3 input prefix for good, and the
    linear-learner-* folders of killed training jobs piled up in the system temp folder (667 on one machine). Now
    the next training sweeps temp folders whose owner (the pid in the name) is gone, and legacy ones unchanged for a
    day; the next command opening the work dir removes the .tmp files of dead writers."""
    from pipeline.core.stale import LEGACY_AGE_SECONDS, sweep_temp_folders
    from pipeline.local.reaper import reap
    from pipeline.local.workdir import Workdir

    dead = _dead_pid()
    temp = tmp_path / "tmp"
    for name in (f"linear-learner-{dead}-x", f"linear-learner-{os.getpid()}-y", "linear-learner-blocks-old", "new"):
        (temp / name / "algo-1").mkdir(parents=True)
    fresh_legacy = temp / "linear-learner-blocks-fresh"
    fresh_legacy.mkdir()
    old = time.time() - LEGACY_AGE_SECONDS - 60
    os.utime(temp / "linear-learner-blocks-old", (old, old))
    removed = sweep_temp_folders("linear-learner", temp, legacy=("linear-learner-",))
    assert sorted(path.name for path in removed) == sorted(["linear-learner-blocks-old", f"linear-learner-{dead}-x"])
    assert sorted(path.name for path in temp.iterdir()) == sorted(
        ["linear-learner-blocks-fresh", f"linear-learner-{os.getpid()}-y", "new"]
    )

    work = Workdir.at(tmp_path / "w")
    prefix = work.s3 / "bucket" / "input" / "data-1"
    prefix.mkdir(parents=True)
    killed = prefix / f".data.csv.{dead}.0123456789ab.tmp"
    writing = prefix / f".other.csv.{os.getpid()}.0123456789ab.tmp"  # a live writer's: kept
    for path in (killed, writing, prefix / "data.csv"):
        path.write_text("a,b\n")
    reap(work)
    assert sorted(path.name for path in prefix.iterdir()) == sorted([writing.name, "data.csv"])


LATE_SIGNAL = """
import atexit, os, signal, sys
import pipeline.cli as cli

cli.main = lambda argv=None: 0  # the command's work: done at once
atexit.register(lambda: os.kill(os.getpid(), signal.SIGHUP))  # a stop landing while the interpreter winds down
cli.console()
"""


def test_a_stop_signal_after_the_command_finished_does_not_kill_the_process() -> None:
    """Before: main() restored the default handlers on its way out, so a SIGHUP landing in the interpreter's last
    0.1 s killed a finished run (exit -1, found by tests/manual/interrupt_loop.py); now the process exits with the
    command's code."""
    result = subprocess.run([sys.executable, "-c", LATE_SIGNAL], capture_output=True, text=True, check=False)
    assert result.returncode == 0, (result.returncode, result.stderr)
