"""Build the definition once: the JSON is kept on disk under a key over everything that shapes it.

Building imports the SageMaker SDK and runs it (seconds); a hit reads one file and imports nothing of the SDK. The
key is the SHA-256 of: the configuration, the code bundle digests, the versions of every installed ``sagemaker*``
distribution and of boto3/botocore/llpipe, the source of every module of the ``pipeline`` package (which holds
the definition and its helpers), the SDK's user/admin config files and ``SAGEMAKER_*`` variables, and the Python
version. A change to any of them gives a new key, so a stale definition is never reused; old entries are simply
never read again. An entry holds its key and the digest of its definition: one that does not match (damaged, or
another file put there) is rebuilt, with a warning naming it. ``LLPIPE_DEFINITION_CACHE=off`` builds every time;
``LLPIPE_DEFINITION_CACHE_DIR`` (or ``LLPIPE_CACHE_DIR``) moves it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from pipeline.core.files import user_cache_dir, write_text_atomically
from pipeline.core.verified import warn_damaged

FORMAT = "llpipe-definition-cache/2"
PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # the pipeline package: the definition and everything it imports
SDK_CONFIG_FILES = (  # read by the SDK's intelligent-defaults loader when present
    Path("/etc/xdg/sagemaker/config.yaml"),
    Path.home() / ".config" / "sagemaker" / "config.yaml",
)
VERSIONED = ("boto3", "botocore", "llpipe")  # besides every sagemaker* distribution
_NAME = re.compile(r"^Name:[ \t]*(.*?)[ \t]*\r?$", re.MULTILINE)


def enabled(env: Mapping[str, str] = os.environ) -> bool:
    return env.get("LLPIPE_DEFINITION_CACHE", "on").strip().lower() not in ("off", "0", "false", "no")


def cache_dir(env: Mapping[str, str] = os.environ) -> Path:
    """``$LLPIPE_DEFINITION_CACHE_DIR``, else ``definitions/`` in the user cache dir (``pipeline.core.files``)."""
    if env.get("LLPIPE_DEFINITION_CACHE_DIR"):
        return Path(env["LLPIPE_DEFINITION_CACHE_DIR"]).expanduser()
    return user_cache_dir(env) / "definitions"


def package_versions() -> dict[str, str]:
    """Versions of the distributions that shape the definition, read from their metadata (no import). A
    distribution's name is read from its metadata's ``Name:`` header line: parsing all of every installed
    distribution's metadata as email headers to find the few wanted cost a third of a CPU-second a run."""
    versions = {}
    for distribution in metadata.distributions():
        text = distribution.read_text("METADATA") or distribution.read_text("PKG-INFO") or ""
        found = _NAME.search(text.split("\n\n", 1)[0])  # the headers end at the first empty line
        name = (found.group(1) if found else "").lower().replace("_", "-")
        if name.startswith("sagemaker") or name in VERSIONED:
            versions[name] = distribution.version
    return dict(sorted(versions.items()))


def source_digest(root: Path = PACKAGE_ROOT) -> str:
    """SHA-256 over the names and bytes of every ``.py`` file of the package."""
    sha = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        sha.update(path.relative_to(root).as_posix().encode() + b"\0")
        sha.update(hashlib.sha256(path.read_bytes()).digest())
    return sha.hexdigest()


def _sdk_settings(env: Mapping[str, str]) -> dict[str, Any]:
    files = [
        Path(env[name])
        for name in ("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", "SAGEMAKER_USER_CONFIG_OVERRIDE")
        if env.get(name)
    ]
    contents = {}
    for path in (*SDK_CONFIG_FILES, *files):
        targets = sorted(path.rglob("*.yaml")) if path.is_dir() else [path]
        for target in targets:
            if target.is_file():
                contents[str(target)] = hashlib.sha256(target.read_bytes()).hexdigest()
    variables = {name: value for name, value in env.items() if name.startswith("SAGEMAKER_")}
    return {"files": contents, "variables": dict(sorted(variables.items()))}


def cache_key(config: Any, bundle_digests: Sequence[str], env: Mapping[str, str] = os.environ) -> str:
    """The key of the definition ``config`` (a PipelineConfig) and the bundles give in this environment."""
    shape = {
        "format": FORMAT,
        "config": dataclasses.asdict(config),
        "bundles": list(bundle_digests),
        "packages": package_versions(),
        "source": source_digest(),
        "sdk": _sdk_settings(env),
        "python": list(sys.version_info[:2]),
    }
    return hashlib.sha256(json.dumps(shape, sort_keys=True, default=str).encode()).hexdigest()


def cached_definition(
    config: Any, bundle_digests: Sequence[str], build: Callable[[], str], env: Mapping[str, str] = os.environ
) -> str:
    """The definition JSON from the cache, or ``build()`` it and keep it (a write failure only costs the reuse)."""
    if not enabled(env):
        return build()
    key = cache_key(config, bundle_digests, env)
    path = cache_dir(env) / f"{key}.json"
    cached = read_entry(path, key)
    if cached is not None:
        return cached
    definition_json = build()
    entry = {"format": FORMAT, "key": key, "sha256": _digest(definition_json), "definition": definition_json}
    try:
        write_text_atomically(path, json.dumps(entry))  # a concurrent reader sees the whole file or none
    except OSError:
        pass
    return definition_json


def read_entry(path: Path, key: str) -> str | None:
    """The definition kept at ``path`` for ``key``, or None when missing or damaged: an entry must name its own key
    and carry the digest of its definition, which must be a pipeline definition (an object with ``Steps``). Once a
    valid JSON file that was not this pipeline was served by `llpipe definition` and would have been deployed."""
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
        definition_json = entry["definition"]
        if entry.get("key") != key:
            why = "written for another key"
        elif entry.get("sha256") != _digest(definition_json):
            why = "its definition does not match its digest"
        elif not isinstance(json.loads(definition_json).get("Steps"), list):
            why = "not a pipeline definition"
        else:
            return definition_json
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as error:
        why = f"not readable: {type(error).__name__}"
    warn_damaged(path, why)
    return None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
