"""Content-hashed code bundles: the entry script and the packages each processing job runs.

A bundle is in package form: the entry script at its root (``preprocess.py``, ``evaluate.py``; the definition's
entrypoint is ``/opt/ml/processing/input/code/<entry>``) and every module it imports at its repository path
(``preprocessing/...``, ``evaluation/...``, ``containerlib/...``) with the ``__init__.py`` of each package above it. The
container runs the entry as a script, so its folder is first on ``sys.path`` and every module uses plain package
imports, exactly as in the repository; a module left out of a bundle fails as ``ModuleNotFoundError`` locally as in
the container, since a package's modules are looked up in its own folder only.

A bundle is addressed by the SHA-256 of its files (paths and bytes), so the same code always lands at the same
S3 prefix (``s3://<bucket>/<pipeline-name>/code/<sha256>/``): definitions are deterministic, uploads are idempotent,
and a code change changes the step's inputs, which invalidates SageMaker's step cache exactly when it should.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
SOURCEDIR = "sourcedir.tar.gz"  # a serving bundle's one object: what the scikit-learn serving image downloads


def _modules(folder: str, *names: str) -> tuple[str, ...]:
    return tuple(f"{folder}/{name}.py" for name in names)


# what both jobs take from the container library, and what only Preprocess does (tables) or Evaluate (predictions)
SHARED = _modules(
    "containerlib", "names", "errors", "hosts", "exit_message", "file_errors", "stop_signals", "row_ids", "stable_hash"
)
CONTENT_TYPES = _modules("containerlib", "content_types")
# a step's own MLflow run, logged from inside its job (s3_uri: an S3 artifact root)
MLFLOW_REST = _modules("containerlib", "mlflow_rest", "s3_uri")
RECORDIO = _modules(
    "containerlib/recordio", "wire", "varints", "writer", "framing", "fast_decode", "protobuf", "reader"
)
TABLES = (
    *_modules("containerlib", "prefetch", "stable_hash", "encoding", "time_text"),
    *_modules("containerlib/tables", "files", "header", "csv_reader", "csv_text", "parquet_reader", "parquet_types"),
    *_modules("containerlib/tables", "chunks", "raw"),
)
PREPROCESS = _modules(
    "preprocessing", "command", "settings", "job", "inputs", "layout", "labels", "values", "conversion", "hashing",
    "stats", "shards", "summary", "transaction", "baseline", "model_data", "mlflow_run", "testset", "raw_rows",
)  # fmt: skip
EVALUATION = _modules(
    "evaluation", "command", "job", "metrics", "report", "gate", "champion", "baseline", "collect", "sketch",
    "predictions_file", "coefficients", "mlflow_run", "floor", "raw_baseline", "defaults",
)  # fmt: skip
EVALUATE = (
    *EVALUATION,
    *_modules("containerlib/linear_learner", "model", "responses"),
    *MLFLOW_REST,
    *CONTENT_TYPES,
)
SERVING = (
    *_modules("serving", "model", "requests", "featurizer", "labels"),
    *_modules("containerlib", "encoding", "stable_hash", "names", "time_text"),
    *_modules("containerlib/linear_learner", "responses"),
    *CONTENT_TYPES,
    *RECORDIO,
)
DATAQUALITY = _modules(
    "dataquality", "command", "settings", "job", "dataset", "capture", "values", "profile", "kll", "statistics",
    "constraints", "distance", "violations", "jackson",
)  # fmt: skip

# bundle name -> (entry script, the modules it imports directly or through others), relative to the repository root;
# the packages' __init__.py files come along by themselves (tests/contract/test_code_bundles.py checks the lists
# are exact)
BUNDLE_SOURCES: dict[str, tuple[str, tuple[str, ...]]] = {
    "preprocess": (
        "preprocessing/preprocess.py",
        (*PREPROCESS, *SHARED, *TABLES, *RECORDIO, *MLFLOW_REST, *CONTENT_TYPES, "containerlib/schema_document.py"),
    ),
    "evaluate": ("evaluation/evaluate.py", (*EVALUATE, "containerlib/predictions.py", *SHARED, *RECORDIO)),
    # the inference pipeline's featurizer and labels containers (scikit-learn serving image): uploaded as the
    # sourcedir.tar.gz their SAGEMAKER_SUBMIT_DIRECTORY names
    "serving": ("serving/inference.py", SERVING),
    # the local stand-in for Model Monitor's analyzer image (pipeline/local/jobs/quality_check.py): never uploaded,
    # as the definition names the image, which holds its own code
    "dataquality": (
        "dataquality/analyze.py",
        (*DATAQUALITY, *CONTENT_TYPES, *_modules("containerlib", "errors", "hosts", "exit_message", "file_errors")),
    ),
}


@dataclass(frozen=True)
class CodeBundle:
    """Files of one processing job's code (path in the bundle, POSIX -> bytes); ``entry_point`` is at the root."""

    entry_point: str
    files: tuple[tuple[str, bytes], ...]

    @property
    def digest(self) -> str:
        """SHA-256 over the sorted (path, length, bytes) of every file: stable and unambiguous."""
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

    def tarball(self) -> bytes:
        """The bundle as a ``sourcedir.tar.gz`` (a serving container's SAGEMAKER_SUBMIT_DIRECTORY); the same files
        always give the same bytes (fixed times and owners, no gzip timestamp)."""
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            for name, content in self.files:
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(content), 0o644
                tar.addfile(info, io.BytesIO(content))
        return gzip.compress(buffer.getvalue(), mtime=0)

    def tarball_uri(self, pipeline_prefix: str) -> str:
        return self.s3_prefix(pipeline_prefix) + SOURCEDIR

    def write(self, folder: Path) -> Path:
        """The bundle's files under ``folder`` as the ``code`` input lays them out; returns the entry script."""
        for name, content in self.files:
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        return folder / self.entry_point


