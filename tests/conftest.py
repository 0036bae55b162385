"""Shared pytest fixtures."""

from __future__ import annotations

from types import ModuleType

import pytest
from protobuf_oracle import compile_record_protobuf


@pytest.fixture(scope="session")
def record_protobuf(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The aialgs.data protobuf messages compiled from tests/recordio.proto: an oracle independent of the codec."""
    return compile_record_protobuf(tmp_path_factory.mktemp("record_protobuf"))
