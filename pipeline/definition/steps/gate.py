"""The QualityGate condition: Register, or QualityGateFailed naming the values it compared."""

from __future__ import annotations

from typing import Any

from pipeline.core.names import (
    BASELINE_FLOOR,
    CHAMPION_FLOOR,
    DECISION,
    FLOORS,
    GATE,
    QUALITY_GATE,
    QUALITY_GATE_FAILED,
    THRESHOLD_FLOOR,
)
from pipeline.definition.declared import Parameters


def quality_gate_step(params: Parameters, evaluate: Any, report: Any, register: Any) -> Any:
    """Register when the report's gate value (higher is better) reaches the threshold's floor (MetricThreshold, or
    when that is negative, as by default, the automatic floor: above the best constant predictor and near the
    scikit-learn baseline beyond the noise, ``evaluation/floor.py``), the champion's floor (its value on the same test
    split minus ChampionTolerance) and the baseline's floor (the scikit-learn baseline's value minus
    BaselineTolerance; the challenger's own value when that is off), all computed by Evaluate; else fail with the
    decision's reason and the values compared."""
    from sagemaker.core.workflow.conditions import ConditionGreaterThanOrEqualTo
    from sagemaker.core.workflow.functions import Join, JsonGet
    from sagemaker.mlops.workflow import ConditionStep, FailStep

    def gate(field: str) -> Any:
        return JsonGet(step_name=evaluate.name, property_file=report, json_path=f"{GATE}.{field}")

    def decision(field: str) -> Any:
        return JsonGet(step_name=evaluate.name, property_file=report, json_path=f"{DECISION}.{field}")

    failed = FailStep(
        name=QUALITY_GATE_FAILED,
        # the decision's reason first, then the values compared, each named for what it is (Evaluate words them)
        error_message=Join(
            on="",
            values=[
                "Quality gate failed: ",
                decision("reason"),
                " | compared ",
                gate("metric"),
                " = ",
                gate("value"),
                " with MetricThreshold ",
                params.metric_threshold,
                ", ",
                decision(FLOORS),
            ],
        ),
    )
    return ConditionStep(
        name=QUALITY_GATE,
        conditions=[
            ConditionGreaterThanOrEqualTo(left=gate("value"), right=decision(THRESHOLD_FLOOR)),
            ConditionGreaterThanOrEqualTo(left=gate("value"), right=decision(CHAMPION_FLOOR)),
            ConditionGreaterThanOrEqualTo(left=gate("value"), right=decision(BASELINE_FLOOR)),
        ],
        if_steps=[register],
        else_steps=[failed],
    )
