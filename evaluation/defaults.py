"""The untuned defaults' model beside a tuned one: with a Tuning step, the pipeline also trains Linear Learner at the
parameters' values (the ``Train`` step), and Evaluate scores that model on the same test records with the same code
(as it scores the champion), so the report says whether tuning paid.

Under automatic model tuning every training job trains one model (``num_models`` 1), where the defaults train many
and keep the best; a dozen tuning jobs can end below the defaults (ISLP's Caravan: AUC 0.719 against 0.735). The
gate then refuses the tuned model when the defaults' is better by more than the noise (``defaults_floor``: the
defaults' value minus 2 standard deviations of the difference, at least one test record's worth), and the reason
says so and names the defaults' artifact (``floor.defaults_floor``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from containerlib.linear_learner.model import ModelArtifactError, read_model_bytes
from containerlib.names import METRICS_SECTIONS
from containerlib.predictions import Pairing
from evaluation import EvaluationError
from evaluation.champion import ChampionError, download_object, split_s3_url
from evaluation.collect import Collected, collect
from evaluation.gate import champion_chunks
from evaluation.report import build_report


def download(s3: Any, url: str, folder: Path) -> Path:
    """The untuned defaults' model fetched into ``folder`` as the champion's is (one GetObject, renamed in place)."""
    what = "the untuned defaults' model"
    try:
        split_s3_url(url)
    except ChampionError as error:
        raise EvaluationError(f"{what}: {error}") from None
    try:
        return download_object(s3, url, folder / "defaults-model.tar.gz", what)
    except ChampionError as error:
        raise EvaluationError(str(error)) from None


def defaults_section(
    url: str, s3: Any, challenger: Collected, pairing: Pairing, predictor_type: str, rounds: int, seed: int
) -> dict[str, Any]:
    """The report's ``defaults``: the untuned model's artifact and its metrics on the same test records."""
    where = f"the untuned defaults' model ({url})"
    with tempfile.TemporaryDirectory(prefix="defaults-") as folder:
        path = download(s3, url, Path(folder))
        try:
            model = read_model_bytes(path.read_bytes(), "model.tar.gz")
        except ModelArtifactError as error:
            raise EvaluationError(f"{where}: cannot read its model artifact: {error}") from None
    if model.predictor_type != predictor_type:
        raise EvaluationError(f"{where} is a {model.predictor_type}, this execution evaluates a {predictor_type}")
    kind = "margin" if predictor_type == "binary_classifier" and model.loss_type != "logistic" else "probability"
    kind = "value" if predictor_type == "regressor" else kind
    chunks = champion_chunks(model, where, pairing)
    scored = collect(chunks, predictor_type, kind, challenger.file_count, rounds, seed, challenger.exact_records_cap)
    report = build_report(scored, predictor_type, rounds, seed)
    section = METRICS_SECTIONS[predictor_type]
    result = {"model_data_url": url, section: report[section], "gate": report["gate"]}
    for extra in ("prediction_sample", "standard_deviations", "sketch"):
        if extra in report:
            result[extra] = report[extra]
    return result
