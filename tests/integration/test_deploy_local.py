"""``llpipe deploy`` locally: the stages are ``llpipe serve`` processes of the work dir, on their own ports.

Two real runs of a table with text columns and No/Yes labels register version 1 (a good model) and version 2 (the
same table, regularised until its scores barely move: a worse model that still passes a zero threshold). The flow
approve -> staging -> smoke test -> prod runs end to end through the commands; then the worse version is refused
by staging's quality check, a version whose server cannot start is rolled back, and a version whose answers differ
from its batch transform's fails the smoke test; each time staging keeps serving version 1, on the same port, and
answers raw rows through boto3's sagemaker-runtime client.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import botocore.config
import pytest
from support import drift_table
from support.finished_run import FinishedRun
from support.settings import FAST

from pipeline import cli
from pipeline.api import deploy_model, run_local
from pipeline.definition.config import load_config
from pipeline.local.endpoints import LocalEndpoints, deployed_package
from pipeline.local.registry import LocalRegistry
from pipeline.local.workdir import Workdir

FEATURES = ["tenure", "minutes", "calls", "plan"]


@dataclass(frozen=True)
class Registry:
    workdir: Path
    frame: Any
    arns: dict[int, str]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z"


@pytest.fixture(scope="module")
def registry(finished_run: FinishedRun, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """The shared run (version 1, the good model) copied, and a worse run registering version 2 in the copy."""
    workdir = finished_run.copy_to(tmp_path_factory.mktemp("deploy") / "work")
    frame = finished_run.frame
    worse = run_local(
        frame,
        drift_table.LABEL,
        "binary_classifier",
        workdir=workdir,
        progress=False,
        use_cache=False,
        Wd="1000",
        L1="1000",
        MetricThreshold=0.0,
        **FAST,
    )
    assert worse.status == "Succeeded", worse.failure_reason
    packages = {package.version: package.arn for package in LocalRegistry(workdir / "registry.db").list_packages()}
    assert sorted(packages) == [1, 2]
    yield Registry(workdir, frame, packages)
    endpoints = LocalEndpoints(Workdir.at(workdir), load_config(env={}))
    for stage in ("staging", "prod"):
        endpoints.undeploy(stage)


def llpipe(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip().startswith(("{", "[")) else out + err


def endpoints(capsys: pytest.CaptureFixture[str], workdir: Path) -> dict[str, dict[str, Any]]:
    code, listed = llpipe(capsys, "endpoints", "--workdir", str(workdir), "--json")
    assert code == 0
    return {entry["stage"]: entry for entry in listed}


def deploy(capsys: pytest.CaptureFixture[str], workdir: Path, stage: str, *more: str) -> tuple[int, dict[str, Any]]:
    return llpipe(capsys, "deploy", "--stage", stage, "--workdir", str(workdir), "--port", "0", "--json", *more)


def runtime(url: str) -> Any:
    retries = botocore.config.Config(retries={"max_attempts": 1})
    return boto3.client(
        "sagemaker-runtime",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
        config=retries,
    )


def test_approve_staging_smoke_prod_then_worse_versions_never_replace_staging(
    registry: Registry, capsys: pytest.CaptureFixture[str]
) -> None:
    workdir = str(registry.workdir)
    code, refused = llpipe(capsys, "deploy", "--stage", "staging", "--workdir", workdir, "--model-package", "1")
    assert code == 1 and "PendingManualApproval, not Approved" in refused
    assert llpipe(capsys, "models", "approve", "1", "--workdir", workdir)[0] == 0

    code, outcome = deploy(capsys, registry.workdir, "staging")
    assert code == 0, outcome
    assert outcome["status"] == "deployed" and outcome["version"]["version"] == 1
    assert outcome["smoke"]["consistency"]["mismatch_count"] == 0 and outcome["smoke"]["rows"] > 50
    staging = endpoints(capsys, registry.workdir)["staging"]
    assert staging["status"] == "InService" and staging["version"] == 1 and staging["smoke_test_passed"]
    assert staging["endpoint"] == "llpipe-local-pipeline-staging" or staging["endpoint"].endswith("-staging")

    rows = registry.frame[FEATURES].head(5).to_csv(index=False).encode()
    answer = runtime(staging["url"]).invoke_endpoint(
        EndpointName=staging["endpoint"], Body=rows, ContentType="text/csv", Accept="application/json"
    )
    predictions = json.loads(answer["Body"].read())["predictions"]
    assert len(predictions) == 5 and {p["label"] for p in predictions} <= {"No", "Yes"}

    code, outcome = deploy(capsys, registry.workdir, "prod")
    assert code == 0 and outcome["status"] == "deployed" and outcome["version"]["version"] == 1, outcome
    listed = endpoints(capsys, registry.workdir)
    assert listed["prod"]["version"] == 1 and listed["prod"]["url"] != staging["url"]
    unchanged = deploy_model(stage="staging", workdir=registry.workdir)  # the Python API, as a notebook calls it
    assert unchanged.status == "unchanged" and unchanged.version.version == 1 and unchanged.exit_code == 0
    assert endpoints(capsys, registry.workdir)["staging"]["handle"] == staging["handle"]  # the same server

    assert llpipe(capsys, "models", "approve", "2", "--workdir", workdir)[0] == 0
    code, outcome = deploy(capsys, registry.workdir, "staging", "--model-package", "2")
    assert code == 1 and outcome["status"] == "refused", outcome
    quality = outcome["smoke"]["quality"]
    assert quality["metric"] == "auc" and quality["candidate"] < quality["live"] - 0.01
    assert "still serves version 1" in outcome["message"]
    assert endpoints(capsys, registry.workdir)["staging"]["handle"] == staging["handle"]
    code, refused = llpipe(capsys, "deploy", "--stage", "prod", "--workdir", workdir, "--model-package", "2")
    assert code == 1 and "version 2 did not pass staging" in refused

    # the service's rollback, locally: version 2's server cannot start (its model data is gone), version 1 comes back
    package = LocalRegistry(registry.workdir / "registry.db").describe(registry.arns[2])
    model_data = Path(package.model_data_url.replace("s3://", f"{workdir}/s3/", 1))
    hidden = model_data.with_name(model_data.name + ".hidden")
    model_data.rename(hidden)
    try:
        code, outcome = deploy(capsys, registry.workdir, "staging", "--model-package", "2", "--quality-tolerance", "1")
    finally:
        hidden.rename(model_data)
    assert code == 1 and outcome["status"] == "rolled-back", outcome
    staging_now = endpoints(capsys, registry.workdir)["staging"]
    assert staging_now["version"] == 1 and staging_now["url"] == staging["url"] and staging_now["smoke_test_passed"]
    old_pid = int(staging["handle"].split()[1])
    assert not alive(old_pid) and staging_now["handle"] != staging["handle"]

    # a version whose answers differ from its batch transform's fails the smoke test: version 1 serves again
    execution = package.source_execution.rsplit("/", 1)[-1]
    (out_file,) = (registry.workdir / "s3").glob(f"*/*/{execution}/transform/*.out")
    original = out_file.read_text()
    lines = [json.loads(line) for line in original.splitlines()]
    lines[0]["score"] = 1.0 - lines[0]["score"]
    out_file.write_text("".join(json.dumps(line) + "\n" for line in lines))
    try:
        code, outcome = deploy(capsys, registry.workdir, "staging", "--model-package", "2", "--quality-tolerance", "1")
    finally:
        out_file.write_text(original)
    assert code == 1 and outcome["status"] == "smoke-failed", outcome
    assert outcome["smoke"]["consistency"]["mismatches"][0].startswith("row 0: score")
    assert outcome["restored"].endswith("serves version 1 again")
    final = endpoints(capsys, registry.workdir)
    assert final["staging"]["version"] == 1 and final["staging"]["url"] == staging["url"]
    assert final["prod"]["version"] == 1 and final["prod"]["handle"] == listed["prod"]["handle"]
    assert deployed_package(Workdir.at(registry.workdir), final["staging"]["endpoint"]) == registry.arns[1]

    with LocalEndpoints(Workdir.at(registry.workdir), load_config(env={})).changing("staging"):  # a deploy under way
        code, busy = llpipe(capsys, "deploy", "--stage", "staging", "--workdir", workdir)
    assert code == 1 and f"stage staging is being changed by llpipe pid {os.getpid()}" in busy

    code, out = llpipe(capsys, "undeploy", "--stage", "staging", "--workdir", workdir)
    assert code == 0 and "stopped" in out
    assert not alive(int(final["staging"]["handle"].split()[1]))
    assert endpoints(capsys, registry.workdir)["staging"]["status"] is None


def test_a_version_taking_other_request_columns_is_refused_unless_allowed(
    registry: Registry, capsys: pytest.CaptureFixture[str]
) -> None:
    """A third run on the table with a CustomerID column and without calls registers version 3: deploying it over
    version 1 is refused, naming the columns, and staging keeps serving version 1; with --allow-new-columns it rolls
    out, answers rows with the new columns, and version 1's clients now get a 400 naming the missing column."""
    workdir = str(registry.workdir)
    code, outcome = deploy(capsys, registry.workdir, "staging", "--model-package", "1")
    assert code == 0 and outcome["version"]["version"] == 1, outcome
    changed = registry.frame.drop(columns=["calls"]).assign(CustomerID=range(len(registry.frame)))
    third = run_local(
        changed,
        drift_table.LABEL,
        "binary_classifier",
        workdir=registry.workdir,
        progress=False,
        SkipDataQualityCheck="true",
        RegisterNewDataQualityBaseline="true",
        MetricThreshold=0.0,
        **FAST,
    )
    assert third.status == "Succeeded", third.failure_reason
    assert llpipe(capsys, "models", "approve", "3", "--workdir", workdir)[0] == 0
    before = endpoints(capsys, registry.workdir)["staging"]

    code, refused = llpipe(capsys, "deploy", "--stage", "staging", "--workdir", workdir, "--model-package", "3")
    message = " ".join(refused.split())
    assert code == 1 and "version 3 takes other request columns than version 1" in message, refused
    assert "added ['CustomerID']; removed ['calls']" in message and "--allow-new-columns" in message
    assert endpoints(capsys, registry.workdir)["staging"]["handle"] == before["handle"]  # untouched

    code, outcome = deploy(
        capsys, registry.workdir, "staging", "--model-package", "3", "--allow-new-columns", "--quality-tolerance", "1"
    )
    assert code == 0 and outcome["status"] == "deployed" and outcome["version"]["version"] == 3, outcome
    assert any("(new columns allowed)" in note for note in outcome["smoke"]["notes"])
    staging = endpoints(capsys, registry.workdir)["staging"]
    client = runtime(staging["url"])
    rows = changed.drop(columns=[drift_table.LABEL]).head(3).to_csv(index=False).encode()
    answer = client.invoke_endpoint(EndpointName=staging["endpoint"], Body=rows, ContentType="text/csv")
    assert len(json.loads(answer["Body"].read())["predictions"]) == 3
    old_rows = registry.frame[FEATURES].head(3).to_csv(index=False).encode()
    with pytest.raises(client.exceptions.ModelError, match="CustomerID"):
        client.invoke_endpoint(EndpointName=staging["endpoint"], Body=old_rows, ContentType="text/csv")
