"""One Evaluate run: predictions and labels read, the report built (with the gate's decision) and written."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from containerlib.names import METRICS_SECTIONS, PREDICTOR_TYPES, RAW_BASELINE, SKLEARN_BASELINE
from containerlib.predictions import Pairing, iter_scored, pair_predictions, score_kind
from evaluation import EvaluationError
from evaluation.baseline import (
    Shard,
    baseline_section,
    find_train_shards,
    fit_baseline,
    list_train_shards,
    read_train_sample,
    score_baseline,
)
from evaluation.collect import MAX_EXACT_RECORDS, Collected, collect
from evaluation.floor import DEFAULTS
from evaluation.gate import GateSettings, compare_with_champion
from evaluation.raw_baseline import fit_raw_baseline, raw_section, read_rows, score_raw_rows
from evaluation.report import build_report, label_names, summary_parts, write_report

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
    train_dir: Path | None = None,
    train_uri: str | None = None,
    region: str | None = None,
    max_exact: int = MAX_EXACT_RECORDS,
    rows_dir: Path | None = None,
    defaults_model_uri: str | None = None,
) -> dict[str, Any]:
    """Reads predictions and labels, writes the report, returns it (NaN still as float).

    With ``train_dir`` (a folder) or ``train_uri`` (an S3 prefix, read with boto3), the report also holds the
    scikit-learn baseline fitted on (a sample of) the train channel and scored on the same test records
    (``baseline.py``). With ``rows_dir`` (Preprocess's ``rows/``: raw train and test rows), the baseline fitted on the
    raw columns (``raw_baseline.py``). With ``defaults_model_uri`` (a tuned run's untuned model, an S3 URI), that
    model scored on the same records (``defaults.py``). With ``gate``, the champion's metrics on the same records and
    the gate's decision. Predictions and test shards are streamed a chunk at a time: up to ``max_exact`` test
    records the metrics are exact, past it they come from a fixed-size sketch (``collect.py``, ``sketch.py``).
    """
    if predictor_type not in PREDICTOR_TYPES:
        raise EvaluationError(f"predictor type {predictor_type!r} is not one of {', '.join(PREDICTOR_TYPES)}")
    if max_exact < 0:
        raise EvaluationError(f"max exact records is {max_exact}, expected a record count >= 0 (0: always sketch)")
    kind = score_kind(predictor_type, loss)
    pairing = pair_predictions(predictions_dir, test_dir)
    chunks = iter_scored(pairing, predictor_type, kind)
    challenger = collect(chunks, predictor_type, kind, len(pairing.shards), bootstrap_rounds, seed, max_exact)
    names = label_names(summary_dir)  # also checks that every Preprocess host built the same layout
    names = names if predictor_type != "regressor" else None
    report = build_report(challenger, predictor_type, bootstrap_rounds, seed, names)
    shards = train_shards(train_dir, train_uri, region)
    if shards is not None:
        report[SKLEARN_BASELINE] = baseline_report(
            shards, pairing, challenger, report, predictor_type, bootstrap_rounds, seed, summary_dir
        )
    if rows_dir is not None:
        section = raw_baseline_report(rows_dir, report, predictor_type, challenger, bootstrap_rounds, seed)
        if section is not None:
            report[RAW_BASELINE] = section
    if defaults_model_uri:
        from evaluation.champion import aws_clients
        from evaluation.defaults import defaults_section

        s3 = aws_clients(region)[1]
        section = defaults_section(defaults_model_uri, s3, challenger, pairing, predictor_type, bootstrap_rounds, seed)
        report[DEFAULTS] = section
    if gate is not None:
        compare_with_champion(report, challenger, pairing, predictor_type, gate, bootstrap_rounds, seed)
    write_report(report, output_dir)
    return report


def train_shards(train_dir: Path | None, train_uri: str | None, region: str | None) -> list[Shard] | None:
    """The train shards the baseline samples: a folder's files, or an S3 prefix's objects (None: no baseline)."""
    if train_dir is not None:
        return find_train_shards(train_dir)
    if train_uri is not None:
        from evaluation.champion import aws_clients

        return list_train_shards(train_uri, aws_clients(region)[1])
    return None


def summary_train_records(summary_dir: Path | None) -> int | None:
    """The train split's record count from Preprocess's summary (its hosts' parts added up), None without one."""
    counts = [part.get("rows", {}).get("train") for _, part in summary_parts(summary_dir)]
    return int(sum(counts)) if counts and all(isinstance(count, int) for count in counts) else None


def baseline_report(
    shards: list[Shard],
    pairing: Pairing,
    challenger: Collected,
    report: dict[str, Any],
    predictor_type: str,
    rounds: int,
    seed: int,
    summary_dir: Path | None = None,
) -> dict[str, Any]:
    """The ``baseline`` section: fitted on the train sample, scored on the test records, metrics with deviations."""
    sample = read_train_sample(shards)
    if sample.channel_records is None:  # the sample stopped early: the summary knows how many records there are
        sample = dataclasses.replace(sample, channel_records=summary_train_records(summary_dir))
    estimator = fit_baseline(sample, predictor_type)
    chunks = score_baseline(estimator, pairing, predictor_type, challenger.classes)
    kind = "value" if predictor_type == "regressor" else "probability"
    cap = challenger.exact_records_cap
    baseline = collect(chunks, predictor_type, kind, challenger.file_count, rounds, seed, cap)
    full = build_report(baseline, predictor_type, rounds, seed)
    # every metric with its deviation, the confusion matrix and the curves: the plots draw the baseline's beside
    metrics = full[METRICS_SECTIONS[predictor_type]]
    section = baseline_section(sample, predictor_type, metrics, report["gate"]["metric"], report["gate"]["value"])
    for extra in ("sketch", "prediction_sample", "standard_deviations"):  # sketch: past the cap, how it was made
        if extra in full:
            section[extra] = full[extra]
    return section


def raw_baseline_report(
    rows_dir: Path, report: dict[str, Any], predictor_type: str, challenger: Collected, rounds: int, seed: int
) -> dict[str, Any] | None:
    """The ``baseline_raw_columns`` section, None when Preprocess wrote no raw rows (``--raw-rows 0``)."""
    train, test = read_rows(rows_dir, "train"), read_rows(rows_dir, "test")
    if train is None or test is None or not len(test.labels):
        return None
    estimator = fit_raw_baseline(train, predictor_type)
    chunks = score_raw_rows(estimator, test, predictor_type, challenger.classes)
    kind = "value" if predictor_type == "regressor" else "probability"
    scored = collect(chunks, predictor_type, kind, test.files, rounds, seed, challenger.exact_records_cap)
    full = build_report(scored, predictor_type, rounds, seed)
    section = raw_section(
        train, test, challenger.item_count, predictor_type, report, full[METRICS_SECTIONS[predictor_type]]
    )
    for extra in ("prediction_sample", "standard_deviations"):
        if extra in full:
            section[extra] = full[extra]
    return section
