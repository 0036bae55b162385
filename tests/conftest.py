"""Shared pytest fixtures."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest


@pytest.fixture(scope="session")
def record_protobuf(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The aialgs.data protobuf messages compiled from tests/recordio.proto: an oracle independent of the codec."""
    out = tmp_path_factory.mktemp("record_protobuf")
    proto_dir = Path(__file__).parent
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{proto_dir}", f"--python_out={out}", "recordio.proto"],
        check=True,
    )
    spec = importlib.util.spec_from_file_location("recordio_pb2", out / "recordio_pb2.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
