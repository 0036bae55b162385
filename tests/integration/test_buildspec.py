"""buildspec.yml runs for real: its commands, in phase order, against a moto server standing in for AWS.

Only installation lines are skipped (``pip install``, ``pyenv install``, ``llpipe env build``: the package, Python 3.9
and the image's environment are on this machine already); every other command runs verbatim in one ``sh -e``
script, as CodeBuild runs them, so a typo in any of them fails this test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from support.moto_additions import moto_server

from pipeline.definition.code_bundles import SOURCEDIR, repository_bundle

REPOSITORY = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PHASES = ("install", "pre_build", "build", "post_build")
ROLE = "arn:aws:iam::123456789012:role/PipelineRole"


def buildspec() -> dict[str, Any]:
    return yaml.safe_load((REPOSITORY / "buildspec.yml").read_text())


INSTALLING = ("pip install", "pyenv install", "llpipe env build")


def script(spec: dict[str, Any]) -> str:
    """Every command of every phase, in order, minus the installation lines."""
    commands = [
        command
        for phase in PHASES
        for command in spec.get("phases", {}).get(phase, {}).get("commands", [])
        if not any(word in command for word in INSTALLING)
    ]
    return "\n".join(commands) + "\n"


def run_buildspec(spec: dict[str, Any], workdir: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    variables = {name: str(value) for name, value in spec.get("env", {}).get("variables", {}).items()}
    return subprocess.run(
        ["sh", "-e", "-c", script(spec)],
        cwd=workdir,
        env={**variables, **env},  # the CodeBuild project's environment overrides buildspec defaults
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def moto_endpoint() -> Any:
    with moto_server() as endpoint:
        yield endpoint


def client(name: str, endpoint: str) -> Any:
    return boto3.client(
        name,
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def source_copy(tmp_path: Path) -> Path:
    """What the build needs of the checkout (package sources, the test it runs, pyproject), so artifacts land in tmp."""
    workdir = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", ".llpipe", "*.tmp")
    for folder in ("pipeline", "preprocessing", "evaluation", "dataquality", "containerlib", "serving"):
        shutil.copytree(REPOSITORY / folder, workdir / folder, ignore=ignore)
    (workdir / "tests" / "unit" / "definition").mkdir(parents=True)
    config_test = Path("tests") / "unit" / "definition" / "test_config.py"
    shutil.copy2(REPOSITORY / config_test, workdir / config_test)
    for name in ("pyproject.toml", "buildspec.yml"):
        shutil.copy2(REPOSITORY / name, workdir / name)
    return workdir


def codebuild_environment(endpoint: str, workdir: Path, tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(workdir),  # the checkout, as `pip install -e .` there would make it (not this repository)
        "HOME": str(tmp_path),
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "ARTIFACT_BUCKET": "codebuild-artifacts",
        "SAGEMAKER_PIPELINE_ROLE_ARN": ROLE,
        "SAGEMAKER_PROJECT_NAME": "churn",
        "SAGEMAKER_PROJECT_ID": "p-abc123",
        "START_PIPELINE_EXECUTION": "true",
        "CODEBUILD_RESOLVED_SOURCE_VERSION": "0123abcd",
        # the suite is CI's own job; here one small test file proves the command runs
        "PYTEST_ADDOPTS": "tests/unit/definition/test_config.py -p no:cacheprovider",
    }


@pytest.fixture(scope="module")
def build(moto_endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    """One run of the whole buildspec: the checkout it ran in and its output."""
    tmp_path = tmp_path_factory.mktemp("codebuild")
    s3 = client("s3", moto_endpoint)
    s3.create_bucket(Bucket="codebuild-artifacts")
    # the default InputDataUrl: `llpipe start` lists it for DataVersion and refuses to start on an empty prefix
    s3.put_object(Bucket="codebuild-artifacts", Key="churn-p-abc123/input/part-0.csv", Body=b"x,label\n1,0\n")
    workdir = source_copy(tmp_path)
    return workdir, run_buildspec(buildspec(), workdir, codebuild_environment(moto_endpoint, workdir, tmp_path))


def test_buildspec_lints_tests_writes_the_definition_upserts_and_starts(moto_endpoint: str, build: tuple) -> None:
    workdir, result = build
    assert result.returncode == 0, result.stdout + result.stderr
    assert " passed" in result.stdout and "failed" not in result.stdout  # the test command really ran

    artifact = workdir / "pipeline-definition.json"
    assert buildspec()["artifacts"]["files"] == ["pipeline-definition.json"]
    definition = json.loads(artifact.read_text())
    sagemaker = client("sagemaker", moto_endpoint)
    deployed = sagemaker.describe_pipeline(PipelineName="churn-p-abc123")
    assert deployed["PipelineDefinition"] == artifact.read_text()
    assert deployed["RoleArn"] == ROLE
    assert deployed["PipelineDescription"] == "Linear Learner pipeline deployed by CodeBuild 0123abcd"
    register = next(s for s in definition["Steps"] if s["Name"] == "QualityGate")["Arguments"]["IfSteps"][0]
    assert register["Arguments"]["ModelPackageGroupName"] == "churn-p-abc123"
    tags = sagemaker.list_tags(ResourceArn=deployed["PipelineArn"])["Tags"]
    assert {"Key": "sagemaker:project-name", "Value": "churn"} in tags

    s3 = client("s3", moto_endpoint)
    code = s3.list_objects_v2(Bucket="codebuild-artifacts", Prefix="churn-p-abc123/code/")
    keys = sorted((item["Key"].split("/", 3)[-1], item["Key"]) for item in code["Contents"])  # path in its bundle
    bundles = [repository_bundle(name, workdir) for name in ("preprocess", "evaluate")]
    # the two jobs' bundles file by file, and the serving containers' bundle as their sourcedir.tar.gz
    assert [name for name, _ in keys] == sorted([*(name for bundle in bundles for name, _ in bundle.files), SOURCEDIR])
    preprocess_key = dict(keys)["preprocess.py"]
    uploaded = s3.get_object(Bucket="codebuild-artifacts", Key=preprocess_key)["Body"].read()
    assert uploaded == (workdir / "preprocessing" / "preprocess.py").read_bytes()
    assert f"s3://codebuild-artifacts/{preprocess_key.rsplit('/', 1)[0]}/" in artifact.read_text()
    executions = sagemaker.list_pipeline_executions(PipelineName="churn-p-abc123")["PipelineExecutionSummaries"]
    assert len(executions) == 1
    execution_arn = executions[0]["PipelineExecutionArn"]
    started = sagemaker.list_pipeline_parameters_for_execution(PipelineExecutionArn=execution_arn)
    [version] = [p["Value"] for p in started["PipelineParameters"] if p["Name"] == "DataVersion"]
    assert len(version) == 16  # the fingerprint of the object under the default InputDataUrl


def test_a_failed_execution_fails_the_build(
    moto_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The buildspec's start command, verbatim, waits: an execution ending Failed makes the build fail."""
    from moto.sagemaker import models

    original = models.FakePipelineExecution.__init__

    def failing(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.pipeline_execution_status = "Failed"

    monkeypatch.setattr(models.FakePipelineExecution, "__init__", failing)
    client("sagemaker", moto_endpoint).create_pipeline(
        PipelineName="failing-p-1", PipelineDefinition='{"Version": "2020-12-01", "Steps": []}', RoleArn=ROLE
    )
    start = [c for c in buildspec()["phases"]["build"]["commands"] if "START_PIPELINE_EXECUTION" in c]
    assert len(start) == 1 and "--wait" in start[0]
    environment = {
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "AWS_ENDPOINT_URL": moto_endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "SAGEMAKER_PIPELINE_ROLE_ARN": ROLE,
        "SAGEMAKER_PROJECT_NAME": "failing",
        "SAGEMAKER_PROJECT_ID": "p-1",
        "START_PIPELINE_EXECUTION": "true",
        "PIPELINE_POLL_SECONDS": "0",
    }
    result = run_buildspec({"phases": {"build": {"commands": start}}}, tmp_path, environment)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "started arn:aws:sagemaker:us-east-1:123456789012:pipeline/failing-p-1/execution/" in result.stdout
    assert "step Train: ClientError: feature_dim mismatch" in result.stderr


def test_a_typo_in_a_command_fails_the_build(tmp_path: Path) -> None:
    spec = {"phases": {"build": {"commands": ["llpipe definition --help > /dev/null", "llpipe upsret"]}}}
    result = run_buildspec(spec, tmp_path, {"PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"})
    assert result.returncode != 0
    assert "invalid choice: 'upsret'" in result.stderr


def test_installation_lines_are_the_only_ones_skipped() -> None:
    spec = buildspec()
    all_commands = [c for phase in PHASES for c in spec["phases"].get(phase, {}).get("commands", [])]
    kept = script(spec)
    skipped = [c for c in all_commands if c not in kept]
    assert skipped and all(any(word in c for word in INSTALLING) for c in skipped)
    assert all(c in spec["phases"]["install"]["commands"] for c in skipped)


def test_the_container_code_is_tested_on_the_image_s_python() -> None:
    """Before: CodeBuild had Python 3.11 only, so the container code's tests skipped there (no image environment):
    CI on AWS never ran the code on the Python 3.9 and libraries the image runs. Now the install phase installs the
    image's Python and builds its pinned environment, and the tests run with CI=true, where a missing environment
    fails instead of skipping (tests/conftest.py)."""
    from pipeline.core.images import DEFAULT_PROCESSING_IMAGE

    install = buildspec()["phases"]["install"]["commands"]
    python = next(c for c in install if c.startswith("pyenv install"))
    assert python.split()[-1].startswith(DEFAULT_PROCESSING_IMAGE.python + ".")
    assert install.index(python) < install.index("CI=true llpipe env build")
    assert "CI=true python -m pytest -q -n 2" in buildspec()["phases"]["pre_build"]["commands"]


# ---------------------------------------------------------------- IAM documents next to the buildspec

STEP_ACTIONS = {
    "Processing": {"sagemaker:CreateProcessingJob", "sagemaker:DescribeProcessingJob", "sagemaker:StopProcessingJob"},
    "Training": {"sagemaker:CreateTrainingJob", "sagemaker:DescribeTrainingJob", "sagemaker:StopTrainingJob"},
    "Transform": {"sagemaker:CreateTransformJob", "sagemaker:DescribeTransformJob", "sagemaker:StopTransformJob"},
    "Model": {"sagemaker:CreateModel", "sagemaker:DescribeModel"},
    "RegisterModel": {"sagemaker:CreateModelPackage", "sagemaker:DescribeModelPackage"},
    # the analyzer's processing job; the approved version's baseline is looked up as the pipeline role
    "QualityCheck": {
        "sagemaker:CreateProcessingJob",
        "sagemaker:DescribeProcessingJob",
        "sagemaker:ListModelPackages",
        "sagemaker:DescribeModelPackage",
    },
}


def allowed_actions(name: str) -> set[str]:
    policy = json.loads((REPOSITORY / "iam" / name).read_text())
    assert policy["Version"] == "2012-10-17"
    actions: set[str] = set()
    for statement in policy["Statement"]:
        assert statement["Effect"] == "Allow" and statement["Resource"]
        listed = statement["Action"]
        actions.update([listed] if isinstance(listed, str) else listed)
    return actions


def test_pipeline_role_allows_every_job_the_definition_runs(build: tuple) -> None:
    workdir, _ = build
    definition = json.loads((workdir / "pipeline-definition.json").read_text())
    types = {step["Type"] for step in definition["Steps"]}
    types |= {s["Type"] for c in definition["Steps"] if c["Type"] == "Condition" for s in c["Arguments"]["IfSteps"]}
    allowed = allowed_actions("pipeline-role-policy.json")
    for step_type in types - {"Condition", "Fail"}:
        assert STEP_ACTIONS[step_type] <= allowed, step_type
    assert {"iam:PassRole", "s3:GetObject", "s3:PutObject", "ecr:BatchGetImage", "logs:PutLogEvents"} <= allowed
    assert "sagemaker:StartPipelineExecution" in allowed  # the default scheduler role is the pipeline role


def test_codebuild_role_allows_what_upsert_and_start_send() -> None:
    # the operations tests/test_sagemaker_ops.py pins for upsert (create and update) and start
    sent = {"s3:PutObject", "sagemaker:CreatePipeline", "sagemaker:UpdatePipeline", "sagemaker:ListTags"}
    sent |= {"sagemaker:AddTags", "sagemaker:DescribePipeline", "sagemaker:StartPipelineExecution", "iam:PassRole"}
    sent |= {"s3:ListBucket"}  # start lists the objects under InputDataUrl for DataVersion
    # start --wait: the polls, then the cost of each job step (tests/test_sagemaker_inspect.py)
    sent |= {"sagemaker:DescribePipelineExecution", "sagemaker:ListPipelineExecutionSteps"}
    sent |= {"sagemaker:DescribeProcessingJob", "sagemaker:DescribeTrainingJob", "sagemaker:DescribeTransformJob"}
    assert sent <= allowed_actions("codebuild-role-policy.json")


def test_scheduler_roles_allow_the_action_of_the_schedules_universal_target() -> None:
    from pipeline.sagemaker.schedule import START_PIPELINE_EXECUTION_TARGET

    service, action = START_PIPELINE_EXECUTION_TARGET.split(":")[-2:]
    needed = f"{service}:{action[0].upper()}{action[1:]}"
    assert needed == "sagemaker:StartPipelineExecution"
    policy = json.loads((REPOSITORY / "iam" / "scheduler-role-policy.json").read_text())
    [statement] = policy["Statement"]
    assert statement["Resource"] == "arn:aws:sagemaker:${AWS_REGION}:${AWS_ACCOUNT_ID}:pipeline/${PIPELINE_NAME}"
    for name in ("scheduler-role-policy.json", "pipeline-role-policy.json"):  # a dedicated role, or the default
        assert needed in allowed_actions(name)
