"""The definition is built once: reused while nothing that shapes it changed; rebuilt when the configuration, a code
bundle, a package version or the definition's source changed (the reuse without importing the SDK, in a fresh
interpreter: tests/integration/test_definition_cache_reuse.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.core.verified import DamagedCacheEntry
from pipeline.definition import cache as definition_cache
from pipeline.definition.build import Bundles, build_definition
from pipeline.definition.code_bundles import build_bundle
from pipeline.definition.config import PipelineConfig
from pipeline.definition.schema import default_schema_uri


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """Build calls recorded; the cache in a folder of this test."""
    monkeypatch.setenv("LLPIPE_DEFINITION_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LLPIPE_DEFINITION_CACHE", raising=False)
    return []


def cached(
    config: PipelineConfig, digests: tuple[str, ...], calls: list[str], text: str = '{"v": 1, "Steps": []}\n'
) -> str:
    def build() -> str:
        calls.append(text)
        return text

    return definition_cache.cached_definition(config, digests, build)


def test_each_input_of_the_key_rebuilds(counted: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = PipelineConfig()
    assert cached(config, ("a", "b"), counted) == '{"v": 1, "Steps": []}\n' and len(counted) == 1
    assert (
        cached(config, ("a", "b"), counted, '{"v": 2, "Steps": []}\n') == '{"v": 1, "Steps": []}\n'
        and len(counted) == 1
    ), "reused"
    cached(PipelineConfig(pipeline_name="other"), ("a", "b"), counted)
    assert len(counted) == 2, "config value"
    cached(config, ("a", "c"), counted)
    assert len(counted) == 3, "code bundle digest"
    versions = definition_cache.package_versions()
    assert any(name.startswith("sagemaker") for name in versions) and "llpipe" in versions
    monkeypatch.setattr(definition_cache, "package_versions", lambda: {**versions, "sagemaker-core": "0.0.0"})
    cached(config, ("a", "b"), counted)
    assert len(counted) == 4, "package version"
    monkeypatch.setattr(definition_cache, "package_versions", lambda: versions)
    cached(config, ("a", "b"), counted)
    assert len(counted) == 4, "back to the first key"
    monkeypatch.setenv("SAGEMAKER_USER_CONFIG_OVERRIDE", str(tmp_path / "sdk.yaml"))
    (tmp_path / "sdk.yaml").write_text("SchemaVersion: '1.0'\n")
    cached(config, ("a", "b"), counted)
    assert len(counted) == 5, "SDK config file"


def test_the_source_of_the_package_is_in_the_key(tmp_path: Path) -> None:
    package = tmp_path / "pipeline"
    (package / "local").mkdir(parents=True)
    (package / "definition.py").write_text("A = 1\n")
    (package / "local" / "x.py").write_text("B = 1\n")
    first = definition_cache.source_digest(package)
    (package / "definition.py").write_text("A = 2\n")
    assert definition_cache.source_digest(package) != first
    assert definition_cache.source_digest(definition_cache.PACKAGE_ROOT) == definition_cache.source_digest()
    assert (definition_cache.PACKAGE_ROOT / "definition" / "build.py").is_file()


def test_a_damaged_entry_is_rebuilt_and_off_builds_every_time(counted: list[str], monkeypatch) -> None:
    config = PipelineConfig()
    cached(config, ("a",), counted)
    (entry,) = definition_cache.cache_dir().glob("*.json")
    entry.write_text('{"truncated": ')
    with pytest.warns(DamagedCacheEntry, match=f"cache entry {entry} is damaged .*rebuilding it"):
        assert cached(config, ("a",), counted) == '{"v": 1, "Steps": []}\n' and len(counted) == 2
    assert json.loads(json.loads(entry.read_text())["definition"]) == {"v": 1, "Steps": []}
    monkeypatch.setenv("LLPIPE_DEFINITION_CACHE", "off")
    cached(config, ("a",), counted)
    assert len(counted) == 3


def test_a_valid_json_entry_that_is_not_this_pipeline_is_rebuilt(counted: list[str]) -> None:
    """Before: any valid JSON under the key was served by `llpipe definition` (and would be deployed by upsert):
    another pipeline's definition copied there, or an entry edited by hand. Now an entry carries its key and its
    definition's digest, and must be a pipeline definition."""
    config = PipelineConfig()
    cached(config, ("a",), counted)
    (entry,) = definition_cache.cache_dir().glob("*.json")
    stored = json.loads(entry.read_text())
    damaged = [
        '{"Version": "2020-12-01", "Steps": []}',  # a bare definition, not an entry
        json.dumps({**stored, "definition": '{"v": 666, "Steps": []}'}),  # edited: the digest no longer matches
        json.dumps({**stored, "key": "0" * 64}),  # another key's entry copied over
        json.dumps({**stored, "definition": "[]", "sha256": definition_cache._digest("[]")}),  # not a definition
    ]
    for number, text in enumerate(damaged, start=2):
        entry.write_text(text)
        with pytest.warns(DamagedCacheEntry, match=f"cache entry {entry} is damaged"):
            assert cached(config, ("a",), counted) == '{"v": 1, "Steps": []}\n' and len(counted) == number, text
        assert json.loads(entry.read_text()) == stored  # rebuilt and kept again


def test_a_changed_bundle_file_gives_a_definition_with_the_new_code(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LLPIPE_DEFINITION_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LLPIPE_DEFINITION_CACHE", raising=False)
    code = tmp_path / "code"
    code.mkdir()
    for name in ("preprocess.py", "recordio.py", "evaluate.py", "inference.py"):
        (code / name).write_text(f"# {name}\n")

    def bundles() -> Bundles:
        return Bundles(preprocess=build_bundle(code / "preprocess.py", [code / "recordio.py"], code),
                       evaluate=build_bundle(code / "evaluate.py", [code / "recordio.py"], code),
                       serving=build_bundle(code / "inference.py", [code / "recordio.py"], code))  # fmt: skip

    before = bundles()
    first = build_definition(PipelineConfig(), before)
    assert before.preprocess.digest in first.definition_json
    assert build_definition(PipelineConfig(), bundles()).definition_json == first.definition_json
    (code / "recordio.py").write_text("# changed\n")
    after = bundles()
    second = build_definition(PipelineConfig(), after)
    assert after.preprocess.digest in second.definition_json and after.evaluate.digest in second.definition_json
    assert before.preprocess.digest not in second.definition_json, "never the stale definition"
    prefix = PipelineConfig().pipeline_prefix
    assert set(second.uploads) == set(after.preprocess.uploads(prefix)) | set(after.evaluate.uploads(prefix)) | {
        default_schema_uri(prefix),  # the built-in schema that decides nothing
        after.serving.tarball_uri(prefix),  # the serving containers' sourcedir.tar.gz
    }
