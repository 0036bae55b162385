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
    definitions move: the image environments stay in the shared cache, built once per machine (minutes)."""
    previous = os.environ.get("LLPIPE_DEFINITION_CACHE_DIR")
    os.environ["LLPIPE_DEFINITION_CACHE_DIR"] = str(tmp_path_factory.mktemp("llpipe-definitions"))
    yield
    if previous is None:
        os.environ.pop("LLPIPE_DEFINITION_CACHE_DIR", None)
    else:
        os.environ["LLPIPE_DEFINITION_CACHE_DIR"] = previous
