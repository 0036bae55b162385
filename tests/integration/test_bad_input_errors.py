"""The second hostile try-out (issue 27): parameters out of range, instance counts the machine cannot hold, types
decided on purpose, tracebacks turned into clear errors. Each test failed before its fix (its docstring says how);
they run the real CLI, the real checks and the real container code on real files, kept tiny."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline import cli
from pipeline.core.errors import ParameterError, TrainingError
from pipeline.definition.parameters import check_overrides
from pipeline.linear_learner import launcher
from pipeline.local import preflight


def binary_csv(path: Path, rows: int = 200, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(rows, 3))
    frame = pd.DataFrame(features, columns=["a", "b", "c"])
    frame["label"] = (features[:, 0] > 0).astype(int)
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return binary_csv(tmp_path_factory.mktemp("data") / "data.csv")


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(argv)
    return code, capsys.readouterr().err


# ------------------------------------------------------------------------------- parameters, before the run


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        (["TrainingInstanceCount=0"], "TrainingInstanceCount=0: expected at least 1"),
        (["ProcessingInstanceCount=0"], "ProcessingInstanceCount=0: expected at least 1"),
        (["HashBuckets=-1"], "HashBuckets=-1: expected at least 0"),
        (["HashBuckets=524288"], "HashBuckets=524288: expected at least 0 and at most 65,536"),
        (["ValidationFraction=-0.1"], "ValidationFraction=-0.1: expected greater than 0 and less than 1"),
        (["ValidationFraction=0"], "ValidationFraction=0.0: expected greater than 0"),
        (["TestFraction=0"], "TestFraction=0.0: expected greater than 0"),
        (["ValidationFraction=nan"], "ValidationFraction=nan: expected"),
        (["ValidationFraction=0.6", "TestFraction=0.5"], "ValidationFraction=0.6 + TestFraction=0.5 = 1.1"),
        (["TestFraction=0.9"], "ValidationFraction=0.15 + TestFraction=0.9 = 1.05"),
        (["TrainingInstanceCount=1000"], "TrainingInstanceCount=1000: locally each training instance is a process"),
    ],
)
def test_parameters_out_of_range_are_refused_before_the_run_under_their_own_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: Path, params: list[str], expected: str
) -> None:
    """Before: TrainingInstanceCount=0 and HashBuckets=0 failed inside Preprocess under the script's flags
    (--train-shards, --hash-buckets); ValidationFraction=-0.1 ran; fractions summing over 1 said "about -1000 rows";
    TestFraction=0 / ValidationFraction=0 failed in Train ("channel test: no S3 objects"); TrainingInstanceCount=1000
    started a process per instance until the kernel killed llpipe. Now exit 2 naming the parameter, nothing run."""
    argv = ["run", "--workdir", str(tmp_path / "w"), "--data", str(data), "--label-column", "label"]
    argv += ["--predictor-type", "binary_classifier", "--quiet"]
    code, err = run_cli(argv + [item for p in params for item in ("--param", p)], capsys)
    assert code == 2, err
    assert expected in err and "Traceback" not in err and "--train-shards" not in err and "--hash-buckets" not in err
    assert not (tmp_path / "w" / "executions").exists()


def test_the_range_check_is_the_one_start_and_schedule_use() -> None:
    """The ranges live with the parameters' type checks (run, start, schedule), in words the Python API can show."""
    declared = [
        {"Name": "TrainingInstanceCount", "Type": "Integer", "DefaultValue": 2},
        {"Name": "ValidationFraction", "Type": "Float", "DefaultValue": 0.15},
        {"Name": "TestFraction", "Type": "Float", "DefaultValue": 0.15},
    ]
    assert check_overrides(declared, {"TestFraction": "0.5"}) == {"TestFraction": 0.5}
    with pytest.raises(ParameterError, match="parameter TrainingInstanceCount=-3: expected at least 1") as caught:
        check_overrides(declared, {"TrainingInstanceCount": "-3"})
    assert "--param" not in str(caught.value)


