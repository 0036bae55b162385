"""The Python API, for notebooks (SageMaker Studio) and scripts: run locally, upsert the pipeline and start it on
SageMaker, list and compare executions, deploy a model version to a stage. The ``llpipe`` commands are argument
parsing and rendering over the same code (:mod:`pipeline.api._shared`, which is not part of the API).

Settings follow the CLI's rules: keyword arguments named as :class:`pipeline.definition.config.PipelineConfig` fields
(``bucket=``, ``role_arn=``, ``region=`` ...) beat the environment, which beats the ``config=`` file, which beats
the defaults. Pipeline parameters are keyword arguments spelled as the definition declares them, capitalised
(``Epochs=5``, ``MetricThreshold=0.9``), checked against the definition before anything runs.

    from pipeline import run_local, compare
    first = run_local(frame, "label", "binary_classifier", Epochs=5)
    first.metrics, first.gate, first.predictions(), first.plots
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from pipeline.api import _shared

if TYPE_CHECKING:
    import pandas as pd

    from pipeline.api._shared import PathLike
    from pipeline.api.execution import Execution, LocalExecution
    from pipeline.api.sagemaker_execution import SageMakerExecution
    from pipeline.core.deployment import Outcome, Progress
    from pipeline.sagemaker.deploy import UpsertResult

__all__ = [
    "compare",
    "deploy",
    "deploy_model",
    "executions",
    "get_execution",
    "run_local",
    "start",
    "upsert",
]


# ---------------------------------------------------------------------------------------------------------- local


def run_local(
    data: Any = None,
    label_column: str | None = None,
    predictor_type: str | None = None,
    *,
    workdir: PathLike = _shared.DEFAULT_WORKDIR,
    use_cache: bool = True,
    progress: bool | str = "auto",
    config: PathLike | None = None,
    **options: Any,
) -> LocalExecution:
    """Run the whole pipeline on this machine and return the execution (a failed execution is returned too: look
    at ``status`` and ``failure_reason``).

    ``data``: None for the bundled breast cancer example, a CSV/Parquet file or folder, or a pandas DataFrame.
    ``progress``: a live step table; ``"auto"`` shows it in Jupyter only, True also prints step changes elsewhere.
    Other keyword arguments: pipeline parameters (``Epochs=5``) and settings (``bucket=...``), see the module.
    """
    from pipeline.api._words import in_api_words
    from pipeline.api.notebook import progress_display

    with in_api_words():
        settings, parameters = _shared.split_options(options)
        pipeline_config = _shared.load_settings(settings, config)
        where = _shared.open_workdir(workdir)
        source = _shared.local_source(data, label_column, predictor_type, where)
    display = progress_display(progress, where)
    with in_api_words(), display or nullcontext():
        return _shared.execute_local(
            pipeline_config,
            where,
            source,
            parameters,
            use_cache=use_cache,
            on_change=display.update if display else None,
        )


# ------------------------------------------------------------------------------------------------------- SageMaker


def upsert(*, description: str | None = None, config: PathLike | None = None, **settings: Any) -> UpsertResult:
    """Upload the code bundles and create or update the pipeline on SageMaker, as ``llpipe upsert`` does."""
    return _shared.upsert_pipeline(_shared.load_settings(settings, config), description)


def deploy(*, description: str | None = None, config: PathLike | None = None, **settings: Any) -> UpsertResult:
    """Deprecated name of :func:`upsert` (it upserts the pipeline; :func:`deploy_model` deploys a model version, as
    ``llpipe deploy`` does); kept for one release."""
    import warnings

    warnings.warn(
        "pipeline.deploy() upserts the pipeline and is renamed upsert(); deploy() goes in the next release "
        "(a model version is deployed with deploy_model())",
        DeprecationWarning,
        stacklevel=2,
    )
    return upsert(description=description, config=config, **settings)


def start(
    *,
    wait: bool = False,
    display_name: str | None = None,
    poll_seconds: float = 30.0,
    config: PathLike | None = None,
    **options: Any,
) -> SageMakerExecution:
    """Start an execution of the deployed pipeline with parameter overrides (``InputDataUrl="s3://..."``,
    ``Epochs=5``); DataVersion is the fingerprint of the data under InputDataUrl, as with ``llpipe start``.
    Returns the execution at once, or when it finished with ``wait=True`` (else call ``.wait()``)."""
    from pipeline.api._words import in_api_words
    from pipeline.api.sagemaker_execution import SageMakerExecution
    from pipeline.sagemaker import aws
    from pipeline.sagemaker.start import start as start_execution

    with in_api_words():
        settings, parameters = _shared.split_options(options)
        pipeline_config = _shared.load_settings(settings, config)
        session = aws.session(pipeline_config)
        arn = start_execution(pipeline_config, parameters, session=session, display_name=display_name)
    execution = SageMakerExecution(pipeline_config, arn, session=session)
    return execution.wait(poll_seconds) if wait else execution


def deploy_model(
    model_package: str | int | None = None,
    *,
    stage: str,
    sagemaker: bool = False,
    workdir: PathLike = _shared.DEFAULT_WORKDIR,
    port: int | None = None,
    smoke_rows: int | None = None,
    quality_tolerance: float | None = None,
    if_newer: bool = False,
    allow_new_columns: bool = False,
    traffic: str = "all-at-once",
    canary_percent: int = 10,
    canary_wait: int = 300,
    bake: int = 300,
    poll_seconds: float = 30.0,
    progress: Progress | None = None,
    config: PathLike | None = None,
    **settings: Any,
) -> Outcome:
    """Deploy a registered model version to ``stage``'s endpoint (``"staging"`` or ``"prod"``), smoke-test it and
    record the pass, as ``llpipe deploy`` does; returns the outcome (``status``, ``version``, ``exit_code``...).

    ``model_package``: on staging an ARN, a version number or None / ``"latest-approved"``; on prod the version that
    passed staging. Locally (the default) each stage is an ``llpipe serve`` process of ``workdir`` (``port`` for its
    first deployment); with ``sagemaker=True`` a blue/green update shifting ``traffic`` (``"all-at-once"`` or
    ``"canary"``: ``canary_percent`` first, the rest after ``canary_wait`` seconds; the old fleet kept ``bake``
    seconds). ``smoke_rows`` test rows are sent (200), and on staging the candidate's metric may be at most
    ``quality_tolerance`` (0.01) below the live version's. ``progress`` sees each step's line. Other keyword
    arguments are settings (``staging_instance_type=``, ``data_capture_percentage=`` ...), as for :func:`run_local`.
    """
    traffic_shift = None
    if sagemaker:
        from pipeline.core.errors import UsageError
        from pipeline.sagemaker.endpoint_requests import Traffic

        try:
            traffic_shift = Traffic(traffic, canary_percent, canary_wait, bake)
        except ValueError as error:
            raise UsageError(str(error)) from None
    return _shared.deploy_version(
        _shared.load_settings(settings, config),
        stage,
        model_package,
        sagemaker=sagemaker,
        workdir=workdir,
        port=port,
        smoke_rows=smoke_rows,
        quality_tolerance=quality_tolerance,
        progress=progress or (lambda message: None),
        if_newer=if_newer,
        allow_new_columns=allow_new_columns,
        traffic=traffic_shift,
        poll_seconds=poll_seconds,
    )


# ---------------------------------------------------------------------------------------------- list and compare


def get_execution(
    execution_id: str,
    *,
    sagemaker: bool = False,
    workdir: PathLike = _shared.DEFAULT_WORKDIR,
    config: PathLike | None = None,
    **settings: Any,
) -> Execution:
    """One execution by id (or ARN on SageMaker)."""
    pipeline_config = _shared.load_settings(settings, config) if sagemaker else None
    return _shared.find_execution(execution_id, workdir, pipeline_config)


def executions(
    *,
    sagemaker: bool = False,
    workdir: PathLike = _shared.DEFAULT_WORKDIR,
    max_results: int = 20,
    gate: bool = False,
    config: PathLike | None = None,
    **settings: Any,
) -> pd.DataFrame:
    """Recent executions, newest first: id, status, start, seconds, data, the parameters that differ from the
    defaults, and the gate metric (on SageMaker only with ``gate=True``: three more calls per execution)."""
    import pandas as pd

    from pipeline.api.comparison import SUMMARY_COLUMNS, recent_executions

    pipeline_config = _shared.load_settings(settings, config) if sagemaker else None
    rows = recent_executions(workdir, max_results, pipeline_config, gate=gate)
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def compare(
    first: Execution | str,
    second: Execution | str,
    *,
    sagemaker: bool = False,
    from_mlflow: bool = False,
    workdir: PathLike = _shared.DEFAULT_WORKDIR,
    config: PathLike | None = None,
    **settings: Any,
) -> pd.DataFrame:
    """Two executions side by side: status, parameters, metrics (value ± standard deviation), gate, model package,
    test rows; a column per execution, a row per item, and a ``differs`` column. Executions or their ids. When the
    two were scored on different test rows (or one cannot say), a
    :class:`~pipeline.api.comparison.NotComparableWarning` says so, and ``attrs["warning"]`` holds the same words.

    ``from_mlflow=True``: from their MLflow runs instead (MLflow run ids, execution ids, or executions that were
    logged), read from the tracking store (``mlflow_tracking_uri=``, else with ``sagemaker=True`` the configured
    ``mlflow_arn``, else the work dir's own): status, params, metrics and model package
    (:func:`pipeline.api.mlflow_comparison.runs_side_by_side`)."""
    import warnings

    from pipeline.api.comparison import NotComparableWarning, side_by_side

    if from_mlflow:
        return _shared.compare_runs([first, second], sagemaker, workdir, _shared.load_settings(settings, config))

    def resolve(item: Execution | str) -> Execution:
        if isinstance(item, str):
            return get_execution(item, sagemaker=sagemaker, workdir=workdir, config=config, **settings)
        return item

    frame = side_by_side(resolve(first), resolve(second))
    if frame.attrs.get("warning"):
        warnings.warn(frame.attrs["warning"], NotComparableWarning, stacklevel=2)
    return frame
