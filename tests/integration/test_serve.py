"""``llpipe serve`` / ``serve_local``: a registered version's inference pipeline answering over real HTTP, as its
SageMaker endpoint does, on one real local run of a table with text columns and string labels (No/Yes).

The answers to raw rows equal batch transform's predictions for the same rows (matched through the encoded test
split Preprocess wrote), through the container protocol, the runtime path and boto3's sagemaker-runtime client;
bad requests get their 4xx; the capture files hold every answered request in SageMaker's format and ``llpipe
monitor`` checks them (a clean window passes, drifted traffic violates).
"""

from __future__ import annotations

import base64
import io
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import boto3
import botocore.config
import numpy as np
import pandas as pd
import pytest
from botocore.exceptions import ClientError
from support import drift_table
from support.finished_run import FinishedRun

from containerlib.recordio.reader import read_file
from containerlib.recordio.writer import write_dense
from dataquality.capture import read_records, request_rows
from pipeline import cli, serve_local
from pipeline.api import get_execution
from pipeline.api.execution import LocalExecution
from pipeline.api.serving import Predictor
from pipeline.core.errors import ServingError
from serving.featurizer import featurize
from serving.model import load_spec

FEATURES = ["tenure", "minutes", "calls", "plan"]
ENDPOINT = "churn-local"


@dataclass(frozen=True)
class Served:
    execution: LocalExecution
    workdir: Path
    frame: pd.DataFrame  # the raw table, labels as No/Yes
    test_rows: pd.DataFrame  # raw rows of the test split, in the order batch transform scored them
    transform: list[dict[str, Any]]  # batch transform's answers for them


def run_folder(workdir: Path, execution: LocalExecution) -> Path:
    (folder,) = (workdir / "s3").glob(f"*/*/{execution.id}")
    return folder


@pytest.fixture(scope="module")
def served(finished_run: FinishedRun, tmp_path_factory: pytest.TempPathFactory) -> Served:
    """The shared pipeline run of the drift table with string labels, copied (these tests serve, capture and register
    into its work dir); the raw rows of its test split, found by encoding every raw row with the served featurizer
    and matching the encoded test records byte for byte."""
    workdir = finished_run.copy_to(tmp_path_factory.mktemp("serve") / "work")
    frame = finished_run.frame
    execution = get_execution(finished_run.execution_id, workdir=workdir)
    assert isinstance(execution, LocalExecution) and execution.status == "Succeeded", execution.failure_reason
    folder = run_folder(workdir, execution)
    (shard,) = (folder / "preprocess" / "test").glob("*.pbr")
    encoded, _ = read_file(shard)
    spec = load_spec(folder / "preprocess" / "model" / "model.tar.gz")
    raw_index = {row.tobytes(): index for index, row in enumerate(featurize(frame[FEATURES], spec))}
    positions = [raw_index[row.tobytes()] for row in np.asarray(encoded, dtype=np.float32)]
    answers = [json.loads(line) for line in (folder / "transform" / f"{shard.name}.out").read_text().splitlines()]
    assert len(positions) == len(answers) > 50
    return Served(execution, workdir, frame, frame.iloc[positions].reset_index(drop=True), answers)


@pytest.fixture(scope="module")
def predictor(served: Served) -> Iterator[Predictor]:
    with serve_local("1", port=0, workdir=served.workdir, endpoint_name=ENDPOINT) as running:
        yield running


def post(url: str, body: bytes, content_type: str | None, accept: str | None = None) -> tuple[int, bytes, Any]:
    headers = {key: value for key, value in (("Content-Type", content_type), ("Accept", accept)) if value}
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, response.read(), response.headers
    except urllib.error.HTTPError as error:
        return error.code, error.read(), error.headers