def test_instance_counts_fit_the_machine_s_memory() -> None:
    """Each local instance is a process of about 256 MiB: 1 GiB available holds 4 of either kind."""
    preflight._check_machine({"TrainingInstanceCount": 4, "ProcessingInstanceCount": 4}, memory=1 << 30)
    for name in preflight.INSTANCE_COUNTS:
        with pytest.raises(ParameterError, match=f"parameter {name}=5: .* 1.0 GiB is available: use at most 4 here"):
            preflight._check_machine({name: 5}, memory=1 << 30)


def test_more_instances_than_sharded_files_is_refused_before_any_instance_starts(tmp_path: Path) -> None:
    """Before: `linear-learner train --instance-count 5` on 2 shards started 5 instances, failed in one of them and
    left its blocks folder behind; now refused before anything starts."""
    files = [binary_csv(tmp_path / "data" / f"part-{part}.csv", rows=20, seed=part) for part in range(2)]
    channels = {"train": launcher.Channel(files=files, distribution="ShardedByS3Key", content_type="text/csv")}
    hyperparameters = {"predictor_type": "binary_classifier", "feature_dim": "3"}
    with pytest.raises(
        TrainingError,
        match=r"more instances \(5\) than shards \(2\) in channel 'train' .*: algo-3, algo-4, algo-5 would get no",
    ):
        launcher.train(hyperparameters, channels, tmp_path / "out", instance_count=5, work_dir=tmp_path / "work")
    assert not (tmp_path / "work").exists()


# ------------------------------------------------------------------------------------ tracebacks -> clear errors


@pytest.mark.parametrize(
    ("values", "kind"), [([{"x": 1, "y": 2}] * 40, "struct<x: int64, y: int64>"), ([[1, 2]] * 40, "list<element")]
)
def test_a_nested_parquet_column_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], values: list, kind: str
) -> None:
    """Before: a Parquet struct or list column ended in ArrowNotImplementedError ("Unsupported cast ... to utf8")
    in the schema sample, and in Preprocess's reader. Now both name the file and the column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from containerlib.errors import TableError
    from containerlib.tables.parquet_reader import parquet_pieces

    path = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"a": np.arange(40.0), "s": pa.array(values), "label": [0, 1] * 20}), path)
    argv = ["run", "--workdir", str(tmp_path / "w"), "--data", str(path), "--label-column", "label"]
    code, err = run_cli([*argv, "--predictor-type", "binary_classifier", "--quiet"], capsys)
    assert code == 2 and f"nested.parquet: column(s) 's' ({kind}" in err and "Traceback" not in err, err
    with pytest.raises(TableError, match=f"column\\(s\\) 's' \\({kind}.*nested Parquet values"):
        list(parquet_pieces(path, ["a", "s", "label"], ["s"], 10))
    assert list(parquet_pieces(path, ["a", "label"], [], 10))  # the flat columns alone are read


def test_a_config_file_that_is_not_utf8_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: UnicodeDecodeError traceback."""
    config = tmp_path / "latin.toml"
    config.write_bytes(b"# caf\xe9\nbucket = 'x'\n")
    code, err = run_cli(["definition", "--config", str(config)], capsys)
    assert code == 2 and f"config file {config}: not UTF-8 text (byte 0xe9 at offset 5)" in err, err


@pytest.mark.parametrize("command", [["upsert"], ["start", "--dry-run"], ["definition"]])
def test_an_endpoint_variable_that_is_not_a_url_is_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """Before: `ValueError: Invalid endpoint: not-a-url` traceback from botocore (start, upsert: the offline build)."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "not-a-url")
    monkeypatch.setenv("LLPIPE_DEFINITION_CACHE", "off")  # the build itself makes clients
    code, err = run_cli(command, capsys)
    assert code == 2 and "AWS_ENDPOINT_URL=not-a-url: not an endpoint URL" in err and "Traceback" not in err, err


def test_aws_clients_time_out_quickly_and_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: an endpoint that accepts the connection and never answers kept `start --dry-run` silent for 180 s
    (botocore's 60 s read timeout, three tries). Now a short read timeout, named with its variable. A real server
    on 127.0.0.1 that never answers."""
    import socket

    from pipeline.core.errors import AwsError
    from pipeline.definition.config import PipelineConfig
    from pipeline.sagemaker import aws

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{server.getsockname()[1]}")
        monkeypatch.setenv(aws.READ_TIMEOUT_ENV, "0.5")
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        client = aws.session(PipelineConfig()).client("sagemaker")
        assert client.meta.config.read_timeout == 0.5 and client.meta.config.connect_timeout == 5
        with pytest.raises(AwsError, match=f"read timeout 0.5 s, 2 attempts; .*{aws.READ_TIMEOUT_ENV}"):
            with aws.call("DescribePipeline"):
                client.describe_pipeline(PipelineName="p")
    monkeypatch.setenv(aws.READ_TIMEOUT_ENV, "soon")
    with pytest.raises(Exception, match=f"{aws.READ_TIMEOUT_ENV}=soon: expected a number of seconds"):
        aws.timeouts()


