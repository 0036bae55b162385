"""Distributed Linear Learner training as a SageMaker Pipelines DAG, with a local backend.

The Python API (:mod:`pipeline.api`), for notebooks in SageMaker Studio and for scripts::

    from pipeline import run_local, upsert, start, executions, compare, deploy_model
    execution = run_local(frame, "label", "binary_classifier", Epochs=5)   # a DataFrame, a path, or None
    execution.metrics, execution.gate, execution.predictions(), execution.plots

``get_pipeline`` gives the SDK v3 ``Pipeline`` object. Names are imported on first use, so ``import pipeline`` (and
``llpipe --help``) stays fast. ``__all__`` is the public surface (tests/contract/test_public_api.py pins it);
``deploy`` is the deprecated name of ``upsert``.
"""

from __future__ import annotations

from pipeline.core.startup import quiet_interrupts_while_starting

quiet_interrupts_while_starting()  # first: Ctrl-C while the command imports is one line, not a traceback

import importlib  # noqa: E402
from typing import Any  # noqa: E402

from pipeline.core import containers as _containers  # noqa: E402

# a user's ./evaluation.py (or any container package's name) earlier on sys.path must not replace the installed one
_containers.protect_container_packages()

# public name -> the module that defines it
EXPORTS = {
    "run_local": "pipeline.api",
    "upsert": "pipeline.api",
    "deploy": "pipeline.api",  # deprecated: upsert
    "start": "pipeline.api",
    "deploy_model": "pipeline.api",
    "get_execution": "pipeline.api",
    "executions": "pipeline.api",
    "compare": "pipeline.api",
    "Execution": "pipeline.api.execution",
    "LocalExecution": "pipeline.api.execution",
    "SageMakerExecution": "pipeline.api.sagemaker_execution",
    "get_pipeline": "pipeline.definition.build",
    "definition_dag": "pipeline.api.dag",
    "serve_local": "pipeline.api.serving",
    "Predictor": "pipeline.api.serving",
    "scaling_study": "pipeline.api.scaling",
    "plan": "pipeline.api.capacity",
}
__all__ = sorted(EXPORTS)


def __getattr__(name: str) -> Any:
    """Import a public name's module when the name is first used (PEP 562)."""
    if name not in EXPORTS:
        raise AttributeError(f"module 'pipeline' has no attribute {name!r}")
    return getattr(importlib.import_module(EXPORTS[name]), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *EXPORTS])
