"""The quality gate's decision: the threshold, and the champion (the group's approved version) scored on the same
test records with the same code, so the two models are compared on equal terms."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from containerlib.linear_learner.model import LinearModel, ModelArtifactError, read_model_bytes
from containerlib.names import (
    AUTOMATIC_THRESHOLD,
    BASELINE_FLOOR,
    CHAMPION,
    CHAMPION_FLOOR,
    DECISION,
    FLOORS,
    GATE_METRICS,
    METRICS_SECTIONS,
    MODEL_DATA_URL,
    RAW_BASELINE,
    SKLEARN_BASELINE,
    THRESHOLD_FLOOR,
)
from containerlib.predictions import Pairing, ScoredChunk, iter_test_batches
from evaluation import EvaluationError
from evaluation.champion import Champion, ChampionError, aws_clients, download_model, find_champion
from evaluation.collect import Collected, collect
from evaluation.floor import GATE_DEVIATIONS, AutomaticFloor, automatic_floor, metric_deviation
from evaluation.report import build_report

TUNING = "tuning"  # the report's section of a tuned run: the kept model (evaluation/defaults.py)
RAW_COLUMNS_NOTE = "raw_columns_note"  # decision field: the model below the raw-column baseline beyond the noise


@dataclass(frozen=True)
class GateSettings:
    """What the pipeline's gate decides with: the threshold, the tolerance and where the champion is registered."""

    metric_threshold: float
    champion_tolerance: float = 0.0
    model_package_group: str | None = None  # None: no champion comparison
    region: str | None = None  # the AWS region of the registry; None: boto3's configuration decides
    baseline_tolerance: float = -1.0  # negative: the baseline is reported, not gated on

    def __post_init__(self) -> None:
        if not math.isfinite(self.metric_threshold):
            raise EvaluationError(f"MetricThreshold is {self.metric_threshold}, expected a finite number")
        if not math.isfinite(self.baseline_tolerance):
            raise EvaluationError(
                f"BaselineTolerance is {self.baseline_tolerance}, expected a finite number (negative: off)"
            )
        if not math.isfinite(self.champion_tolerance) or self.champion_tolerance < 0:
            raise EvaluationError(
                f"ChampionTolerance is {self.champion_tolerance}, expected a finite number >= 0 "
                "(how much worse than the champion the challenger may be)"
            )


def score_champion(
    model_path: Path,
    champion: Champion,
    challenger: Collected,
    pairing: Pairing,
    predictor_type: str,
    rounds: int,
    seed: int,
) -> Collected:
    """The champion's predictions on the same test records, shard by shard and chunk by chunk (only the scores are
    kept, as the challenger's), gathered as the challenger's were."""
    where = f"champion {champion.model_package_arn} ({champion.model_data_url})"
    try:
        model = read_model_bytes(model_path.read_bytes(), "model.tar.gz")  # named by its S3 URI (where), not our copy
    except OSError as error:
        raise EvaluationError(f"{where}: cannot read its model artifact ({error.strerror or error})") from None
    except ModelArtifactError as error:
        raise EvaluationError(f"{where}: cannot read its model artifact: {error}") from None
    if model.predictor_type != predictor_type:
        raise EvaluationError(
            f"{where} is a {model.predictor_type}, this execution evaluates a {predictor_type}: the two cannot be "
            "compared (reject the champion or register into another model package group)"
        )
    if predictor_type == "multiclass_classifier" and model.num_classes != challenger.classes:
        raise EvaluationError(
            f"{where} predicts {model.num_classes} classes, the challenger {challenger.classes}: cannot compare"
        )
    return score_like(model, where, pairing, predictor_type, challenger, rounds, seed)


def score_like(
    model: LinearModel,
    where: str,
    pairing: Pairing,
    predictor_type: str,
    challenger: Collected,
    rounds: int,
    seed: int,
    through: Callable[[Iterator[ScoredChunk]], Iterator[ScoredChunk]] | None = None,
) -> Collected:
    """Another model's scores of the challenger's test records (the champion's, the untuned defaults'), gathered as
    the challenger's were; ``through``: a pass over the chunks (the predictions file with row ids)."""
    kind = "margin" if predictor_type == "binary_classifier" and model.loss_type != "logistic" else "probability"
    kind = "value" if predictor_type == "regressor" else kind
    chunks = champion_chunks(model, where, pairing)
    if through is not None:
        chunks = through(chunks)
    cap = challenger.exact_records_cap
    collected = collect(chunks, predictor_type, kind, challenger.file_count, rounds, seed, cap)
    if collected.item_count != challenger.item_count:  # the features and labels come from the same shards: a bug
        raise EvaluationError(
            f"{where}: scored {collected.item_count} records, the test shards hold {challenger.item_count}"
        )
    return collected