def test_a_registry_entry_whose_metrics_are_not_json_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `models list` / `models describe` ended in a JSONDecodeError traceback."""
    import sqlite3

    from support.model_packages import ACCOUNT, REGION, request

    from pipeline.definition.config import PipelineConfig
    from pipeline.local.registry import LocalRegistry

    group = PipelineConfig().model_package_group
    LocalRegistry(tmp_path / "registry.db").register(request(group), metrics={"a": 1}, region=REGION, account=ACCOUNT)
    with sqlite3.connect(tmp_path / "registry.db") as db:
        db.execute("UPDATE model_packages SET metrics = 'not json {'")
    for command in (["models", "list"], ["models", "describe", "1"]):
        code, err = run_cli([*command, "--workdir", str(tmp_path)], capsys)
        assert code == 1 and "version 1: damaged registry entry (column 'metrics' is not JSON" in err, err
        assert "Traceback" not in err


# ----------------------------------------------------------------------------------------- types, on purpose


def test_datetime_like_dataframe_columns_become_seconds_and_complex_is_refused(tmp_path: Path) -> None:
    """Before: through run_local(df), datetime, tz-aware, timedelta, Period and complex columns were written as text
    and hashed into 16 buckets (thousands of distinct values: noise; AUC 0.9555 -> 0.933). Now the times are seconds
    (an ordered number) in the CSV the run reads, and complex numbers are refused naming the column."""
    from pipeline.api.frames import write_frame
    from pipeline.core.errors import DataError

    frame = pd.DataFrame(
        {
            "when": pd.to_datetime(["1970-01-02", "2020-01-01"]),
            "aware": pd.to_datetime(["1970-01-01 01:00", "1970-01-01 02:00"]).tz_localize("Europe/Paris"),
            "took": pd.to_timedelta(["90s", "1h"]),
            "month": pd.period_range("1970-01", periods=2, freq="M"),
            "label": [0, 1],
        }
    )
    written = pd.read_csv(write_frame(frame, tmp_path))
    assert written["when"].tolist() == [86400.0, 1577836800.0]
    assert written["aware"].tolist() == [0.0, 3600.0]  # 01:00 in Paris is midnight UTC
    assert written["took"].tolist() == [90.0, 3600.0]
    assert written["month"].tolist() == [0.0, 2678400.0]  # each period's start
    with pytest.raises(DataError, match="column 'z' holds complex numbers"):
        write_frame(pd.DataFrame({"z": [1 + 2j, 3j], "label": [0, 1]}), tmp_path)


def test_parquet_timestamps_are_seconds_in_the_sample_and_in_preprocess_s_reader(tmp_path: Path) -> None:
    """Before: a Parquet timestamp column was cast to text in the sample (so decided categorical and hashed)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from containerlib.tables.parquet_reader import parquet_pieces
    from containerlib.tables.sample import sample_file

    path = tmp_path / "t.parquet"
    when = pa.array(pd.to_datetime(["1970-01-02", "2020-01-01"]), pa.timestamp("ns", tz="UTC"))
    table = pa.table({"when": when, "day": pa.array([1, 2], pa.int32()).cast(pa.date32()), "label": [0, 1]})
    pq.write_table(table, path)
    sample = sample_file(path, "t.parquet", 10).frame
    assert sample["when"].astype(float).tolist() == [86400.0, 1577836800.0]  # text, as every sampled value
    [piece] = list(parquet_pieces(path, ["when", "day", "label"], [], 10))
    assert piece.column("when").to_pylist() == [86400.0, 1577836800.0]
    assert piece.column("day").to_pylist() == [86400.0, 172800.0]


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (
            "junk",
            "column 'b' is numeric but 3 of its 60 sampled values are not numbers: '?' (junk.csv row 6), "
            "'-' (junk.csv row 18), '0x10' (junk.csv row 41)",
        ),  # fmt: skip
        ("thousands", "numbers with thousands separators (1,234) must be written without them"),
        ("mixed", "column 'flag' has a different type in different files (boolean in b.parquet; text in a.csv)"),
    ],
)
def test_a_column_s_type_is_decided_on_purpose(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, expected: str
) -> None:
    """Before: a few junk tokens (?, -, 0x10) or thousands separators turned a numeric column into hashed
    categories with a warning naming neither values nor rows; Yes/No text in one file and booleans in another
    became four unrelated buckets. Now exit 2 naming the column, the values and their rows (or the files)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=60), "b": rng.normal(size=60).round(3)})
    frame["label"] = (frame["a"] > 0).astype(int)
    data = tmp_path / "data"
    data.mkdir()
    if kind == "junk":
        frame["b"] = frame["b"].astype(object)
        frame.loc[[5, 17, 40], "b"] = ["?", "-", "0x10"]
        frame.to_csv(data / "junk.csv", index=False)
    elif kind == "thousands":
        frame["b"] = [f"{int(value * 100000):,}" for value in frame["b"]]
        frame.to_csv(data / "t.csv", index=False)
    else:
        frame.assign(flag=np.where(frame["a"] > 0, "Yes", "No")).to_csv(data / "a.csv", index=False)
        pq.write_table(
            pa.Table.from_pandas(frame.assign(flag=frame["a"] > 0), preserve_index=False), data / "b.parquet"
        )
    argv = ["run", "--workdir", str(tmp_path / "w"), "--data", str(data), "--label-column", "label"]
    code, err = run_cli([*argv, "--predictor-type", "binary_classifier", "--quiet"], capsys)
    assert code == 2 and expected in err, err
    assert not (tmp_path / "w" / "executions").exists()


@pytest.mark.parametrize(
    ("twice", "said"),
    [
        (["--data", "a.csv", "--data", "b.csv"], "--data given twice (a.csv and b.csv)"),
        (["--label-column", "x", "--label-column", "y"], "--label-column given twice (x and y)"),
    ],
)
def test_an_option_given_twice_is_refused(capsys: pytest.CaptureFixture[str], twice: list[str], said: str) -> None:
    """Before: `--label-column` twice trained on the last one; `--data a --data b` dropped a, silently."""
    with pytest.raises(SystemExit) as caught:
        cli.main(["run", *twice])
    assert caught.value.code == 2 and said in capsys.readouterr().err


# ------------------------------------------------------------------------------ unclear errors, in the user's words


def test_a_device_or_fifo_as_data_is_named_as_such(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `--data /dev/zero` or a FIFO said "no such file or folder"."""
    import os

    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    for data in (fifo, Path("/dev/zero")):
        argv = ["run", "--workdir", str(tmp_path / "w"), "--data", str(data), "--label-column", "label"]
        code, err = run_cli([*argv, "--predictor-type", "binary_classifier", "--quiet"], capsys)
        assert code == 2 and f"--data {data}: not a regular file or a folder (a device, FIFO or socket)" in err, err


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"\x1f\x8b\x08\x00" + b"\x00" * 40, "not CSV text but gzip-compressed data: name it .csv.gz"),
        (b"PAR1" + b"\x00" * 40, "not CSV text but a Parquet file: name it .parquet"),
        (b"a;b;label\n1;2;0\n3;4;1\n", "the header is one column 'a;b;label': the file is separated by ';'"),
    ],
)
def test_a_csv_that_is_not_comma_separated_text_says_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, said: str
) -> None:
    """Before: gzip or Parquet bytes in a .csv said "not UTF-8"; a semicolon-separated file "a trailing comma?"."""
    data = tmp_path / "data.csv"
    data.write_bytes(content)
    argv = ["run", "--workdir", str(tmp_path / "w"), "--data", str(data), "--label-column", "label"]
    code, err = run_cli([*argv, "--predictor-type", "binary_classifier", "--quiet"], capsys)
    assert code == 2 and said in err and "UTF-8" not in err and "trailing comma" not in err, err