def _bundle_path(module: Path, root: Path) -> str:
    try:
        return module.relative_to(root).as_posix()
    except ValueError:
        raise ValueError(f"code bundle: {module} is not under {root}: a module ships at its path there") from None


def _packages_of(path: str) -> list[str]:
    """The ``__init__.py`` of every folder above a module in the bundle (``a/b/c.py`` -> a/__init__, a/b/__init__)."""
    parents = PurePosixPath(path).parents
    return [f"{parent.as_posix()}/__init__.py" for parent in reversed(parents) if parent.as_posix() != "."]


def build_bundle(entry: Path, modules: Sequence[Path] = (), root: Path = REPOSITORY_ROOT) -> CodeBundle:
    """The entry script at the root under its file name, each module at its path below ``root`` with its packages'
    ``__init__.py``. Fails clearly on a missing file or two files landing on one path."""
    entry = Path(entry)
    sources: dict[str, Path] = {entry.name: entry}
    for module in modules:
        path = _bundle_path(Path(module), root)
        for name in (*_packages_of(path), path):
            source = root / name
            if name in sources and sources[name] != source:
                raise ValueError(f"code bundle: {source} and {sources[name]} would both land at {name!r} in the bundle")
            sources[name] = source
    files: dict[str, bytes] = {}
    for name, source in sources.items():
        try:
            files[name] = source.read_bytes()
        except FileNotFoundError:
            raise FileNotFoundError(
                f"code bundle: {source} does not exist (the pipeline definition needs it)"
            ) from None
    return CodeBundle(entry_point=entry.name, files=tuple(sorted(files.items())))


def repository_bundle(name: str, root: Path = REPOSITORY_ROOT) -> CodeBundle:
    """The bundle named in :data:`BUNDLE_SOURCES`, read from the repository."""
    entry, modules = BUNDLE_SOURCES[name]
    return build_bundle(root / entry, [root / module for module in modules], root)
