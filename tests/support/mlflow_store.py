"""A fresh MLflow SQLite store per test without MLflow's schema migration per test: the migration (~1.7 s of CPU)
runs once per machine and version of the packages that shape it, into a template kept in the user cache beside the
image environments, and each test gets a byte copy of it."""

from __future__ import annotations

import shutil
import sqlite3
from importlib.metadata import version
from pathlib import Path

from pipeline.core.files import user_cache_dir, write_bytes_atomically


def migrated_template(folder: Path) -> Path:
    """An empty MLflow SQLite store in ``folder``, its tables created by MLflow itself (a copy of the kept one, which
    is made on the first use with these versions of MLflow, SQLAlchemy, Alembic and SQLite, and written atomically)."""
    key = "-".join([version("mlflow"), version("sqlalchemy"), version("alembic"), sqlite3.sqlite_version])
    kept = user_cache_dir() / "test-mlflow-templates" / f"{key}.db"
    if not kept.is_file():
        import mlflow

        migrated = folder / "migrated.db"
        mlflow.MlflowClient(tracking_uri=f"sqlite:///{migrated}").search_experiments()
        kept.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomically(kept, migrated.read_bytes())
    path = folder / "template.db"
    shutil.copyfile(kept, path)
    return path


def fresh_store(template: Path, folder: Path) -> str:
    """The tracking URI of a copy of ``template`` in ``folder``."""
    path = folder / "mlflow.db"
    shutil.copyfile(template, path)
    return f"sqlite:///{path}"