@pytest.mark.parametrize("command", ["retry", "stop"])
def test_retry_and_stop_of_a_local_execution_say_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """Before: `llpipe retry/stop <local id>` only said "no AWS credentials"."""
    from pipeline.local.executions import ExecutionStore

    monkeypatch.chdir(tmp_path)
    record = ExecutionStore(tmp_path / ".llpipe" / "executions").create("p", {"Steps": []}, {})
    code, err = run_cli([command, record.id], capsys)
    assert code == 2 and f"{record.id} is a local execution" in err and f"`llpipe {command}` acts on SageMaker" in err


@pytest.mark.parametrize(("command", "instead"), [("retry", "run it again with `llpipe run`"), ("stop", "Ctrl-C")])
def test_retry_and_stop_of_an_id_of_another_work_dir_say_what_to_do_without_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str, instead: str
) -> None:
    """Before: an execution of `llpipe run --workdir elsewhere` is not in the default work dir, so retry/stop went to
    SageMaker and said only "no AWS credentials". Now that error says what to do if the id is a local one."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for name in ("AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"):
        monkeypatch.setenv(name, str(tmp_path / "absent"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)
    monkeypatch.chdir(tmp_path)
    code, err = run_cli([command, "b784054eea07"], capsys)
    assert code == 1 and "no AWS credentials found" in err, err
    assert f"`llpipe {command}` acts on SageMaker executions; if b784054eea07 is a local one" in err and instead in err


def test_a_model_version_below_one_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Before: `models approve -1` gave argparse's top-level usage."""
    code, err = run_cli(["models", "approve", "-1", "--workdir", str(tmp_path)], capsys)
    assert code == 1 and "model package version -1: versions are numbered from 1" in err, err


