"""Shared pytest fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator
from types import ModuleType

import pytest
from protobuf_oracle import compile_record_protobuf


@pytest.fixture(scope="session")
def record_protobuf(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The aialgs.data protobuf messages compiled from tests/recordio.proto: an oracle independent of the codec."""
    return compile_record_protobuf(tmp_path_factory.mktemp("record_protobuf"))


@pytest.fixture(scope="session", autouse=True)
def definition_cache_of_this_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Definitions cached by this test session stay in it: never the user's cache, never a previous run's."""
    previous = os.environ.get("LLPIPE_CACHE_DIR")
    os.environ["LLPIPE_CACHE_DIR"] = str(tmp_path_factory.mktemp("llpipe-cache"))
    yield
    if previous is None:
        os.environ.pop("LLPIPE_CACHE_DIR", None)
    else:
        os.environ["LLPIPE_CACHE_DIR"] = previous
