"""A small table with numeric and text columns whose label depends on both, and the same table drifted as a broken
feed drifts: one column gone constant, one category replaced by a value never seen."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

LABEL = "churned"
CONSTANT_COLUMN = "minutes"  # made constant by the drift
CATEGORY_COLUMN = "plan"  # "basic" replaced by "legacy" by the drift


def table(rows: int = 600, seed: int = 11) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "tenure": rng.integers(1, 72, rows),
            CONSTANT_COLUMN: np.round(rng.gamma(4.0, 45.0, rows), 1),
            "calls": rng.poisson(3.0, rows),
            CATEGORY_COLUMN: rng.choice(["basic", "plus", "premium"], rows, p=[0.5, 0.3, 0.2]),
        }
    )
    score = -0.04 * frame["tenure"] + 0.008 * frame[CONSTANT_COLUMN] + 0.3 * frame["calls"]
    score += frame[CATEGORY_COLUMN].map({"basic": 0.8, "plus": 0.0, "premium": -0.8})
    frame[LABEL] = (score + rng.normal(0, 0.5, rows) > np.median(score)).astype(int)
    return frame


def drifted(frame: pd.DataFrame) -> pd.DataFrame:
    broken = frame.copy()
    broken[CONSTANT_COLUMN] = 180.0
    broken[CATEGORY_COLUMN] = broken[CATEGORY_COLUMN].replace({"basic": "legacy"})
    return broken


def write(frame: pd.DataFrame, folder: Path, parts: int = 2) -> Path:
    """The table as ``parts`` CSV files (one per processing instance)."""
    folder.mkdir(parents=True, exist_ok=True)
    for index, part in enumerate(np.array_split(np.arange(len(frame)), parts)):
        frame.iloc[part].to_csv(folder / f"part-{index}.csv", index=False)
    return folder