def test_a_model_version_that_is_no_number_says_which_forms_are_accepted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Before: `models approve abc` said "expected an ARN or <group>/<version>", not that a plain 3 is accepted."""
    from pipeline.api.models import package_name
    from pipeline.core.errors import ModelsError

    code, err = run_cli(["models", "approve", "abc", "--workdir", str(tmp_path)], capsys)
    assert code == 1, err
    assert "model package version 'abc': expected a version number of group linear-learner-models (e.g. 3)," in err
    assert " <group>/<version> (e.g. linear-learner-models/3) or a model package ARN" in err, err
    with pytest.raises(ModelsError, match=r"'g/x': expected a version number of group g \(e\.g\. 3\)"):
        package_name("g/x", "g")  # --sagemaker names the version the same way
    assert package_name("3", "g") == "g/3" and package_name("other/4", "g") == "other/4"
    arn = "arn:aws:sagemaker:us-east-1:111122223333:model-package/g/5"
    assert package_name(arn, "g") == arn


def test_python_api_errors_name_keyword_arguments_not_flags(tmp_path: Path, data: Path) -> None:
    """Before: run_local(..., Epochs=0) said "--param Epochs=0" and a bad setting "(from command line)"."""
    from pipeline.api import run_local
    from pipeline.core.errors import ConfigError

    with pytest.raises(ParameterError) as caught:
        run_local(data, "label", "binary_classifier", workdir=tmp_path / "w", TrainingInstanceCount=0)
    assert "TrainingInstanceCount=0" in str(caught.value) and "--param" not in str(caught.value)
    with pytest.raises(ParameterError) as caught:
        run_local(data, "label", "binary_classifier", workdir=tmp_path / "w", MetricThreshold=1.5, progress=False)
    assert "MetricThreshold=1.5" in str(caught.value) and "--" not in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        run_local(data, "label", "binary_classifier", workdir=tmp_path / "w", region="not a region!")
    assert "command line" not in str(caught.value) and "--" not in str(caught.value), caught.value


# ------------------------------------------------------------------------------- a stop received by another thread

SIGNAL_IN_A_JOB_THREAD = """
import json, signal, sys, threading
from pathlib import Path

