"""Running a processing job's code bundle as the scikit-learn image runs it: the bundle's files, the image's Python and
libraries (the cached environment of core/images.py's table), the image's variables, no PYTHONPATH to the repository."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pipeline.definition.code_bundles import repository_bundle
from pipeline.local.environments import JobEnvironment, clean_variables


@dataclass(frozen=True)
class Container:
    """A code bundle's runner; ``bundle`` writes the named repository bundle once under ``code_root``."""

    environment: JobEnvironment
    code_root: Path

    def bundle(self, name: str) -> Path:
        """The entry script of the bundle ``name`` (preprocess, evaluate), written on first use."""
        bundle = repository_bundle(name)
        folder = self.code_root / f"{name}-{bundle.digest[:12]}"
        if not folder.is_dir():
            staging = self.code_root / f".{folder.name}.{os.getpid()}"
            bundle.write(staging)
            try:
                staging.rename(folder)
            except OSError:  # written by another test process meanwhile
                pass
        return folder / bundle.entry_point

    def command(self, name: str, *args: str | Path) -> list[str]:
        return [str(self.environment.python), str(self.bundle(name)), *map(str, args)]

    def variables(self) -> dict[str, str]:
        return {**clean_variables(os.environ), **self.environment.variables, "PYTHONNOUSERSITE": "1"}

    def run(
        self, name: str, *args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run the bundle ``name`` with ``args``, ``env`` added to the image's variables (the analyzer reads its
        settings from the environment)."""
        return subprocess.run(
            self.command(name, *args),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            env={**self.variables(), **(env or {})},
            cwd=cwd or self.code_root,
        )

    def start(self, name: str, *args: str | Path) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.command(name, *args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.variables(),
            cwd=self.code_root,
        )