def expected(answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Batch transform's answers with the label value the labels container adds."""
    return [{**answer, "label": ["No", "Yes"][answer["predicted_label"]]} for answer in answers]


def test_raw_rows_over_http_equal_batch_transforms_predictions_and_name_the_labels(
    served: Served, predictor: Predictor
) -> None:
    status, body, headers = post(
        f"{predictor.url}/invocations", served.test_rows.to_csv(index=False).encode(), "text/csv", "application/json"
    )
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert json.loads(body)["predictions"] == expected(served.transform)
    assert {item["label"] for item in expected(served.transform)} == {"No", "Yes"}
    # encoded input goes straight to Linear Learner: the test shard itself, as batch transform sent it
    (shard,) = (run_folder(served.workdir, served.execution) / "preprocess" / "test").glob("*.pbr")
    status, body, _ = post(f"{predictor.url}/invocations", shard.read_bytes(), "application/x-recordio-protobuf")
    assert status == 200 and json.loads(body)["predictions"] == expected(served.transform)
    assert post(f"{predictor.url}/ping", b"", None)[0] in (200, 405)  # GET below; POST is not the ping
    with urllib.request.urlopen(f"{predictor.url}/ping") as response:
        assert response.status == 200


def test_boto3_sagemaker_runtime_works_unchanged_for_every_raw_form(served: Served, predictor: Predictor) -> None:
    client = boto3.client(
        "sagemaker-runtime",
        endpoint_url=predictor.url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
        config=botocore.config.Config(retries={"max_attempts": 0}),
    )
    rows = served.test_rows.head(40)
    want = expected(served.transform[:40])
    records = rows[FEATURES].to_dict(orient="records")
    forms = {
        "text/csv": rows.to_csv(index=False),  # a header (with the label column, ignored)
        "text/csv; charset=utf-8": rows[FEATURES].to_csv(index=False, header=False),  # no header: feature order
        "application/json": json.dumps(records),
        "application/jsonlines": "".join(json.dumps(record) + "\n" for record in records),
    }
    for content_type, body in forms.items():
        answer = client.invoke_endpoint(EndpointName=ENDPOINT, ContentType=content_type, Body=body)
        assert answer["ContentType"] == "application/json", content_type
        assert answer["InvokedProductionVariant"] == "AllTraffic"
        assert json.loads(answer["Body"].read())["predictions"] == want, content_type
    lines = client.invoke_endpoint(
        EndpointName=ENDPOINT,
        ContentType="application/json",
        Accept="application/jsonlines",
        Body=forms["application/json"],
    )
    assert lines["ContentType"] == "application/jsonlines"
    assert [json.loads(line) for line in lines["Body"].read().decode().splitlines()] == want
    encoded = json.dumps({"instances": [{"features": [float(v) for v in row]} for row in encoded_rows(served, 3)]})
    answer = client.invoke_endpoint(EndpointName=ENDPOINT, ContentType="application/json", Body=encoded)
    assert json.loads(answer["Body"].read())["predictions"] == want[:3]  # Linear Learner's own JSON form
    with pytest.raises(ClientError) as refused:
        client.invoke_endpoint(EndpointName=ENDPOINT, ContentType="text/csv", Body="tenure,minutes,calls\n1,2,3\n")
    assert refused.value.response["Error"]["Code"] == "ModelError"
    assert "lacks column(s) ['plan']" in refused.value.response["Error"]["Message"]
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    with pytest.raises(ClientError, match="Endpoint other not found"):
        client.invoke_endpoint(EndpointName="other", ContentType="text/csv", Body=forms["text/csv"])


def encoded_rows(served: Served, count: int) -> np.ndarray:
    (shard,) = (run_folder(served.workdir, served.execution) / "preprocess" / "test").glob("*.pbr")
    encoded, _ = read_file(shard)
    return np.asarray(encoded, dtype=np.float32)[:count]


def test_predict_returns_scores_and_labels_as_a_dataframe(served: Served, predictor: Predictor) -> None:
    frame = served.test_rows.set_index(pd.RangeIndex(100, 100 + len(served.test_rows)))
    predictions = predictor.predict(frame)
    assert list(predictions.index) == list(frame.index)
    assert list(predictions.columns) == ["score", "predicted_label", "label"]
    assert predictions.to_dict(orient="records") == expected(served.transform)
    assert predictor.port > 0 and predictor.url == f"http://127.0.0.1:{predictor.port}"
    assert predictor.model_package_arn.endswith("model-package/linear-learner-models/1")


@pytest.mark.parametrize(
    ("body", "content_type", "status", "message"),
    [
        (
            b"tenure,minutes,calls,plan\n1,2,3,basic\n4,lots,6,plus\n",
            "text/csv",
            400,
            "row 2, column 'minutes': 'lots'",
        ),
        (b'{"tenure": 1, "minutes": 2, "plan": "basic"}', "application/json", 400, "missing column(s) ['calls']"),
        (b'{"tenure": 1, "minutes": 2}\n', "application/jsonlines", 400, "line 1: missing column(s) ['calls', 'plan']"),
        (b"1,2,3\n", "text/csv", 400, "CSV row 1 has 3 value(s)"),
        (
            b"tenure,minutes,calls,plan\n1,inf,3,basic\n",
            "text/csv",
            400,
            "row 1, column 'minutes' is 'inf', not a finite",
        ),
        (b'{"tenure": [1], "minutes": 2, "calls": 3, "plan": "a"}', "application/json", 400, "column 'tenure'"),
        (b"not json", "application/json", 400, "the body is not JSON"),
        (b"\x00\x01garbage", "application/x-recordio-protobuf", 400, "not RecordIO-protobuf"),
        (b"1,2,3,basic\n", "text/plain", 415, "content type 'text/plain'"),
        (b"1," * (3 * 1024 * 1024 + 1), "text/csv", 413, "above the 6291456 byte limit"),
    ],
)
def test_bad_requests_get_their_4xx_naming_row_and_column(
    predictor: Predictor, body: bytes, content_type: str | None, status: int, message: str
) -> None:
    got, answer, _ = post(f"{predictor.url}/invocations", body, content_type)
    assert got == status, answer
    assert message in json.loads(answer)["message"]


def test_an_unknown_accept_type_is_406(predictor: Predictor) -> None:
    got, answer, _ = post(f"{predictor.url}/invocations", b"1,2,3,basic\n", "text/csv", "text/html")
    assert got == 406 and "accept type 'text/html'" in json.loads(answer)["message"]


def test_capture_files_hold_every_answered_request_in_sagemakers_format(served: Served) -> None:
    """A server of its own (its endpoint's folder holds only these requests); refused requests are not captured."""
    rows = served.test_rows[FEATURES].head(5)
    bodies = [
        (rows.to_csv(index=False).encode(), "text/csv"),
        (json.dumps(rows.to_dict(orient="records")).encode(), "application/json"),
        (rows.to_json(orient="records", lines=True).encode(), "application/jsonlines"),
        (to_recordio(encoded_rows(served, 2)), "application/x-recordio-protobuf"),
    ]
    with serve_local("1", port=0, workdir=served.workdir, endpoint_name="capture-all") as running:
        answers = [post(f"{running.url}/invocations", body, kind)[1] for body, kind in bodies]
        assert post(f"{running.url}/invocations", b"x", "text/plain")[0] == 415
        client = boto3.client(
            "sagemaker-runtime",
            endpoint_url=running.url,
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
        )
        client.invoke_endpoint(
            EndpointName="capture-all", ContentType="text/csv", Body=bodies[0][0], InferenceId="o-42"
        )
    folder = run_folder(served.workdir, served.execution).parent / "datacapture" / "capture-all" / "AllTraffic"
    (path,) = folder.rglob("*.jsonl")
    hour = path.parent.relative_to(folder).as_posix()
    assert datetime.strptime(hour, "%Y/%m/%d/%H").replace(tzinfo=timezone.utc) <= datetime.now(timezone.utc)
    *lines, with_id = [json.loads(line) for line in path.read_text().splitlines()]
    assert [list(line) for line in lines] == [["captureData", "eventMetadata", "eventVersion"]] * len(bodies)
    package = "arn:aws:sagemaker:us-east-1:111122223333:model-package/linear-learner-models/1"
    keys = ["eventId", "inferenceTime", "modelPackageArn", "samplingPercentage"]
    assert [list(line["eventMetadata"]) for line in lines] == [keys] * 4
    assert {line["eventMetadata"]["modelPackageArn"] for line in lines} == {package}
    assert {line["eventMetadata"]["samplingPercentage"] for line in lines} == {100}
    assert list(with_id["eventMetadata"]) == ["eventId", "inferenceId", *keys[1:]]
    assert with_id["eventMetadata"]["inferenceId"] == "o-42"  # InvokeEndpoint's InferenceId, as the service records
    for line, (body, kind), answer in zip(lines, bodies, answers, strict=True):
        sent, returned = line["captureData"]["endpointInput"], line["captureData"]["endpointOutput"]
        assert sent["observedContentType"] == kind and sent["mode"] == "INPUT"
        encoding = {"text/csv": "CSV", "application/x-recordio-protobuf": "BASE64"}.get(kind, "JSON")
        assert sent["encoding"] == encoding
        assert (base64.b64decode(sent["data"]) if encoding == "BASE64" else sent["data"].encode()) == body
        assert returned == {
            "observedContentType": "application/json", "mode": "OUTPUT", "data": answer.decode(), "encoding": "JSON"
        }  # fmt: skip
        assert line["eventVersion"] == "0" and len(line["eventMetadata"]["eventId"]) == 36
        datetime.strptime(line["eventMetadata"]["inferenceTime"], "%Y-%m-%dT%H:%M:%SZ")
    # the monitor's reader takes them: every captured raw request's rows, in order
    records = list(read_records(path))
    assert [len(request_rows(record.endpoint_input, FEATURES)) for record in records[:3]] == [5, 5, 5]
    assert records[-1].inference_id == "o-42" and {record.model_package_arn for record in records} == {package}
    with serve_local("1", port=0, workdir=served.workdir, endpoint_name="capture-none", capture_percentage=0) as off:
        assert post(f"{off.url}/invocations", bodies[0][0], "text/csv")[0] == 200
    assert not (folder.parent.parent / "capture-none").exists()


def to_recordio(features: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    write_dense(buffer, features)
    return buffer.getvalue()


def test_monitor_passes_clean_served_traffic_and_flags_drifted_traffic(
    served: Served, image_environment: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Served traffic checked with the default window (the past hour up to now): a request answered this very
    second is inside it."""
    raw = served.frame[FEATURES]
    for endpoint, rows in (("clean", raw), ("drifted", drift_table.drifted(raw))):
        with serve_local("1", port=0, workdir=served.workdir, endpoint_name=endpoint) as running:
            for start in range(0, len(rows), 200):
                running.predict(rows.iloc[start : start + 200])
    common = ["--model-package", "1", "--workdir", str(served.workdir), "--json"]
    assert cli.main(["monitor", "--endpoint", "clean", *common]) == 0
    (clean,) = json.loads(capsys.readouterr().out)["parts"]
    assert clean["data_quality"]["violations"] == []
    assert cli.main(["monitor", "--endpoint", "drifted", *common]) == 1
    (drifted,) = json.loads(capsys.readouterr().out)["parts"]
    flagged = {(v["feature_name"], v["constraint_check_type"]) for v in drifted["data_quality"]["violations"]}
    assert ("plan", "categorical_values_check") in flagged and ("minutes", "baseline_drift_check") in flagged


def test_an_x_ndjson_request_is_served_and_monitored_as_json_lines(
    served: Served, image_environment: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """``application/x-ndjson``, a common spelling of JSON Lines, means the same to every container: the server
    answers it as JSON Lines, capture keeps it as JSON text and the monitor checks its rows (it skipped them as
    encoded input before), exactly as the same rows sent as ``application/jsonlines``."""
    rows = served.test_rows[FEATURES]
    body = rows.to_json(orient="records", lines=True).encode()
    answers = {}
    for endpoint, kind in (("ndjson", "application/x-ndjson"), ("jsonlines", "application/jsonlines")):
        with serve_local("1", port=0, workdir=served.workdir, endpoint_name=endpoint) as running:
            status, answer, headers = post(f"{running.url}/invocations", body, f"{kind}; charset=utf-8", kind)
        assert (status, headers["Content-Type"]) == (200, "application/jsonlines")
        answers[endpoint] = [json.loads(line) for line in answer.decode().splitlines()]
    assert answers["ndjson"] == answers["jsonlines"] == expected(served.transform)
    captured = run_folder(served.workdir, served.execution).parent / "datacapture" / "ndjson" / "AllTraffic"
    ((record,),) = [list(read_records(path)) for path in captured.rglob("*.jsonl")]
    assert (record.endpoint_input.observed_content_type, record.endpoint_input.encoding) == (
        "application/x-ndjson; charset=utf-8",
        "JSON",
    )
    assert request_rows(record.endpoint_input, FEATURES) == rows.to_dict(orient="records")
    views = {}
    for endpoint in answers:
        common = ["--model-package", "1", "--workdir", str(served.workdir), "--json"]
        status = cli.main(["monitor", "--endpoint", endpoint, *common])
        (part,) = json.loads(capsys.readouterr().out)["parts"]
        view = part["data_quality"]
        statistics = json.loads((served.workdir / "s3" / view["statistics"].removeprefix("s3://")).read_text())
        views[endpoint] = (status, view["violations"], statistics)
    assert views["ndjson"] == views["jsonlines"]
    assert views["ndjson"][2]["dataset"] == {"item_count": len(rows)}  # every row checked, none skipped


def register_version_with_baseline_of(served: Served, rows: pd.DataFrame, folder: Path) -> str:
    """Version 1's inference pipeline registered again as a new version (pending approval: serving and monitoring by
    ARN need none) whose DriftCheckBaselines the analyzer calculated from ``rows``: another data-quality baseline."""
    from dataquality.dataset import DatasetFormat
    from dataquality.job import analyze
    from dataquality.settings import Settings
    from pipeline.local.registry import LocalRegistry
    from pipeline.local.s3 import LocalS3
    from pipeline.local.workdir import Workdir

    workdir = Workdir.at(served.workdir)
    registry = LocalRegistry(workdir.registry_db)
    first = registry.describe("linear-learner-models/1")
    baseline = f"s3://llpipe-local/linear-learner-pipeline/{folder.name}/dataquality"
    analyze(
        Settings(
            drift_table.write(rows, folder, parts=1),
            DatasetFormat.parse('{"csv": {"header": true}}'),
            LocalS3(workdir.s3).path(baseline),
        )
    )
    sources = {
        name: {"ContentType": "application/json", "S3Uri": f"{baseline}/{name.lower()}.json"}
        for name in ("Statistics", "Constraints")
    }
    request = {
        "ModelPackageGroupName": first.group,
        "ModelApprovalStatus": "PendingManualApproval",
        "InferenceSpecification": {"Containers": [dict(container) for container in first.containers]},
        "ModelMetrics": {"ModelDataQuality": sources},
        "DriftCheckBaselines": {"ModelDataQuality": sources},
    }
    return registry.register(request, region="us-east-1", account="111122223333").arn


def test_monitor_checks_each_request_against_the_baseline_of_the_version_that_served_it(
    served: Served, image_environment: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """One endpoint name serves version 1 (clean traffic), then a version whose baseline is the drifted data (drifted
    traffic), over HTTP; the monitor judges each part against its own version's baseline, so both pass, while the
    whole window against version 1's baseline flags the second part's drift."""
    raw = served.frame[FEATURES]
    shifted = drift_table.drifted(raw)
    second = register_version_with_baseline_of(served, shifted, tmp_path / "shifted-baseline")
    served_arns = []
    for version, rows in (("1", raw), (second, shifted)):
        with serve_local(version, port=0, workdir=served.workdir, endpoint_name="versions") as running:
            for start in range(0, len(rows), 200):
                assert post(f"{running.url}/invocations", rows.iloc[start : start + 200].to_csv(index=False).encode(),
                            "text/csv")[0] == 200  # fmt: skip
            served_arns.append(running.model_package_arn)
    folder = run_folder(served.workdir, served.execution).parent / "datacapture" / "versions" / "AllTraffic"
    recorded = [json.loads(line)["eventMetadata"]["modelPackageArn"] for path in sorted(folder.rglob("*.jsonl"))
                for line in path.read_text().splitlines()]  # fmt: skip
    assert sorted(set(recorded)) == sorted(served_arns) and len(recorded) == 2 * len(range(0, len(raw), 200))

    common = ["monitor", "--endpoint", "versions", "--workdir", str(served.workdir), "--json"]
    assert cli.main(common) == 0
    report = json.loads(capsys.readouterr().out)
    parts = {part["model_package_arn"]: part for part in report["parts"]}
    assert set(parts) == set(served_arns)
    for part in parts.values():
        assert part["requests"] == len(range(0, len(raw), 200)) and part["data_quality"]["violations"] == []
        assert part["data_quality"]["item_count"] == len(raw)
        assert part["data_quality"]["checked_against"] == part["model_package_arn"]
        version = part["model_package_arn"].rsplit("/", 1)[1]
        assert "/monitoring/versions/AllTraffic/" in part["data_quality"]["violation_report"]
        assert f"/model-package-{version}/constraint_violations.json" in part["data_quality"]["violation_report"]
    assert not (run_folder(served.workdir, served.execution).parent / "monitoring" / ".staging").exists()
    assert cli.main(common[:-1]) == 0  # the text report: a section per version
    text = " ".join(capsys.readouterr().out.split())
    assert "2 model package version(s) served it" in text
    assert all(f"{len(range(0, len(raw), 200))} request(s) against the baseline of {arn}" in text for arn in parts)

    assert cli.main([*common, "--model-package", "1"]) == 1  # everything against version 1's baseline
    (whole,) = json.loads(capsys.readouterr().out)["parts"]
    assert whole["requests"] is None and whole["data_quality"]["item_count"] == 2 * len(raw)
    flagged = {(v["feature_name"], v["constraint_check_type"]) for v in whole["data_quality"]["violations"]}
    assert ("plan", "categorical_values_check") in flagged


def test_llpipe_serve_answers_until_sigterm_then_stops_cleanly(served: Served) -> None:
    command = [sys.executable, "-m", "pipeline", "serve", "--model-package", "1", "--port", "0"]
    command += ["--workdir", str(served.workdir), "--endpoint-name", "cli", "--capture-percentage", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        while not (lines and lines[-1].startswith("listening on ")):  # waits on the server's own line
            line = process.stdout.readline()
            assert line, process.stderr.read()
            lines.append(line)
        url = lines[-1].split()[2]
        assert "labels: ['No', 'Yes']" in "".join(lines)
        # the printed boto3 line works as it is on a machine with no AWS configuration (before: NoRegionError, then
        # NoCredentialsError), as the README's snippet does
        code = next(line for line in lines if line.strip().startswith("runtime: ")).split("runtime: ", 1)[1].strip()
        script = f"import boto3\nprint({code}.invoke_endpoint(EndpointName='cli', ContentType='text/csv', "
        script += f"Body={served.test_rows.head(3).to_csv(index=False)!r})['Body'].read().decode())"
        bare = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") or k == "AWS_CA_BUNDLE"}
        bare.update(HOME=str(served.workdir), AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull)
        answer = subprocess.run([sys.executable, "-c", script], env=bare, capture_output=True, text=True, timeout=60)
        assert answer.returncode == 0, answer.stderr
        assert json.loads(answer.stdout)["predictions"] == expected(served.transform[:3])
        status, body, _ = post(f"{url}/invocations", served.test_rows.head(3).to_csv(index=False).encode(), "text/csv")
        assert status == 200 and json.loads(body)["predictions"] == expected(served.transform[:3])
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
        assert out.strip().endswith("stopped") and "Traceback" not in err
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_version_that_is_not_an_inference_pipeline_or_a_taken_port_fails_clearly(served: Served) -> None:
    with pytest.raises(ServingError, match="no approved version"):
        serve_local(port=0, workdir=served.workdir)
    with pytest.raises(ServingError, match="linear-learner-models/9"):
        serve_local("9", port=0, workdir=served.workdir)
    with serve_local("1", port=0, workdir=served.workdir) as running:
        with pytest.raises(ServingError, match=f"cannot listen on 127.0.0.1:{running.port}"):
            serve_local("1", port=running.port, workdir=served.workdir)


def test_the_containers_code_answers_as_in_process_on_the_images_python(
    served: Served, image_environment: Any, tmp_path: Path
) -> None:
    """The serving bundle's handler functions on the scikit-learn image's Python 3.9 and libraries: the featurizer
    turns raw CSV into the same RecordIO-protobuf features, the labels container adds the label values."""
    from support.container import Container

    entry = Container(image_environment, tmp_path).bundle("serving")
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    import tarfile

    with tarfile.open(run_folder(served.workdir, served.execution) / "preprocess" / "model" / "model.tar.gz") as tar:
        tar.extractall(model_dir)
    rows = served.test_rows.head(10)
    script = f"""
import json, os, sys
import inference
spec = inference.model_fn({str(model_dir)!r})
body = open({str(tmp_path / "rows.csv")!r}, "rb").read()
features = inference.predict_fn(inference.input_fn(body, "text/csv"), spec)
encoded, kind = inference.output_fn(features, "application/json")
open({str(tmp_path / "encoded.pbr")!r}, "wb").write(encoded)
os.environ["LLPIPE_SERVING_ROLE"] = "labels"
answers = json.dumps({{"predictions": {json.dumps(served.transform[:10])}}})
labelled, labelled_kind = inference.output_fn(
    inference.predict_fn(inference.input_fn(answers, "application/json"), spec), "application/jsonlines"
)
print(kind, labelled_kind, sys.version_info[:2])
sys.stdout.write(labelled.decode())
"""
    (tmp_path / "rows.csv").write_text(rows.to_csv(index=False))
    environment = {**os.environ, **image_environment.variables, "PYTHONNOUSERSITE": "1"}
    environment.pop("PYTHONPATH", None)
    result = subprocess.run(
        [str(image_environment.python), "-c", script],
        cwd=entry.parent,
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
    )
    assert result.returncode == 0, result.stderr
    first, *labelled = result.stdout.splitlines()
    assert first == "application/x-recordio-protobuf application/jsonlines (3, 9)"
    features, _ = read_file(tmp_path / "encoded.pbr")
    assert np.array_equal(np.asarray(features), encoded_rows(served, 10))
    assert [json.loads(line) for line in labelled] == expected(served.transform[:10])


def test_predict_sends_a_frames_dates_as_the_seconds_run_local_trained_on() -> None:
    """Before: run_local(frame) trained on a datetime column as seconds (pipeline.api.frames), but predict(frame) sent
    it as CSV text: "the endpoint answered 400: row 1, column 'when': '2023-03-30' is not a number"."""
    from pipeline.api.frames import numeric_times
    from pipeline.api.serving import Predictor

    sent: list[bytes] = []

    class Recording(Predictor):
        def invoke(self, body: bytes, content_type: str = "text/csv", accept: str = "application/json") -> bytes:
            sent.append(body)
            return json.dumps({"predictions": [{"score": 0.5}] * body.count(b"\n", body.index(b"\n") + 1)}).encode()

    frame = pd.DataFrame({"x": [1.0, 2.0], "when": pd.to_datetime(["2023-03-30 00:00", "2021-01-01 12:00"])})
    answer = Recording(None).predict(frame)  # type: ignore[arg-type]
    assert list(answer["score"]) == [0.5, 0.5]
    assert sent == [numeric_times(frame).to_csv(index=False).encode()]
    assert sent[0].decode().splitlines()[1:] == ["1.0,1680134400.0", "2.0,1609502400.0"]


def test_json_and_dataframe_booleans_encode_as_preprocess_encodes_a_parquet_boolean(tmp_path: Path) -> None:
    """Before: a JSON true (and a DataFrame's True) in a categorical column was hashed as "flag=True", while
    Preprocess hashes a Parquet boolean column's values as "true"/"false" (Arrow's text): a model trained on Parquet
    got every JSON boolean in an untrained bucket (a false flag scored 0.50 where the same row sent as CSV "false"
    scored 0.09), and llpipe monitor saw the JSON values as 'true'/'false', in the baseline's domain."""
    from containerlib.encoding import FeatureLayout
    from containerlib.tables.parquet_reader import parquet_pieces
    from serving.model import ServingSpec
    from serving.requests import parse_rows

    spec = ServingSpec(FeatureLayout(("x", "flag"), ("flag",), 16), "binary_classifier", "y", None, "error", None)
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0], "flag": [True, False, True], "y": [1, 0, 1]})
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    [piece] = parquet_pieces(tmp_path / "t.parquet", ["x", "flag", "y"], ["flag"], 100)  # Preprocess's reader
    trained = featurize(piece.to_pandas(), spec)
    records = frame[["x", "flag"]].to_dict(orient="records")
    assert np.array_equal(featurize(parse_rows(json.dumps(records).encode(), "application/json", spec), spec), trained)
    assert np.array_equal(featurize(frame[["x", "flag"]], spec), trained)  # predictor.predict(frame)
    csv = frame[["x", "flag"]].replace({True: "true", False: "false"}).to_csv(index=False)
    assert np.array_equal(featurize(parse_rows(csv.encode(), "text/csv", spec), spec), trained)