from support.definitions import definition, processing

from pipeline.local.executions import ExecutionStore
from pipeline.local.interpreter import Interpreter
from pipeline.local.jobs.contract import StepFailed

folder = Path(sys.argv[1])
seen = []
job_threads = []


def stopped_from_its_own_thread(job):
    job_threads.append(threading.current_thread())
    # the kernel hands a signal sent to the process to any thread: here, this job's thread receives it
    signal.pthread_kill(threading.get_ident(), getattr(signal, sys.argv[2]))
    seen.append(job.stop.wait(60))  # True as soon as the main thread has handled the signal
    raise StepFailed("stopped")


interpreter = Interpreter(
    runners={"Processing": stopped_from_its_own_thread},
    store=ExecutionStore(folder / "executions"),
    read_json=lambda uri: {},
    pipeline_name="p",
)
try:
    interpreter.run(definition(processing("Slow")), {})
    outcome = "returned"
except KeyboardInterrupt:
    outcome = "interrupted"
for thread in job_threads:  # what the job saw is recorded once its thread has ended (on a loaded machine the main
    thread.join(90)  # thread printed before the job thread appended to `seen`: stop_seen came out empty)
[record] = ExecutionStore(folder / "executions").list()
print(json.dumps({"outcome": outcome, "stop_seen": seen, "status": record.status, "step": record.steps["Slow"].status}))
"""


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_stop_signal_received_by_a_job_thread_stops_the_run_at_once(tmp_path: Path, name: str) -> None:
    """Before: a signal the kernel handed to a job's thread (one of 78 training instances' log readers, say) was run
    by Python in the main thread only when that thread woke, and it slept in an untimed wait for the running jobs:
    Ctrl-C or SIGTERM while 78 training instances started was acted on after Train had run to the end (26 s), Train
    recorded Succeeded. Now the main thread waits in slices and stops the jobs at once: the job sees the stop (it
    waits for that state, up to 60 s, instead of running on). Run in a child process, whose signals are its own."""
    tests = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), str(tests.parent)])}
    result = subprocess.run(
        [sys.executable, "-c", SIGNAL_IN_A_JOB_THREAD, str(tmp_path), name],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome == {"outcome": "interrupted", "stop_seen": [True], "status": "Stopped", "step": "Stopped"}


@pytest.mark.parametrize(
    ("argv", "command", "extra"), [(["serve", "99"], "serve", "99"), (["run", "--bogus", "x"], "run", "--bogus x")]
)
def test_an_unknown_argument_is_named_with_the_command_s_own_usage(
    capsys: pytest.CaptureFixture[str], argv: list[str], command: str, extra: str
) -> None:
    """Before: `llpipe serve 99` printed the top-level usage (`llpipe [-h] COMMAND ...`), as `models approve -1` did:
    nothing about serve's own arguments. Now the command's parser says it, with its usage."""
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert err.startswith(f"usage: llpipe {command} [-h]") and err.endswith(
        f"llpipe {command}: error: unrecognized arguments: {extra}\n"
    ), err


@pytest.mark.parametrize("uri", ["s3://bucket/a/../b/", "S3://my-bucket/tables", "https://example.com/t.csv"])
def test_a_uri_given_as_data_is_named_as_one_with_the_ways_out(
    tmp_path: Path, uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `--data s3://bucket/a/../b/` said "--data s3:/bucket/a/../b: no such file or folder" (the URI folded
    as a path)."""
    argv = ["run", "--data", uri, "--label-column", "label", "--predictor-type", "binary_classifier",
            "--workdir", str(tmp_path / "work")]  # fmt: skip
    code, err = run_cli(argv, capsys)
    said = " ".join(err.split())
    assert code == 2 and f"--data {uri.rstrip('/')}: is a URI" in said and "llpipe start" in said, said
