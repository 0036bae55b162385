"""The local work dir's layout, owned in one place: the local S3 folder, execution records, registry, models.

``<root>/s3/<bucket>/<key>`` is ``s3://<bucket>/<key>``; ``executions/<id>/`` holds one execution's record;
``registry.db`` is the local model registry; ``models/`` the models CreateModel made; ``example-data/`` the
bundled example written once; ``frames/`` the DataFrames given to ``pipeline.run_local``, as CSV files.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from pipeline.core.errors import UsageError, opt

DEFAULT_ROOT = Path(".llpipe")


@dataclass(frozen=True)
class Workdir:
    """Where everything of the local backend lands, under one root folder."""

    root: Path

    @classmethod
    def at(cls, root: Path) -> Workdir:
        """The work dir at ``root`` as an absolute path (so jobs that change directory still find it); a
        ``UsageError`` when a file is in its place (read as an empty work dir, it said "no executions")."""
        path = Path(root).expanduser().resolve()
        if path.exists() and not path.is_dir():
            raise UsageError(
                f"{path} is a file, not a folder: a work dir is the folder holding s3/, executions/ and registry.db; "
                f"pick the folder with {opt('workdir', 'DIR')}",
                option="workdir",
                value=root,
            )
        return cls(path)

    def ensure_writable(self) -> None:
        """Create the root if needed and prove it writable (a file is created and removed), before anything runs;
        else a ``UsageError`` naming the path and the reason (a file in the way, a read-only or full disk)."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.root, prefix=".llpipe-write-check-"):
                pass
        except OSError as error:
            in_the_way = next((p for p in (self.root, *self.root.parents) if p.exists() and not p.is_dir()), None)
            reason = f"{in_the_way} is a file, not a folder" if in_the_way else error.strerror or str(error)
            raise UsageError(
                f"cannot be created or written ({reason}); pick another with {opt('workdir', 'DIR')}",
                option="workdir",
                value=self.root,
            ) from None

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
    def monitoring(self) -> Path:
        """``llpipe monitor``'s jobs: each one's request, logs and environment."""
        return self.root / "monitoring"

    @property
    def models(self) -> Path:
        return self.root / "models"

    @property
    def example_data(self) -> Path:
        return self.root / "example-data"

    @property
    def schemas(self) -> Path:
        """Schemas decided for local runs, each named by what decided it (``pipeline.local.schema_cache``)."""
        return self.root / "schemas"

    @property
    def frames(self) -> Path:
        """DataFrames handed to ``run_local``, each written once as a CSV named by its content."""
        return self.root / "frames"
