"""Evaluation reports built by the Evaluate job's own report code from seeded labels and scores, for the plots."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from containerlib.predictions import Scored
from evaluation.report import build_report, write_report


def report_file(tmp_path: Path, predictor_type: str, n: int = 600, seed: int = 0) -> Path:
    """An evaluation report of ``n`` seeded labels and scores of the predictor type, written by the Evaluate job's
    own report code under ``tmp_path/<predictor_type>``."""
    generator = np.random.default_rng(seed)
    if predictor_type == "binary_classifier":
        labels = (generator.random(n) < 0.4).astype(float)
        scores = 1 / (1 + np.exp(-(3 * labels - 1.5 + generator.normal(size=n))))
        scored = Scored(labels, scores, (scores > 0.5).astype(np.int64), 1)
    elif predictor_type == "multiclass_classifier":
        labels = generator.integers(0, 5, size=n).astype(float)
        logits = generator.normal(size=(n, 5)) + 2 * np.eye(5)[labels.astype(int)]
        scores = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        scored = Scored(labels, scores, scores.argmax(axis=1), 1)
    else:
        labels = generator.normal(size=n)
        scored = Scored(labels, labels + generator.normal(scale=0.3, size=n), None, 1)
    return write_report(build_report(scored, predictor_type, rounds=5, seed=0), tmp_path / predictor_type)