def test_a_requests_rows_encode_as_preprocess_encodes_the_same_csv_read_by_pandas() -> None:
    """The featurizer's cells (no pandas per request) and Preprocess's DataFrame path of the one encoder agree
    on what pandas' reader makes of a CSV: missing-value spellings, true/false, spaces, quoting, floats."""
    from containerlib.encoding import FeatureLayout
    from serving import RequestError
    from serving.model import ServingSpec
    from serving.requests import parse_rows

    spec = ServingSpec(FeatureLayout(("a", "b", "c"), ("c",), 8), "binary_classifier", "y", None, "zero", None)
    text = 'c,a,b\nred,1.5,true\n"blue, dark",NA,FALSE\n,  7 ,False\nnan,-2e3,\n N/A ,3,True\n'
    from_request = featurize(parse_rows(text.encode(), "text/csv", spec), spec)
    table = pd.read_csv(io.StringIO(text), dtype={"c": str})
    assert np.array_equal(from_request, featurize(table, spec))
    records = [{"a": 1.5, "b": True, "c": "red"}, {"a": None, "b": 0, "c": "blue, dark"}]
    from_json = featurize(parse_rows(json.dumps(records).encode(), "application/json", spec), spec)
    assert np.array_equal(from_json, from_request[:2])
    mixed = "a,b,c\n1,true,x\n2,3,y\n"  # pandas makes this column text: not numbers, on both paths
    with pytest.raises(RequestError, match="row 1, column 'b'"):
        featurize(parse_rows(mixed.encode(), "text/csv", spec), spec)
    with pytest.raises(RequestError, match="row 1, column 'b'"):
        featurize(pd.read_csv(io.StringIO(mixed), dtype={"c": str}), spec)
