"""The fast settings of the tests' local runs: few epochs, few parallel models, small mini-batches, as pipeline
parameters (the strings ``--param`` takes), defined once so every tier's runs are equally quick."""

from __future__ import annotations

FAST: dict[str, str] = {"Epochs": "3", "NumModels": "2", "MiniBatchSize": "50"}


def fast(**changes: object) -> dict[str, str]:
    """FAST with some parameters changed or added (``fast(TrainingInstanceCount=1)``), values as ``--param`` strings."""
    return {**FAST, **{name: str(value) for name, value in changes.items()}}


def fast_params(**changes: object) -> list[str]:
    """The same settings as the command line's arguments: ``["--param", "Epochs=3", ...]``."""
    return [argument for name, value in fast(**changes).items() for argument in ("--param", f"{name}={value}")]
