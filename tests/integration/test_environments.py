"""Processing images as environments: the table, the cached virtualenv (built once, atomically, under a lock,
reused offline), the approximate fallback that the run shows, and jobs that see only their code bundle."""

from __future__ import annotations

import io
import json
import sys
import threading
from pathlib import Path

import pytest
from rich.console import Console
from support.processing_jobs import processing_definition, run

from pipeline.api.execution import LocalExecution
from pipeline.cli.render.progress import step_table
from pipeline.cli.render.summary import print_summary, summarise
from pipeline.core.files import user_cache_dir
from pipeline.core.images import DEFAULT_PROCESSING_IMAGE, PROCESSING_IMAGES, ProcessingImage, image_for_uri
from pipeline.definition.code_bundles import repository_bundle
from pipeline.definition.config import load_config
from pipeline.definition.steps.common import sklearn_image
from pipeline.local.environments import (
    EnvironmentBuildError,
    ImageEnvironments,
    JobEnvironment,
    find_python,
)
from pipeline.local.jobs import local_runners
from pipeline.local.s3 import LocalS3
from pipeline.local.workdir import Workdir

THIS_PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"
# an image whose environment builds in a second, offline: this interpreter's Python, no libraries to install
BARE = ProcessingImage("bare", "1.0-1", "bare-image", THIS_PYTHON, (), (("LANG", "C.UTF-8"),))


def test_the_definition_names_an_image_of_the_table() -> None:
    uri = sklearn_image(load_config(env={}))
    assert uri.endswith("/sagemaker-scikit-learn:1.2-1-cpu-py3")
    assert image_for_uri(uri) is DEFAULT_PROCESSING_IMAGE
    assert image_for_uri(uri.replace("1.2-1", "1.0-1")) is None
    assert DEFAULT_PROCESSING_IMAGE.python == "3.9"
    assert dict(DEFAULT_PROCESSING_IMAGE.pins) == {
        "numpy": "1.24.1",
        "pandas": "1.1.3",
        "scipy": "1.8.0",
        "scikit-learn": "1.2.1",
        "pyarrow": "14.0.1",
        "python-dateutil": "2.8.1",
        "six": "1.15.0",
        "boto3": "1.28.57",  # Evaluate's champion lookup
        "botocore": "1.31.57",
        "urllib3": "1.26.17",
    }
    assert len({image.key for image in PROCESSING_IMAGES}) == len(PROCESSING_IMAGES)


def test_the_cache_dir_follows_llpipe_cache_dir_then_xdg(tmp_path: Path) -> None:
    assert user_cache_dir({"LLPIPE_CACHE_DIR": str(tmp_path)}) == tmp_path
    assert user_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "llpipe"
    assert user_cache_dir({}) == Path.home() / ".cache" / "llpipe"


def test_find_python_skips_candidates_that_do_not_run_as_that_version(tmp_path: Path) -> None:
    shim = tmp_path / "bin" / "python3.7"
    shim.parent.mkdir()
    shim.write_text("#!/bin/sh\necho 'pyenv: python3.7: command not found' >&2\nexit 127\n")
    shim.chmod(0o755)
    environ = {"PATH": str(shim.parent), "PYENV_ROOT": str(tmp_path / "no-pyenv")}
    assert find_python("3.7", environ) is None
    assert find_python(THIS_PYTHON, environ) == Path(sys.executable)


