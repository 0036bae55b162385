"""The pipeline definition builds offline: a fresh interpreter with networking refused and no AWS variable at all
builds it twice, byte for byte the same, and the same bytes as this process builds (a subprocess: the SDK's import
runs under the guard too)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from pipeline.definition.build import build_definition
from pipeline.definition.code_bundles import REPOSITORY_ROOT
from pipeline.definition.config import PipelineConfig

NETWORK_GUARD = textwrap.dedent(
    """
    import hashlib, socket, sys

    def refuse(*args, **kwargs):
        raise AssertionError(f"network call attempted: {args!r}")

    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse

    from pipeline.definition.config import load_config
    from pipeline.definition.build import build_definition

    config = load_config(env={})
    first = build_definition(config)
    second = build_definition(config)
    assert first.definition_json == second.definition_json, "two builds differ"
    assert first.uploads == second.uploads
    print(hashlib.sha256(first.definition_json.encode()).hexdigest())
    """
)


def test_builds_with_networking_disabled_and_no_credentials_twice_byte_identical() -> None:
    built = build_definition(PipelineConfig())
    # a fresh interpreter: the SDK import itself also runs under the guard, with no AWS variable at all
    home = Path(os.environ.get("TMPDIR", "/tmp")) / "llpipe-no-aws-home"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "PYTHONPATH": str(REPOSITORY_ROOT),
        "LLPIPE_DEFINITION_CACHE": "off",
    }  # both builds really build
    result = subprocess.run(
        [sys.executable, "-c", NETWORK_GUARD], env=env, capture_output=True, text=True, timeout=120, cwd=home
    )
    assert result.returncode == 0, result.stderr
    # same bytes as this process built, whatever this process's environment holds
    assert result.stdout.strip() == hashlib.sha256(built.definition_json.encode()).hexdigest()
    assert result.stderr == "", f"the SDK was not silent: {result.stderr}"
