"""A fresh MLflow SQLite store per test without MLflow's schema migration per test: the migration (seconds of CPU)
runs once per session into a template, and each test gets a byte copy of it."""

from __future__ import annotations

import shutil
from pathlib import Path


def migrated_template(folder: Path) -> Path:
    """An empty MLflow SQLite store, its tables created by MLflow itself."""
    import mlflow

    path = folder / "template.db"
    mlflow.MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments()
    return path


def fresh_store(template: Path, folder: Path) -> str:
    """The tracking URI of a copy of ``template`` in ``folder``."""
    path = folder / "mlflow.db"
    shutil.copyfile(template, path)
    return f"sqlite:///{path}"
