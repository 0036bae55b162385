"""The definition cache seen from a fresh interpreter: a second build reuses the first without importing the SDK
(a subprocess, the only place where "not one sagemaker module imported" can be observed)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pipeline.definition.build import build_definition
from pipeline.definition.code_bundles import REPOSITORY_ROOT

BUILD = textwrap.dedent(
    """
    import hashlib, json, sys
    from pipeline.definition.config import load_config
    from pipeline.definition.build import build_definition

    built = build_definition(load_config(json.loads(sys.argv[1]), env={}))
    sdk = sorted(name for name in sys.modules if name == "sagemaker" or name.startswith("sagemaker."))
    print(json.dumps({"sha": hashlib.sha256(built.definition_json.encode()).hexdigest(), "sdk_modules": len(sdk),
                      "uploads": len(built.uploads)}))
    """
)


def build_in_subprocess(cache: Path, overrides: dict[str, str]) -> dict:
    env = {**os.environ, "LLPIPE_DEFINITION_CACHE_DIR": str(cache / "definitions")}
    env["PYTHONPATH"] = str(REPOSITORY_ROOT)
    env.pop("LLPIPE_DEFINITION_CACHE", None)
    result = subprocess.run([sys.executable, "-c", BUILD, json.dumps(overrides)], env=env, capture_output=True,
                            text=True, timeout=300, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_second_build_reuses_the_first_without_importing_the_sdk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first build and the config change run here (this process may have imported the SDK already: a fresh
    interpreter only adds seconds of imports); the reuse runs in a fresh interpreter, the only place where "not one
    sagemaker module imported" can be observed."""
    from pipeline.definition.config import load_config

    monkeypatch.setenv("LLPIPE_DEFINITION_CACHE_DIR", str(tmp_path / "definitions"))
    monkeypatch.delenv("LLPIPE_DEFINITION_CACHE", raising=False)
    built = build_definition(load_config({"pipeline_name": "cache-test"}, env={}))
    first = {"sha": hashlib.sha256(built.definition_json.encode()).hexdigest(), "uploads": len(built.uploads)}
    assert len(list((tmp_path / "definitions").glob("*.json"))) == 1, "the first build really built, and kept it"
    second = build_in_subprocess(tmp_path, {"pipeline_name": "cache-test"})
    assert second == {**first, "sdk_modules": 0}, "reused: same bytes, and not one sagemaker module imported"
    changed = build_definition(load_config({"pipeline_name": "cache-test-2"}, env={}))
    assert hashlib.sha256(changed.definition_json.encode()).hexdigest() != first["sha"], "a config change rebuilds"
    assert len(list((tmp_path / "definitions").glob("*.json"))) == 2