def champion_chunks(model: LinearModel, where: str, pairing: Pairing) -> Iterator[ScoredChunk]:
    """The champion's scores of every test record, a chunk at a time; the first bad one fails naming the record."""
    seen = 0
    for shard, relative, _ in pairing.shards:
        for _, features, labels in iter_test_batches(shard):
            if model.feature_dim != features.shape[1]:
                raise EvaluationError(
                    f"{where} takes {model.feature_dim} features, this execution's data has {features.shape[1]}: it "
                    "was trained on other columns (or another HashBuckets), so the two cannot be compared (reject "
                    "the champion or register into another model package group)"
                )
            scores, predicted = model.predict(features)
            scores = np.asarray(scores, dtype=np.float64)
            bad = np.flatnonzero(~np.isfinite(scores.reshape(len(scores), -1)).all(axis=1))
            if bad.size:
                raise EvaluationError(
                    f"{where}: record {seen + bad[0]} of the test split scores {scores[bad[0]]}, not finite"
                )
            seen += len(labels)
            yield ScoredChunk(labels, scores, None if predicted is None else predicted.astype(np.int64), relative)


def champion_section(champion: Champion, report: dict[str, Any], predictor_type: str) -> dict[str, Any]:
    """The report's ``champion``: the package and its metrics on this test split, in the challenger's layout."""
    section = METRICS_SECTIONS[predictor_type]
    metric = GATE_METRICS[predictor_type]
    gate = {"metric": metric, "value": report["gate"]["value"]}
    result = {**champion.to_dict(), section: report[section], "gate": gate}
    for extra in ("prediction_sample", "sketch"):  # the sketch section: past the record cap, how the metrics were made
        if extra in report:
            result[extra] = report[extra]
    return result


