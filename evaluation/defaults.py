"""The untuned defaults' model beside a tuned one, and which of the two the run keeps.

With a Tuning step, the pipeline also trains Linear Learner at the parameters' values (the ``Train`` step), and
Evaluate scores that model on the same test records with the same code (as it scores the champion). Under automatic
model tuning every training job trains one model (``num_models`` 1), where the defaults train many and keep the
best; a dozen tuning jobs can end below the defaults (ISLP's Caravan: AUC 0.719 against 0.735). Tuning must earn
its place: unless the tuned model scores at least the defaults' model on the same test records
(``floor.defaults_floor``, whose words state the difference's noise), the run keeps the defaults' model: the report's
model-quality sections, the gate and the registered version are the defaults' model's, and the tuned model's figures
move to the report's ``tuned`` section. Otherwise the tuned model is kept and the defaults' figures are in
``defaults``. Choosing the better of two models on the test split makes the kept figure slightly optimistic; the
report states the noise of their difference beside it. The report's ``tuning`` section says which was kept and why;
Register reads its ``model_data_url`` (the kept model's artifact) from the report.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from containerlib.linear_learner.model import ModelArtifactError, read_model_bytes
from containerlib.names import METRICS_SECTIONS
from containerlib.predictions import Pairing, ScoredChunk
from evaluation import EvaluationError
from evaluation.champion import ChampionError, download_object, split_s3_url
from evaluation.collect import Collected
from evaluation.floor import DEFAULTS, defaults_floor
from evaluation.gate import score_like

TUNED = "tuned"  # the report's section of the tuned model's figures when the defaults' model is kept
TUNING = "tuning"  # the report's section saying which model was kept, why, and its artifact
KEPT_DEFAULTS, KEPT_TUNED = "defaults", "tuned"
NO_URL = "none"  # the tuned model's artifact when Evaluate was not given it (--model-uri)


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


def score_defaults(
    url: str,
    s3: Any,
    challenger: Collected,
    pairing: Pairing,
    predictor_type: str,
    rounds: int,
    seed: int,
    through: Callable[[Iterator[ScoredChunk]], Iterator[ScoredChunk]] | None = None,
) -> Collected:
    """The untuned model's scores of the same test records, gathered as the tuned model's were (``through``: a pass
    over the chunks, the predictions file with row ids)."""
    where = f"the untuned defaults' model ({url})"
    with tempfile.TemporaryDirectory(prefix="defaults-") as folder:
        path = download(s3, url, Path(folder))
        try:
            model = read_model_bytes(path.read_bytes(), "model.tar.gz")
        except ModelArtifactError as error:
            raise EvaluationError(f"{where}: cannot read its model artifact: {error}") from None
    if model.predictor_type != predictor_type:
        raise EvaluationError(f"{where} is a {model.predictor_type}, this execution evaluates a {predictor_type}")
    return score_like(model, where, pairing, predictor_type, challenger, rounds, seed, through)


def model_section(url: str, report: dict[str, Any], predictor_type: str) -> dict[str, Any]:
    """A model's figures beside the kept one's (the report's ``defaults`` or ``tuned``): artifact, metrics, gate."""
    section = METRICS_SECTIONS[predictor_type]
    result = {"model_data_url": url, section: report[section], "gate": report["gate"]}
    for extra in ("prediction_sample", "standard_deviations", "sketch"):
        if extra in report:
            result[extra] = report[extra]
    return result


def choose(
    tuned: dict[str, Any], defaults: dict[str, Any], predictor_type: str, tuned_url: str | None, defaults_url: str
) -> dict[str, Any]:
    """The kept model's report, with the other model's section and the ``tuning`` section (see the docstring)."""
    floor, words = defaults_floor(tuned, defaults, predictor_type)
    metric = tuned["gate"]["metric"]
    tuned_value, defaults_value = tuned["gate"]["value"], defaults["gate"]["value"]
    keep_defaults = tuned_value < floor
    if keep_defaults:
        report = defaults
        report[TUNED] = model_section(tuned_url or NO_URL, tuned, predictor_type)
        reason = (
            f"tuning did not pay: the tuned model's {metric} {tuned_value:.6g} is below {words}, so the untuned "
            "defaults' model is kept (evaluated, gated and registered; the tuned model's figures are in the report's "
            "tuned section)"
        )
    else:
        report = tuned
        report[DEFAULTS] = model_section(defaults_url, defaults, predictor_type)
        reason = (
            f"tuning paid: the tuned model's {metric} {tuned_value:.6g} reaches {words}, so the tuned model is kept"
        )
    report[TUNING] = {
        "kept": KEPT_DEFAULTS if keep_defaults else KEPT_TUNED,
        "model_data_url": defaults_url if keep_defaults else tuned_url or NO_URL,
        "metric": metric,
        "tuned_value": tuned_value,
        "defaults_value": defaults_value,
        "defaults_floor": floor,
        "reason": reason,
    }
    return report
