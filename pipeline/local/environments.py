"""A processing image's environment on this machine: a virtualenv with the image's Python and library pins.

Built once per image from a matching Python found on the machine (the current interpreter, ``python3.X`` on PATH,
pyenv's ``~/.pyenv/versions/3.X.*``), with the pins installed by pip from binary wheels, and cached under
``$LLPIPE_CACHE_DIR`` (default ``~/.cache/llpipe``) in ``envs/<image key>-<digest of the pins>/``. A build goes into a
temporary folder renamed into place when complete, under a file lock, so a crash leaves nothing half built and two
runs building at once build it once. Once built it is reused without network.

Where no matching Python exists or the build fails (no network), a job runs on the current interpreter and its
environment says so (``exact: false`` and why): the run shows it, never silently.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any

from pipeline.core.files import user_cache_dir
from pipeline.core.images import ProcessingImage, image_for_uri
from pipeline.core.stale import owned_temp_folder_prefix, sweep_temp_folders
from pipeline.core.verified import warn_damaged

MANIFEST = "llpipe-environment.json"
BUILD_LOG = "build.log"
PIP_TIMEOUT_SECONDS = 30
BUILD_TEMP_KIND = "llpipe-env-build"  # a build's own temp folder: llpipe-env-build-<pid>-*, swept once <pid> is gone
TEMP_VARIABLES = ("TMPDIR", "TEMP", "TMP")  # where Python's tempfile (and most tools) put temporary files
# Variables of this process that would change what the job imports or how its interpreter starts.
PYTHON_VARIABLES = (
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PYTHONUSERBASE",
    "PYTHONSAFEPATH",
    "PYTHONEXECUTABLE",
    "VIRTUAL_ENV",
    "__PYVENV_LAUNCHER__",
)
VERSIONS_SCRIPT = """
import json, sys
from importlib import metadata
found = {}
for name in json.loads(sys.argv[1]):
    try:
        found[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        found[name] = None
print(json.dumps({"python": ".".join(map(str, sys.version_info[:3])), "libraries": found}))
"""

Report = Callable[[str], None]


class EnvironmentBuildError(RuntimeError):
    """The image's environment could not be built; the message says why and where the log is."""


@dataclass(frozen=True)
class JobEnvironment:
    """The interpreter a processing job runs with, and whether it is the image's environment."""

    image_uri: str
    image: str | None  # the table's key (sklearn-1.2-1), None for an image the table does not know
    python: Path  # the interpreter to run
    python_version: str  # x.y.z actually used
    libraries: dict[str, str | None]  # distribution -> version actually installed (None: not installed)
    exact: bool
    reason: str = ""  # why the environment is approximate; empty when exact
    location: str = ""  # the cached environment's folder, empty for the current interpreter
    build_seconds: float | None = None  # set when this call built the environment
    variables: dict[str, str] = field(default_factory=dict)  # the image's own environment variables

    def to_json(self) -> dict[str, Any]:
        """What ``environment.json`` of a processing step holds."""
        document: dict[str, Any] = {
            "image_uri": self.image_uri,
            "image": self.image,
            "exact": self.exact,
            "python": self.python_version,
            "libraries": self.libraries,
            "interpreter": str(self.python),
        }
        if self.location:
            document["location"] = self.location
        if self.build_seconds is not None:
            document["build_seconds"] = round(self.build_seconds, 1)
        if self.reason:
            document["reason"] = self.reason
        return document

    def summary(self) -> str:
        """One line: ``Python 3.9.18, numpy 1.24.1, ... (exact)`` or ``... (approximate: why)``."""
        libraries = ", ".join(f"{name} {version or 'missing'}" for name, version in self.libraries.items())
        verdict = "exact" if self.exact else f"approximate: {self.reason}"
        return f"Python {self.python_version}, {libraries} ({verdict})"


def python_candidates(version: str, environ: dict[str, str] | os._Environ[str] = os.environ) -> Iterator[Path]:
    """Interpreters that may be Python ``version``: this one, ``pythonX.Y`` on PATH, pyenv's, newest patch first."""
    yield Path(sys.executable)
    on_path = shutil.which(f"python{version}", path=environ.get("PATH"))
    if on_path:
        yield Path(on_path)
    pyenv_root = Path(environ.get("PYENV_ROOT") or Path.home() / ".pyenv").expanduser()
    installed = pyenv_root.glob(f"versions/{version}.*/bin/python{version}")

    def patch(path: Path) -> int:
        suffix = path.parent.parent.name[len(version) + 1 :]
        return int(suffix) if suffix.isdigit() else -1

    yield from sorted(installed, key=patch, reverse=True)


def find_python(version: str, environ: dict[str, str] | os._Environ[str] = os.environ) -> Path | None:
    """The first candidate that really runs as Python ``version`` (a pyenv shim may exist and still refuse)."""
    for candidate in python_candidates(version, environ):
        try:
            result = subprocess.run(
                [str(candidate), "-c", "import sys; print('%d.%d' % sys.version_info[:2]); print(sys.executable)"],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        lines = result.stdout.split()
        if result.returncode == 0 and len(lines) == 2 and lines[0] == version:
            return Path(lines[1])
    return None


def clean_variables(environ: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """This process's variables without those that would put the project or another site on the job's path."""
    return {name: value for name, value in environ.items() if name not in PYTHON_VARIABLES}


def _spec_digest(image: ProcessingImage) -> str:
    spec = json.dumps({"python": image.python, "pins": image.pins, "platform": platform.machine()})
    return hashlib.sha256(spec.encode()).hexdigest()[:12]


def installed_versions(python: Path, names: list[str]) -> tuple[str, dict[str, str | None]]:
    """The Python version and each distribution's version as the interpreter ``python`` sees them."""
    if Path(python) == Path(sys.executable):
        found: dict[str, str | None] = {}
        for name in names:
            try:
                found[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                found[name] = None
        return ".".join(map(str, sys.version_info[:3])), found
    result = subprocess.run(
        [str(python), "-s", "-c", VERSIONS_SCRIPT, json.dumps(names)], capture_output=True, text=True, timeout=120
    )
    if result.returncode != 0:
        raise EnvironmentBuildError(f"{python} cannot report its libraries: {result.stderr.strip()[-300:]}")
    document = json.loads(result.stdout)
    return document["python"], document["libraries"]


def _mismatches(image: ProcessingImage, python_version: str, libraries: dict[str, str | None]) -> list[str]:
    problems = []
    if ".".join(python_version.split(".")[:2]) != image.python:
        problems.append(f"Python {python_version} instead of {image.python}")
    for name, version in image.pins:
        if libraries.get(name) != version:
            problems.append(f"{name} {libraries.get(name) or 'missing'} instead of {version}")
    return problems


@dataclass(frozen=True)
class ImageEnvironments:
    """Finds, builds and caches the environment of each processing image."""

    cache_dir: Path
    locate_python: Callable[[str], Path | None] = find_python

    @classmethod
    def default(cls) -> ImageEnvironments:
        return cls(user_cache_dir())

    def folder(self, image: ProcessingImage) -> Path:
        """Where the image's environment lives once built."""
        return self.cache_dir / "envs" / f"{image.key}-{_spec_digest(image)}"

    def cached(self, image: ProcessingImage, discard_damaged: bool = False) -> JobEnvironment | None:
        """The built environment, read from its manifest (no process started, no network), or None. A folder whose
        manifest is not this image's (damaged, another build's) or whose interpreter is gone is no environment;
        with ``discard_damaged`` (under the build lock) it is removed, with a warning naming it, to be built again."""
        folder = self.folder(image)
        if not folder.exists():
            return None
        why = _unusable(folder, image)
        if why is None:
            manifest = json.loads((folder / MANIFEST).read_text())
            python = folder / "bin" / "python"
            return self._environment(image, "", python, manifest["python"], manifest["libraries"], str(folder))
        if discard_damaged:
            warn_damaged(folder, why)
            _discard(folder)
        return None

    def for_image_uri(self, image_uri: str, report: Report = lambda text: None) -> JobEnvironment:
        """The environment to run a job of ``image_uri`` with: the image's own, built on first use, or the
        current interpreter marked approximate (with the reason) when the image is unknown or cannot be built."""
        image = image_for_uri(image_uri)
        if image is None:
            return self.current(image_uri, None, f"image {image_uri} is not in the table of processing images")
        try:
            return self.ensure(image, report, image_uri)
        except EnvironmentBuildError as error:
            return self.current(image_uri, image, str(error))

    def ensure(self, image: ProcessingImage, report: Report = lambda text: None, image_uri: str = "") -> JobEnvironment:
        """The image's environment, built now if it is not cached; EnvironmentBuildError when it cannot be."""
        found = self.cached(image)
        if found is not None:
            return _with_uri(found, image_uri)
        folder = self.folder(image)
        folder.parent.mkdir(parents=True, exist_ok=True)
        lock = folder.parent / f".{folder.name}.lock"
        with _locked(lock, lambda: report(f"waiting for another run building the {image.key} environment")):
            found = self.cached(image, discard_damaged=True)  # built by another run while this one waited
            if found is not None:
                return _with_uri(found, image_uri)
            started = time.monotonic()
            self._build(image, folder, report)
            built = self.cached(image)
            if built is None:
                raise EnvironmentBuildError(f"the {image.key} environment in {folder} is unusable after its build")
            seconds = time.monotonic() - started
            report(f"built the {image.key} environment in {seconds:.0f}s: {folder}")
            return _with_uri(JobEnvironment(**{**built.__dict__, "build_seconds": seconds}), image_uri)

    def current(self, image_uri: str, image: ProcessingImage | None, reason: str) -> JobEnvironment:
        """The current interpreter standing in for the image, approximate."""
        names = [name for name, _ in (image.pins if image else ())] or ["numpy", "pandas", "scipy", "scikit-learn"]
        python_version, libraries = installed_versions(Path(sys.executable), names)
        environment = JobEnvironment(
            image_uri=image_uri,
            image=image.key if image else None,
            python=Path(sys.executable),
            python_version=python_version,
            libraries=libraries,
            exact=False,
            reason=reason,
            variables=dict(image.environment) if image else {},
        )
        if image is not None and not _mismatches(image, python_version, libraries):
            return JobEnvironment(**{**environment.__dict__, "exact": True, "reason": ""})
        return environment

    def _environment(
        self,
        image: ProcessingImage,
        image_uri: str,
        python: Path,
        python_version: str,
        libraries: dict[str, str | None],
        location: str,
    ) -> JobEnvironment:
        problems = _mismatches(image, python_version, libraries)
        return JobEnvironment(
            image_uri=image_uri,
            image=image.key,
            python=python,
            python_version=python_version,
            libraries=libraries,
            exact=not problems,
            reason="; ".join(problems),
            location=location,
            variables=dict(image.environment),
        )

    def _build(self, image: ProcessingImage, folder: Path, report: Report) -> None:
        """Create the virtualenv in a temporary folder, install the pins, record what is installed, rename."""
        report(f"building the {image.key} environment (Python {image.python}, {len(image.pins)} pinned libraries)")
        base = self.locate_python(image.python)
        if base is None:
            raise EnvironmentBuildError(
                f"no Python {image.python} found (tried python{image.python} on PATH and pyenv's versions)"
            )
        building = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.building-"))
        log_path = building / BUILD_LOG
        try:
            # the build's own temp folder, removed with what its commands leave there (Python 3.9's ensurepip left
            # pip's CA bundle in the system temp folder on every build)
            sweep_temp_folders(BUILD_TEMP_KIND)  # what a killed build left
            owned = owned_temp_folder_prefix(BUILD_TEMP_KIND)
            with log_path.open("w") as log, tempfile.TemporaryDirectory(prefix=owned) as scratch:
                step = partial(self._step, log, report, temp=Path(scratch))
                create = [str(base), "-m", "venv", *([] if image.pins else ["--without-pip"]), str(building)]
                step(f"creating a virtualenv from {base}", create)
                python = building / "bin" / "python"
                if image.pins:
                    install = [str(python), "-m", "pip", "install", "--no-input", "--disable-pip-version-check"]
                    install += ["--only-binary=:all:", "--timeout", str(PIP_TIMEOUT_SECONDS), "--retries", "2"]
                    step(f"installing {len(image.pins)} pinned libraries", install + image.requirements)
            python_version, libraries = installed_versions(python, [name for name, _ in image.pins])
            problems = _mismatches(image, python_version, libraries)
            if problems:
                raise EnvironmentBuildError(f"the built environment has {'; '.join(problems)}")
            manifest = {
                "image": image.key,
                "spec": _spec_digest(image),
                "python": python_version,
                "libraries": libraries,
                "built_from": str(base),
            }
            (building / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
            building.rename(folder)
        except BaseException as error:
            failed_log = folder.parent / f"{folder.name}.failed.log"
            if log_path.exists():
                shutil.copyfile(log_path, failed_log)
            shutil.rmtree(building, ignore_errors=True)
            if isinstance(error, EnvironmentBuildError):
                raise EnvironmentBuildError(f"{error} (log: {failed_log})") from None
            raise

    @staticmethod
    def _step(log: Any, report: Report, what: str, command: list[str], *, temp: Path) -> None:
        """Run one build command, its output to the build log, its latest line to ``report``, its temporary files
        in ``temp``."""
        log.write(f"$ {' '.join(command)}\n")
        log.flush()
        variables = {**clean_variables(os.environ), **dict.fromkeys(TEMP_VARIABLES, str(temp))}
        tail = ""
        # as a context manager: the output pipe is closed and the process waited for, however the loop ends
        with subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=variables
        ) as process:
            assert process.stdout is not None
            for line in process.stdout:
                log.write(line)
                if line.strip() and not line.startswith("WARNING: Location"):
                    tail = line.strip()
                    report(f"{what}: {_short(tail)}")
        if process.returncode != 0:
            raise EnvironmentBuildError(f"{what} failed: {_short(tail) or f'exit code {process.returncode}'}")


def _unusable(folder: Path, image: ProcessingImage) -> str | None:
    """Why the environment folder cannot be used for ``image``, None when it can: its manifest must be readable,
    name the image and its pins' digest (when it records one) and list the versions, and its interpreter exist."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except FileNotFoundError:
        return f"{MANIFEST} is missing"
    except (OSError, ValueError) as error:
        return f"{MANIFEST} is not readable: {type(error).__name__}"
    if not isinstance(manifest, dict) or not isinstance(manifest.get("libraries"), dict):
        return f"{MANIFEST} lists no libraries"
    if not isinstance(manifest.get("python"), str):
        return f"{MANIFEST} names no Python version"
    if manifest.get("image") != image.key or manifest.get("spec", _spec_digest(image)) != _spec_digest(image):
        return f"{MANIFEST} is of another image ({manifest.get('image')})"
    if not (folder / "bin" / "python").exists():
        return "its interpreter is gone (its base Python was removed)"
    return None


def _discard(folder: Path) -> None:
    """Remove a damaged environment: renamed aside first, so the name is free at once even if removal is slow."""
    aside = folder.with_name(f".{folder.name}.discarded-{os.getpid()}")
    try:
        folder.rename(aside)
    except OSError:
        aside = folder
    shutil.rmtree(aside, ignore_errors=True)


def _short(line: str, limit: int = 120) -> str:
    line = re.sub(r"\s+", " ", line)
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _with_uri(environment: JobEnvironment, image_uri: str) -> JobEnvironment:
    return JobEnvironment(**{**environment.__dict__, "image_uri": image_uri or environment.image_uri})


@contextmanager
def _locked(path: Path, on_wait: Callable[[], None]) -> Iterator[None]:
    """An exclusive lock on ``path`` across processes; ``on_wait`` is called once if another holder makes it wait."""
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_wait()
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
