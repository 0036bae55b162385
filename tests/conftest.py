"""Shared pytest fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator
from types import ModuleType

import pytest
from container import Container
from protobuf_oracle import compile_record_protobuf

from pipeline.core.images import DEFAULT_PROCESSING_IMAGE
from pipeline.local.environments import EnvironmentBuildError, ImageEnvironments, JobEnvironment


@pytest.fixture(scope="session")
def record_protobuf(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The aialgs.data protobuf messages compiled from tests/recordio.proto: an oracle independent of the codec."""
    return compile_record_protobuf(tmp_path_factory.mktemp("record_protobuf"))


@pytest.fixture(scope="session")
def image_environment() -> JobEnvironment:
    """The scikit-learn image's environment, from the shared cache dir (built once, under a lock, if missing).

    Where it cannot be built (no Python 3.9, no network) the tests that need it skip, except on CI (CI=true), where
    that is a failure: CI's machine has Python 3.9 and must run the container code on it."""
    try:
        environment = ImageEnvironments.default().ensure(DEFAULT_PROCESSING_IMAGE)
    except EnvironmentBuildError as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the {DEFAULT_PROCESSING_IMAGE.key} environment is required on CI: {error}")
        pytest.skip(f"the {DEFAULT_PROCESSING_IMAGE.key} environment is not available: {error}")
    assert environment.exact, environment.reason
    return environment


@pytest.fixture(scope="session")
def container(image_environment: JobEnvironment, tmp_path_factory: pytest.TempPathFactory) -> Container:
    """Runs the repository's code bundles as the scikit-learn image does."""
    return Container(image_environment, tmp_path_factory.mktemp("code"))


@pytest.fixture(scope="session", autouse=True)
def definition_cache_of_this_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Definitions cached by this test session stay in it: never the user's cache, never a previous run's. Only the
    definitions move: the image environments stay in the shared cache, built once per machine (minutes).

    The xdist workers of one session share the folder (the run's base temp folder, above each worker's), so a
    definition built by one worker is read by the other instead of built again (seconds each; entries are written
    atomically, so a concurrent reader sees a whole entry or none)."""
    previous = os.environ.get("LLPIPE_DEFINITION_CACHE_DIR")
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / "llpipe-definitions"
        shared.mkdir(exist_ok=True)
    else:
        shared = tmp_path_factory.mktemp("llpipe-definitions")
    os.environ["LLPIPE_DEFINITION_CACHE_DIR"] = str(shared)
    yield
    if previous is None:
        os.environ.pop("LLPIPE_DEFINITION_CACHE_DIR", None)
    else:
        os.environ["LLPIPE_DEFINITION_CACHE_DIR"] = previous


# Modules whose module-scoped fixtures are expensive (a real local run, a served model, a definition built by the
# SDK, a CodeBuild run): their tests run on one xdist worker (`-n 2 --dist loadgroup`, as `make test` runs them), so
# each fixture is set up once per session instead of once per worker that happens to get one of the module's tests.
# Every other test is still dealt out one by one.
GROUPED_MODULES = frozenset(
    {
        "test_api",
        "test_buildspec",
        "test_definition",
        "test_deploy_local",
        "test_hostile_second",
        "test_linear_learner_jobs",
        "test_monitor",
        "test_sagemaker_inspect",
        "test_sagemaker_ops",
        "test_serve",
        "test_tuning_definition",
        "test_tuning_local",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests of GROUPED_MODULES with their module's xdist group."""
    for item in items:
        module = item.module.__name__ if getattr(item, "module", None) else ""
        if module in GROUPED_MODULES:
            item.add_marker(pytest.mark.xdist_group(module))
