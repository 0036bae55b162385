"""Content-hashed code bundles: the flat folder of scripts each processing job runs.

A bundle is addressed by the SHA-256 of its files (names and bytes), so the same code always lands at the same
S3 prefix (``s3://<bucket>/<pipeline-name>/code/<sha256>/``): definitions are deterministic, uploads are idempotent,
and a code change changes the step's inputs, which invalidates SageMaker's step cache exactly when it should.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]

# bundle name -> (entry script, modules it imports), paths relative to the repository root
BUNDLE_SOURCES: dict[str, tuple[str, ...]] = {
    "preprocess": ("preprocessing/preprocess.py", "preprocessing/recordio.py"),
    "evaluate": (
        "evaluation/evaluate.py",
        "evaluation/champion.py",
        "evaluation/linear_learner_model.py",
        "preprocessing/recordio.py",
    ),
}


@dataclass(frozen=True)
class CodeBundle:
    """Files of one processing job's code, flat (file name -> bytes); the first file is the entry script."""

    entry_point: str
    files: tuple[tuple[str, bytes], ...]

    @property
    def digest(self) -> str:
        """SHA-256 over the sorted (name, length, bytes) of every file: stable and unambiguous."""
        sha = hashlib.sha256()
        for name, content in sorted(self.files):
            encoded = name.encode("utf-8")
            sha.update(len(encoded).to_bytes(8, "big") + encoded)
            sha.update(len(content).to_bytes(8, "big") + content)
        return sha.hexdigest()

    def s3_prefix(self, pipeline_prefix: str) -> str:
        """The S3 prefix the bundle is uploaded to and mounted from, ending with a slash."""
        return f"{pipeline_prefix}/code/{self.digest}/"

    def uploads(self, pipeline_prefix: str) -> dict[str, bytes]:
        """Every object to upload: S3 URI -> bytes."""
        prefix = self.s3_prefix(pipeline_prefix)
        return {prefix + name: content for name, content in self.files}


def build_bundle(sources: list[Path] | tuple[Path, ...]) -> CodeBundle:
    """Read the files into a flat bundle; the first is the entry point. Fails clearly on missing or clashing files."""
    files: dict[str, bytes] = {}
    for source in sources:
        source = Path(source)
        if source.name in files:
            raise ValueError(f"code bundle: two files named {source.name!r} would overwrite each other ({source})")
        try:
            files[source.name] = source.read_bytes()
        except FileNotFoundError:
            raise FileNotFoundError(
                f"code bundle: {source} does not exist (the pipeline definition needs it)"
            ) from None
    if not files:
        raise ValueError("code bundle: no files given")
    return CodeBundle(entry_point=Path(sources[0]).name, files=tuple(sorted(files.items())))


def repository_bundle(name: str, root: Path = REPOSITORY_ROOT) -> CodeBundle:
    """The bundle named in :data:`BUNDLE_SOURCES`, read from the repository."""
    return build_bundle([root / relative for relative in BUNDLE_SOURCES[name]])
