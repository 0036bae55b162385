"""Distributed Linear Learner training as a SageMaker Pipelines DAG, with a local backend.

``from pipeline import get_pipeline`` gives the SDK v3 ``Pipeline`` object for notebooks in SageMaker Studio.
"""

from __future__ import annotations

from typing import Any

__all__ = ["get_pipeline"]


def get_pipeline(**config: Any) -> Any:
    """Build the SageMaker Pipeline (SDK v3) from configuration keyword arguments, environment and config file."""
    from pipeline.definition import get_pipeline as _get_pipeline  # the SDK import is slow: only when asked

    return _get_pipeline(**config)
