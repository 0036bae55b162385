"""One Evaluate run: predictions and labels read, the report built (with the gate's decision) and written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from containerlib.names import PREDICTOR_TYPES
from containerlib.predictions import load_scored
from evaluation import EvaluationError
from evaluation.gate import GateSettings, compare_with_champion
from evaluation.report import build_report, label_names, write_report

DEFAULT_BOOTSTRAP_ROUNDS = 30
DEFAULT_SEED = 0


def evaluate(
    predictions_dir: Path,
    test_dir: Path,
    output_dir: Path,
    predictor_type: str,
    bootstrap_rounds: int = DEFAULT_BOOTSTRAP_ROUNDS,
    seed: int = DEFAULT_SEED,
    loss: str = "auto",
    summary_dir: Path | None = None,
    gate: GateSettings | None = None,
) -> dict[str, Any]:
    """Reads predictions and labels, writes the report, returns it (NaN still as float).

    With ``gate``, the report also holds the champion's metrics on the same records and the gate's decision.
    """
    if predictor_type not in PREDICTOR_TYPES:
        raise EvaluationError(f"predictor type {predictor_type!r} is not one of {', '.join(PREDICTOR_TYPES)}")
    scored = load_scored(predictions_dir, test_dir, predictor_type, loss)
    names = label_names(summary_dir)  # also checks that every Preprocess host built the same layout
    names = names if predictor_type != "regressor" else None
    report = build_report(scored, predictor_type, bootstrap_rounds, seed, names)
    if gate is not None:
        compare_with_champion(report, scored, test_dir, predictor_type, gate, bootstrap_rounds, seed)
    write_report(report, output_dir)
    return report