def test_built_once_under_a_lock_then_reused_without_building(tmp_path: Path) -> None:
    environments = ImageEnvironments(tmp_path)
    reports: list[list[str]] = [[], []]
    results: list[JobEnvironment] = []

    def ensure(index: int) -> None:
        results.append(environments.ensure(BARE, reports[index].append, "bare-image:1.0-1"))

    threads = [threading.Thread(target=ensure, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 2 and {result.location for result in results} == {str(environments.folder(BARE))}
    built = [result for result in results if result.build_seconds is not None]
    assert len(built) == 1, "two runs at once build the environment once"
    assert sum(any(line.startswith("building the bare-1.0-1") for line in lines) for lines in reports) == 1
    assert all(result.exact and result.python_version.startswith(THIS_PYTHON) for result in results)
    envs = sorted(path.name for path in (tmp_path / "envs").iterdir() if not path.name.endswith(".lock"))
    assert envs == [environments.folder(BARE).name], "no half-built folder is left behind"

    def no_build(version: str) -> Path:
        raise AssertionError("a cached environment is reused without looking for a Python")

    again = ImageEnvironments(tmp_path, locate_python=no_build).ensure(BARE)
    assert again.build_seconds is None and again.python == environments.folder(BARE) / "bin" / "python"
    assert again.variables == {"LANG": "C.UTF-8"}


def test_a_failed_build_leaves_its_log_and_no_environment(tmp_path: Path) -> None:
    broken = tmp_path / "python-broken"  # a Python whose venv module fails, as a build fails without network
    broken.write_text("#!/bin/sh\necho 'Error: no space left for the virtualenv' >&2\nexit 1\n")
    broken.chmod(0o755)
    environments = ImageEnvironments(tmp_path / "cache", locate_python=lambda version: broken)
    with pytest.raises(EnvironmentBuildError, match="creating a virtualenv from .* failed: Error: no space") as failure:
        environments.ensure(BARE)
    log = Path(str(failure.value).rsplit("(log: ", 1)[1].rstrip(")"))
    assert "no space left for the virtualenv" in log.read_text()
    assert not environments.folder(BARE).exists()
    assert [path for path in (tmp_path / "cache" / "envs").iterdir() if ".building-" in path.name] == []
    fallback = environments.for_image_uri("123.dkr.ecr.us-east-1.amazonaws.com/bare-image:1.0-1")
    assert fallback.exact is False and fallback.image is None  # not in the table: this interpreter, approximate
    assert fallback.python == Path(sys.executable) and "not in the table" in fallback.reason


SKLEARN_URI = "683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-scikit-learn:1.2-1-cpu-py3"


def sklearn_job(workdir: Path, script: str, *, environments: ImageEnvironments, bundle: dict[str, bytes]):
    """The processing definition of test_local_jobs, on the scikit-learn image, with the given code bundle."""
    s3 = LocalS3(workdir / "s3")
    for name, content in bundle.items():
        s3.put_bytes(f"s3://bkt/code/{name}", content)
    s3.put_bytes("s3://bkt/data/a.csv", b"x\n")
    definition = processing_definition(instances=1)
    arguments = definition["Steps"][0]["Arguments"]
    arguments["AppSpecification"]["ImageUri"] = SKLEARN_URI
    arguments["AppSpecification"]["ContainerEntrypoint"] = ["python3", f"/opt/ml/processing/input/code/{script}"]
    arguments["AppSpecification"]["ContainerArguments"] = ["--help"]
    runners = local_runners(Workdir(workdir), region="us-east-1", account="111122223333", environments=environments)
    return run(workdir, definition, runners)


def test_without_a_matching_python_the_job_runs_here_and_the_run_says_so(tmp_path: Path) -> None:
    environments = ImageEnvironments(tmp_path / "cache", locate_python=lambda version: None)
    bundle = dict(repository_bundle("evaluate").files)  # evaluate.py and the packages it imports
    record, s3 = sklearn_job(tmp_path, "evaluate.py", environments=environments, bundle=bundle)
    assert record.status == "Succeeded", record.failure_reason
    environment = json.loads((record.folder / "steps" / "Job" / "environment.json").read_text())
    assert environment["exact"] is False and environment["image"] == "sklearn-1.2-1"
    assert environment["python"] == ".".join(map(str, sys.version_info[:3]))
    assert environment["interpreter"] == sys.executable
    assert environment["reason"].startswith("no Python 3.9 found")
    [note] = record.steps["Job"].notes
    assert note.startswith("approximate environment: Python 3.") and "no Python 3.9 found" in note
    console = Console(file=io.StringIO(), width=200)
    console.print(step_table(record))
    assert "approximate environment" in console.file.getvalue()
    summary = summarise(LocalExecution(record, s3), render_plots=False)
    assert summary["notes"] == {"Job": [note]}
    console = Console(file=io.StringIO(), width=300)
    print_summary(summary, console)
    assert f"Job: {note}" in console.file.getvalue()


def test_a_bundle_without_its_sibling_module_fails_with_the_containers_error(
    tmp_path: Path, image_environment: JobEnvironment
) -> None:
    """Only the code bundle is importable, as in the container: not the repository's packages."""
    missing = "containerlib/recordio/reader.py"
    bundle = {name: content for name, content in repository_bundle("evaluate").files if name != missing}
    record, _ = sklearn_job(tmp_path, "evaluate.py", environments=ImageEnvironments.default(), bundle=bundle)
    assert record.status == "Failed"
    reason = record.steps["Job"].failure_reason
    assert reason == "algo-1 exited with code 1: ModuleNotFoundError: No module named 'containerlib.recordio.reader'"
    environment = json.loads((record.folder / "steps" / "Job" / "environment.json").read_text())
    assert environment["exact"] is True and environment["interpreter"] == str(image_environment.python)


def test_the_job_sees_the_images_variables_and_not_this_process_python_path(
    tmp_path: Path, image_environment: JobEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parents[2]))
    script = (
        "import json, os, sys\n"
        "target = [a.split('=', 1)[1] for a in sys.argv if a.startswith('--output-dir=')][0]\n"
        "names = ('PYTHONPATH', 'LANG', 'LC_ALL', 'PYTHONDONTWRITEBYTECODE', 'GREETING')\n"
        "found = {name: os.environ.get(name) for name in names}\n"
        "found.update(cwd=os.getcwd(), path=sys.path, version=list(sys.version_info[:2]))\n"
        "open(os.path.join(target, 'seen.json'), 'w').write(json.dumps(found))\n"
    )
    s3 = LocalS3(tmp_path / "s3")
    s3.put_bytes("s3://bkt/code/probe.py", script.encode())
    s3.put_bytes("s3://bkt/data/a.csv", b"x\n")
    definition = processing_definition(instances=1)
    arguments = definition["Steps"][0]["Arguments"]
    arguments["AppSpecification"]["ImageUri"] = SKLEARN_URI
    arguments["AppSpecification"]["ContainerEntrypoint"] = ["python3", "/opt/ml/processing/input/code/probe.py"]
    arguments["AppSpecification"]["ContainerArguments"] = ["--output-dir=/opt/ml/processing/output"]
    environments = ImageEnvironments.default()
    runners = local_runners(Workdir(tmp_path), region="us-east-1", account="1", environments=environments)
    record, s3 = run(tmp_path, definition, runners)
    assert record.status == "Succeeded", record.failure_reason
    [uri] = s3.list_objects("s3://bkt/out/")
    seen = json.loads(s3.path(uri).read_text())
    assert seen["PYTHONPATH"] is None and seen["GREETING"] == "hi"
    assert (seen["LANG"], seen["LC_ALL"], seen["PYTHONDONTWRITEBYTECODE"]) == ("C.UTF-8", "C.UTF-8", "1")
    assert seen["version"] == [3, 9]
    assert Path(seen["cwd"]).name == "algo-1"  # the sandbox root stands for the container's /
    repository = str(Path(__file__).parents[2])
    assert not [entry for entry in seen["path"] if entry.startswith(repository)]


def test_llpipe_env_show_and_build_name_the_cached_environment(
    image_environment: JobEnvironment, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    from pipeline.cli import main

    assert main(["env", "build", "--json"]) == 0  # already built: nothing to do, no network
    [entry] = json.loads(capsys.readouterr().out)
    assert entry["built"] is True and entry["environment"]["exact"] is True
    assert entry["location"] == image_environment.location
    monkeypatch.setenv("LLPIPE_CACHE_DIR", str(tmp_path))
    assert main(["env", "show"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("sklearn-1.2-1: not built") and f"location: {tmp_path / 'envs'}" in out