def decide(
    metric: str,
    value: float,
    settings: GateSettings,
    champion: dict[str, Any] | None,
    group: str | None,
    baseline: dict[str, Any] | None = None,
    automatic: AutomaticFloor | None = None,
    tuning: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Promote when ``value`` reaches the threshold's floor and is no worse than the champion's by more than the
    tolerance (and, with BaselineTolerance >= 0, no worse than the baseline's by more than that).

    ``threshold_floor`` is MetricThreshold as set; MetricThreshold -1 (the default, ``AUTOMATIC_THRESHOLD``) asks
    for ``automatic`` (``floor.py``: above the best constant predictor and near the baseline, beyond the noise).
    With ``tuning`` (a tuned run's report section, ``defaults.choose``: the kept model, tuned or the untuned
    defaults', and why), ``value`` is the kept model's; the reason says which it is, and the decision names its
    artifact (``model_data_url``), which Register reads.

    ``champion_floor`` is the champion's value minus the tolerance; without a champion it is the challenger's own
    value, so the Condition's second comparison holds and the threshold alone decides, as the reason says.
    ``baseline_floor`` likewise: the baseline's value minus BaselineTolerance, or the challenger's own value when off.
    ``floors`` says both in words, naming what each value is, for the QualityGateFailed step's message.
    """
    threshold, tolerance = settings.metric_threshold, settings.champion_tolerance
    threshold_floor, applied = threshold, False
    threshold_words = f"the threshold's floor {threshold} (MetricThreshold)"
    if threshold == AUTOMATIC_THRESHOLD and automatic is not None:
        threshold_floor, applied = automatic.value, True
        threshold_words = (
            f"the threshold's floor {threshold_floor} (automatic, as MetricThreshold is {threshold:g}: "
            f"{automatic.words})"
        )
    clears_threshold = value >= threshold_floor
    reaches = "reaches" if clears_threshold else "is below"
    if not applied or automatic is None:
        verdict = f"{metric} {value:.6g} {reaches} MetricThreshold {threshold:g}"
    else:
        verdict = f"{metric} {value:.6g} {reaches} the automatic floor {threshold_floor:.4g} ({automatic.words})"
    if tuning is not None:  # which of the tuned and the untuned defaults' models this decision is about, and why
        kept = "untuned defaults'" if tuning["kept"] == "defaults" else "tuned"
        verdict = f"{tuning['reason']}; the kept {kept} model's {verdict}"
    if champion is None:
        floor = value
        beats_champion = True
        where = f"model package group {group}" if group else "no model package group given"
        verdict += f"; no approved champion ({where}): the threshold alone decides"
        champion_words = f"the champion's floor {floor} (no approved champion: the challenger's own value)"
    else:
        champion_value = champion["gate"]["value"]
        floor = champion_value - tolerance
        beats_champion = value >= floor
        name = f"champion version {champion['version']} ({metric} {champion_value:.6g} on this test split)"
        verdict += f"; {'no worse' if beats_champion else 'worse'} than {name} by more than ChampionTolerance"
        verdict += f" {tolerance:g}"
        champion_words = (
            f"the champion's floor {floor} (champion version {champion['version']}'s {metric} {champion_value}"
            f" minus ChampionTolerance {tolerance:g})"
        )
    baseline_floor, near_baseline = value, True
    baseline_value = baseline["gate"]["value"] if baseline else None
    baseline_tolerance = settings.baseline_tolerance
    if baseline_tolerance < 0:
        why = f"BaselineTolerance {baseline_tolerance:g} is negative, so off: the challenger's own value"
    elif baseline_value is None:
        why = "no scikit-learn baseline in the report: the challenger's own value"
    else:
        why = f"the scikit-learn baseline's {metric} {baseline_value} minus BaselineTolerance {baseline_tolerance:g}"
    if baseline_value is not None and settings.baseline_tolerance >= 0:
        baseline_floor = baseline_value - settings.baseline_tolerance
        near_baseline = value >= baseline_floor
        verdict += (
            f"; {'within' if near_baseline else 'NOT within'} BaselineTolerance {settings.baseline_tolerance:g} of the"
            f" scikit-learn baseline ({metric} {baseline_value:.6g} on this test split)"
        )
    elif baseline_value is not None and value < baseline_value:
        verdict += (
            f"; below the scikit-learn baseline ({metric} {baseline_value:.6g} on this test split; set "
            "BaselineTolerance to gate on it)"
        )
    return {
        "promote": bool(clears_threshold and beats_champion and near_baseline),
        "metric": metric,
        "challenger_value": value,
        "metric_threshold": threshold,
        THRESHOLD_FLOOR: threshold_floor,
        "defaults_floor": tuning["defaults_floor"] if tuning else "none",
        "kept_model": tuning["kept"] if tuning else "none",  # tuned or defaults: a tuned run's kept model
        MODEL_DATA_URL: tuning["model_data_url"] if tuning else "none",
        "automatic_floor": None
        if automatic is None
        else {
            "value": automatic.value,
            "constant_value": automatic.constant_value,
            "constant_floor": automatic.constant_floor,
            "baseline_floor": automatic.baseline_floor,
            "applied": applied,
        },
        "champion_model_package_arn": champion["model_package_arn"] if champion else "none",
        "champion_value": champion["gate"]["value"] if champion else "none",
        "champion_tolerance": tolerance,
        CHAMPION_FLOOR: floor,
        "baseline_value": baseline_value if baseline_value is not None else "none",
        "baseline_tolerance": settings.baseline_tolerance,
        BASELINE_FLOOR: baseline_floor,
        # the threshold's floor named only when it is not MetricThreshold as set (the message already shows that)
        FLOORS: (f"{threshold_words}; " if threshold_floor != threshold else "")
        + f"{champion_words}; the baseline's floor {baseline_floor} ({why})",
        "reason": verdict,
    }


def raw_columns_note(report: dict[str, Any], predictor_type: str) -> str:
    """The decision's ``raw_columns_note``: words when the baseline on the raw columns is above the model beyond the
    noise (2 standard deviations, as the automatic floor counts them), as the encoding may lose what the raw columns
    hold; empty otherwise. Said, not gated on: a column of many values is one-hot there and hashed here, which is the
    encoding's choice."""
    section = report.get(RAW_BASELINE)
    if not isinstance(section, dict):
        return ""
    metric, value = report["gate"]["metric"], report["gate"]["value"]
    raw = section["gate"]["value"]
    noise = math.hypot(
        metric_deviation(report, METRICS_SECTIONS[predictor_type], metric),
        metric_deviation(section, METRICS_SECTIONS[predictor_type], metric),
    )
    if not raw - value > GATE_DEVIATIONS * noise:
        return ""
    return (
        f"{raw - value:.4g} below scikit-learn on the raw columns ({metric} {raw:.6g}, more than "
        f"{GATE_DEVIATIONS:g} standard deviations): the encoding (hash buckets, missing values) may lose what the raw "
        "columns hold"
    )


def compare_with_champion(
    report: dict[str, Any],
    challenger: Collected,
    pairing: Pairing,
    predictor_type: str,
    settings: GateSettings,
    rounds: int,
    seed: int,
    clients: Callable[[str | None], tuple[Any, Any]] | None = None,
) -> dict[str, Any]:
    """Adds ``champion`` (None when the group has no approved, completed version) and ``decision`` to the report.

    ``clients`` gives the (SageMaker, S3) boto3 clients for a region; default :func:`champion.aws_clients`.
    """
    champion = None
    group = settings.model_package_group
    if group:
        try:
            sagemaker, s3 = (clients or aws_clients)(settings.region)
            found = find_champion(sagemaker, group)
            if found is not None:
                with tempfile.TemporaryDirectory(prefix="champion-") as folder:
                    model_path = download_model(s3, found, Path(folder))
                    scored = score_champion(model_path, found, challenger, pairing, predictor_type, rounds, seed)
                champion_report = build_report(scored, predictor_type, rounds, seed)
                champion = champion_section(found, champion_report, predictor_type)
        except ChampionError as error:
            raise EvaluationError(str(error)) from None
    gate = report["gate"]
    report[CHAMPION] = champion
    automatic = automatic_floor(report, predictor_type)
    baseline = report.get(SKLEARN_BASELINE)
    tuning = report.get(TUNING)
    decision = decide(gate["metric"], gate["value"], settings, champion, group, baseline, automatic, tuning)
    decision[RAW_COLUMNS_NOTE] = raw_columns_note(report, predictor_type)
    report[DECISION] = decision
    return report
