"""The local work dir's layout, owned in one place: the local S3 folder, execution records, registry, models.

``<root>/s3/<bucket>/<key>`` is ``s3://<bucket>/<key>``; ``executions/<id>/`` holds one execution's record;
``registry.db`` is the local model registry; ``models/`` the models CreateModel made; ``example-data/`` the
bundled example written once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_ROOT = Path(".llpipe")


@dataclass(frozen=True)
class Workdir:
    """Where everything of the local backend lands, under one root folder."""

    root: Path

    @classmethod
    def at(cls, root: Path) -> Workdir:
        """The work dir at ``root`` as an absolute path (so jobs that change directory still find it)."""
        return cls(Path(root).resolve())

    @property
    def s3(self) -> Path:
        return self.root / "s3"

    @property
    def executions(self) -> Path:
        return self.root / "executions"

    @property
    def registry_db(self) -> Path:
        return self.root / "registry.db"

    @property
    def models(self) -> Path:
        return self.root / "models"

    @property
    def example_data(self) -> Path:
        return self.root / "example-data"
