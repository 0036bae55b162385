"""One Evaluate run: predictions and labels read, the report built (with the gate's decision) and written."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any

from containerlib.linear_learner.model import read_model
from containerlib.names import METRICS_SECTIONS, PREDICTOR_TYPES, RAW_BASELINE, SKLEARN_BASELINE
from containerlib.predictions import Pairing, iter_scored, pair_predictions, score_kind
from containerlib.row_ids import has_ids
from evaluation import EvaluationError
from evaluation.baseline import (
    Shard,
    TrainSample,
    baseline_section,
    find_train_shards,
    fit_baseline,
    list_train_shards,
    read_train_sample,
    score_baseline,
)
from evaluation.coefficients import COEFFICIENTS, coefficients_section, feature_scale
from evaluation.collect import MAX_EXACT_RECORDS, Collected, collect
from evaluation.gate import GateSettings, compare_with_champion
from evaluation.predictions_file import TEST_ROWS, PredictionsWithIds
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
    model_uri: str | None = None,
    rows_dir: Path | None = None,
    defaults_model_uri: str | None = None,
) -> dict[str, Any]:
    """Reads predictions and labels, writes the report, returns it (NaN still as float).

    With ``train_dir`` (a folder) or ``train_uri`` (an S3 prefix, read with boto3), the report also holds the
    scikit-learn baseline fitted on (a sample of) the train channel and scored on the same test records
    (``baseline.py``). With ``rows_dir`` (Preprocess's ``rows/``: raw train and test rows), the baseline fitted on the
    raw columns (``raw_baseline.py``). With ``defaults_model_uri`` (a tuned run's untuned model, an S3 URI), that
    model scored on the same records, and kept in place of the tuned one when better
    (``defaults.py``). With ``gate``, the champion's metrics on the same records and
    the gate's decision. Predictions and test shards are streamed a chunk at a time: up to ``max_exact`` test
    records the metrics are exact, past it they come from a fixed-size sketch (``collect.py``, ``sketch.py``).
    With ``model_uri`` (the model artifact's S3 URI), the model's coefficients by feature name
    (``coefficients.py``). With Preprocess's row ids in ``summary_dir``, ``predictions.jsonl`` and the test rows'
    fingerprint (``predictions_file.py``).
    """
    if predictor_type not in PREDICTOR_TYPES:
        raise EvaluationError(f"predictor type {predictor_type!r} is not one of {', '.join(PREDICTOR_TYPES)}")
    if max_exact < 0:
        raise EvaluationError(f"max exact records is {max_exact}, expected a record count >= 0 (0: always sketch)")
    kind = score_kind(predictor_type, loss)
    pairing = pair_predictions(predictions_dir, test_dir)
    chunks = iter_scored(pairing, predictor_type, kind)
    with_ids = None
    if has_ids(summary_dir, [relative for _, relative, _ in pairing.shards]):
        assert summary_dir is not None
        with_ids = PredictionsWithIds(summary_dir, output_dir, predictor_type)
        chunks = with_ids.through(chunks)
    try:
        challenger = collect(chunks, predictor_type, kind, len(pairing.shards), bootstrap_rounds, seed, max_exact)
        return _report(challenger, pairing, with_ids, output_dir, predictor_type, bootstrap_rounds, seed, summary_dir,
                       gate, train_dir, train_uri, region, model_uri, rows_dir, defaults_model_uri)  # fmt: skip
    except BaseException:
        if with_ids is not None:
            with_ids.discard()
        raise


def _report(
    challenger: Collected,
    pairing: Pairing,
    with_ids: PredictionsWithIds | None,
    output_dir: Path,
    predictor_type: str,
    bootstrap_rounds: int,
    seed: int,
    summary_dir: Path | None,
    gate: GateSettings | None,
    train_dir: Path | None,
    train_uri: str | None,
    region: str | None,
    model_uri: str | None = None,
    rows_dir: Path | None = None,
    defaults_model_uri: str | None = None,
) -> dict[str, Any]:
    """The report of the challenger's records: metrics, baselines, coefficients, the defaults' model, champion and
    gate; written with the predictions."""
    names = label_names(summary_dir)  # also checks that every Preprocess host built the same layout
    names = names if predictor_type != "regressor" else None
    report = build_report(challenger, predictor_type, bootstrap_rounds, seed, names)
    kept_ids = None
    if defaults_model_uri:  # a tuned run: the tuned or the untuned defaults' model is kept (defaults.py)
        report, challenger, model_uri, with_ids = keep_tuned_or_defaults(
            report, challenger, pairing, with_ids, output_dir, predictor_type, bootstrap_rounds, seed, summary_dir,
            names, region, model_uri, defaults_model_uri,
        )  # fmt: skip
        kept_ids = with_ids
    try:  # baselines, coefficients, champion and gate around the kept model's report; written with the predictions
        shards = train_shards(train_dir, train_uri, region)
        sample = read_train_sample(shards) if shards is not None else None
        if sample is not None:
            report[SKLEARN_BASELINE] = baseline_report(
                sample, pairing, challenger, report, predictor_type, bootstrap_rounds, seed, summary_dir
            )
        if model_uri is not None:
            report[COEFFICIENTS] = model_coefficients(model_uri, region, summary_dir, sample, output_dir)
        if rows_dir is not None:
            section = raw_baseline_report(rows_dir, report, predictor_type, challenger, bootstrap_rounds, seed)
            if section is not None:
                report[RAW_BASELINE] = section
        if gate is not None:
            compare_with_champion(report, challenger, pairing, predictor_type, gate, bootstrap_rounds, seed)
        if with_ids is not None:
            report[TEST_ROWS] = with_ids.finish()
        write_report(report, output_dir)
        return report
    except BaseException:
        if kept_ids is not None:  # evaluate() discards only the tuned model's file
            kept_ids.discard()
        raise


def keep_tuned_or_defaults(
    report: dict[str, Any],
    challenger: Collected,
    pairing: Pairing,
    with_ids: PredictionsWithIds | None,
    output_dir: Path,
    predictor_type: str,
    rounds: int,
    seed: int,
    summary_dir: Path | None,
    names: list[str] | None,
    region: str | None,
    model_uri: str | None,
    defaults_model_uri: str,
) -> tuple[dict[str, Any], Collected, str | None, PredictionsWithIds | None]:
    """The untuned defaults' model scored on the same records and the kept model's (report, scores, artifact,
    predictions file): the defaults' when better than the tuned one (``defaults.choose``)."""
    from evaluation.champion import aws_clients
    from evaluation.defaults import KEPT_DEFAULTS, TUNING, choose, score_defaults

    s3 = aws_clients(region)[1]
    # the defaults' predictions with row ids too: that file replaces the tuned model's if the defaults are kept
    their_ids = PredictionsWithIds(summary_dir, output_dir, predictor_type) if with_ids is not None else None
    try:
        through = their_ids.through if their_ids is not None else None
        scored = score_defaults(defaults_model_uri, s3, challenger, pairing, predictor_type, rounds, seed, through)
        defaults = build_report(scored, predictor_type, rounds, seed, names)
    except BaseException:
        if their_ids is not None:
            their_ids.discard()
        raise
    report = choose(report, defaults, predictor_type, model_uri, defaults_model_uri)
    if report[TUNING]["kept"] != KEPT_DEFAULTS:
        if their_ids is not None:
            their_ids.discard()
        return report, challenger, model_uri, with_ids
    if with_ids is not None:
        with_ids.discard()
    # the baselines, coefficients (when asked for: ``model_uri``), champion and predictions file face the kept model
    return report, scored, defaults_model_uri if model_uri is not None else None, their_ids


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


def model_coefficients(
    model_uri: str, region: str | None, summary_dir: Path | None, sample: TrainSample | None, work_dir: Path
) -> dict[str, Any]:
    """The ``coefficients`` section: the model artifact fetched from S3 (GetObject), its weights named by the
    feature names of Preprocess's summary, standardised by the train sample's standard deviations."""
    from evaluation.champion import aws_clients, download_object

    with tempfile.TemporaryDirectory(dir=work_dir, prefix=".model-") as folder:
        path = download_object(aws_clients(region)[1], model_uri, Path(folder) / "model.tar.gz", "the model artifact")
        model = read_model(path)
    parts = summary_parts(summary_dir)
    names = parts[0][1].get("feature_names") if parts else None
    scale = feature_scale(sample.features) if sample is not None else None
    return coefficients_section(model, names, scale, None if sample is None else len(sample.labels))


def baseline_report(
    sample: TrainSample,
    pairing: Pairing,
    challenger: Collected,
    report: dict[str, Any],
    predictor_type: str,
    rounds: int,
    seed: int,
    summary_dir: Path | None = None,
) -> dict[str, Any]:
    """The ``baseline`` section: fitted on the train sample, scored on the test records, metrics with deviations."""
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
