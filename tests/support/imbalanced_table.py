"""A small imbalanced binary table, generated (never committed): the case Linear Learner's defaults handle weakly.

Features f0..f{n-1} are standard normal, some of them on large scales; only the first ``informative`` enter the true
logit, with an intercept chosen so that about ``positive_share`` of the rows are positive (label 1). Used by the
tuning test (tiny) and ``benchmarks/tuning.py`` (5,000 rows, 6% positives, 12 features, 4 informative).

    python tests/support/imbalanced_table.py OUT.csv [--rows 5000] [--features 12] [--informative 4] [--positives 0.06]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def write_imbalanced_table(
    path: Path,
    rows: int = 5000,
    features: int = 12,
    informative: int = 4,
    positive_share: float = 0.06,
    seed: int = 0,
) -> Path:
    """Write the CSV (header, columns f0.. and ``label``) and return its path; same arguments, same bytes."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, features))
    weights = np.zeros(features)
    weights[:informative] = rng.choice([-1.0, 1.0], informative) * rng.uniform(0.6, 1.4, informative)
    logit = x @ weights
    # the intercept that makes the expected share of positives the one asked for (bisection on the mean)
    low, high = -20.0, 20.0
    for _ in range(60):
        middle = (low + high) / 2
        if np.mean(1 / (1 + np.exp(-(logit + middle)))) < positive_share:
            low = middle
        else:
            high = middle
    label = (rng.random(rows) < 1 / (1 + np.exp(-(logit + low)))).astype(np.int8)
    scales = np.where(np.arange(features) % 3 == 2, 100.0, 1.0)  # some columns in other units
    frame = pd.DataFrame(x * scales, columns=[f"f{i}" for i in range(features)])
    frame["label"] = label
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False, float_format="%.6g")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--features", type=int, default=12)
    parser.add_argument("--informative", type=int, default=4)
    parser.add_argument("--positives", type=float, default=0.06)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    write_imbalanced_table(args.output, args.rows, args.features, args.informative, args.positives, args.seed)
    print(args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
