"""The Python API, for notebooks (SageMaker Studio) and scripts: run locally, deploy, start on SageMaker, list and
compare executions. The ``llpipe`` commands are argument parsing and rendering over these same functions.

Settings follow the CLI's rules: keyword arguments named as :class:`pipeline.definition.config.PipelineConfig` fields
(``bucket=``, ``role_arn=``, ``region=`` ...) beat the environment, which beats the ``config=`` file, which beats
the defaults. Pipeline parameters are keyword arguments spelled as the definition declares them, capitalised
(``Epochs=5``, ``MetricThreshold=0.9``), checked against the definition before anything runs.

    from pipeline import run_local, compare
    first = run_local(frame, "label", "binary_classifier", Epochs=5)
    first.metrics, first.gate, first.predictions(), first.plots
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.core.errors import DataError
from pipeline.core.names import PREDICTOR_TYPES
from pipeline.local.workdir import DEFAULT_ROOT, Workdir

if TYPE_CHECKING:
    import pandas as pd

    from pipeline.api.execution import Execution, LocalExecution
    from pipeline.api.sagemaker_execution import SageMakerExecution
    from pipeline.definition.config import PipelineConfig
    from pipeline.definition.inference import Inferred
    from pipeline.local.data import DataSource
    from pipeline.local.executions import ExecutionRecord, StepRecord
    from pipeline.sagemaker.deploy import UpsertResult

PathLike = str | Path
DEFAULT_WORKDIR = DEFAULT_ROOT  # .llpipe in the current directory: where local runs land unless told otherwise


def split_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Keyword arguments -> (settings, pipeline parameter overrides): capitalised names are parameters, written as
    the CLI's ``--param`` strings (``True`` -> ``true``); the others are settings, checked by :func:`settings`."""
    settings: dict[str, Any] = {}
    parameters: dict[str, str] = {}
    for name, value in options.items():
        if name[:1].isupper():
            parameters[name] = str(value).lower() if isinstance(value, bool) else str(value)
        else:
            settings[name] = value
    return settings, parameters


def load_settings(settings: Mapping[str, Any], config: PathLike | None = None) -> PipelineConfig:
    """The configuration: ``settings`` > environment > the ``config`` file > defaults (as the CLI's flags)."""
    from pipeline.definition.config import load_config

    return load_config(settings, path=Path(config) if config is not None else None)


# ---------------------------------------------------------------------------------------------------------- local


def open_workdir(workdir: PathLike) -> Workdir:
    """The work dir at ``workdir`` (made absolute), created and proven writable before anything runs; else a
    ``UsageError`` naming the path and why."""
    where = Workdir.at(Path(workdir))
    where.ensure_writable()
    from pipeline.local.reaper import reap_quietly

    reap_quietly(where)
    return where


def local_source(data: Any, label_column: str | None, predictor_type: str | None, workdir: Workdir) -> DataSource:
    """The input of a local run: the bundled example (``data=None``), a CSV/Parquet file or folder, or a DataFrame
    (written once into the work dir, :mod:`pipeline.api.frames`)."""
    from pipeline.local.data import example_data, user_data

    if data is None:
        if label_column or predictor_type:
            raise DataError("label_column and predictor_type describe data; pass data (a path or a DataFrame) too")
        return example_data(workdir)
    if not (label_column and predictor_type):
        raise DataError("data needs label_column and predictor_type")
    if predictor_type not in PREDICTOR_TYPES:
        raise DataError(f"predictor_type {predictor_type!r}: expected one of {', '.join(PREDICTOR_TYPES)}")
    if isinstance(data, (str, Path)):
        return user_data(Path(data), label_column, predictor_type, workdir.root)
    from pipeline.api.frames import write_frame

    columns = [str(column) for column in getattr(data, "columns", [])]
    if columns and label_column not in columns:
        raise DataError(f"label_column {label_column!r} is not a column of the DataFrame: {', '.join(columns)}")
    return user_data(write_frame(data, workdir.frames), label_column, predictor_type)


def execute_local(
    config: PipelineConfig,
    workdir: Workdir,
    source: DataSource,
    overrides: Mapping[str, str],
    *,
    use_cache: bool = True,
    infer: bool = True,
    sample_rows: int | None = None,
    on_inferred: Callable[[Inferred, Path], None] | None = None,
    on_change: Callable[[ExecutionRecord, StepRecord], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> LocalExecution:
    """Build the definition, prepare the run once (parameters, job runners, checks, the data's schema from a sample
    unless ``infer`` is off or SchemaUrl is given), then execute it locally on ``source`` with ``overrides``; what
    ``llpipe run`` and :func:`run_local` both call. A bad override, data option or data file raises before anything
    is staged. ``on_inferred`` sees the schema and its local path, and ``on_warning`` each preflight warning (instances
    against train shards, MiniBatchSize against records per instance), before the run starts."""
    from pipeline.api.execution import LocalExecution
    from pipeline.definition.schema import DEFAULT_SAMPLE_ROWS
    from pipeline.local.runner import build_local_run

    local_run = build_local_run(config, workdir, use_cache=use_cache, on_change=on_change)
    prepared = local_run.prepare(source, overrides, (sample_rows or DEFAULT_SAMPLE_ROWS) if infer else None)
    if prepared.inferred is not None and on_inferred is not None:
        on_inferred(prepared.inferred, local_run.s3.path(prepared.inferred.uri))
    for warning in prepared.warnings:
        if on_warning is not None:
            on_warning(warning)
    return LocalExecution(prepared.execute(), local_run.s3)


def run_local(
    data: Any = None,
    label_column: str | None = None,
    predictor_type: str | None = None,
    *,
    workdir: PathLike = DEFAULT_WORKDIR,
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
    from pipeline.api.arguments import in_api_words
    from pipeline.api.notebook import progress_display

    with in_api_words():
        settings, parameters = split_options(options)
        pipeline_config = load_settings(settings, config)
        where = open_workdir(workdir)
        source = local_source(data, label_column, predictor_type, where)
    display = progress_display(progress, where)
    with in_api_words(), display or nullcontext():
        return execute_local(
            pipeline_config,
            where,
            source,
            parameters,
            use_cache=use_cache,
            on_change=display.update if display else None,
        )


# ------------------------------------------------------------------------------------------------------- SageMaker


def upsert_pipeline(config: PipelineConfig, description: str | None = None) -> UpsertResult:
    """Build the definition offline, upload its code bundles, create or update the pipeline: what ``llpipe upsert``
    and :func:`deploy` both call."""
    from pipeline.core.errors import LlpipeError
    from pipeline.definition.build import build_definition
    from pipeline.sagemaker.deploy import upsert

    try:
        built = build_definition(config)
    except FileNotFoundError as error:  # a code bundle's source file is missing from the installation
        raise LlpipeError(str(error)) from None
    return upsert(config, built, description=description)


def deploy(*, description: str | None = None, config: PathLike | None = None, **settings: Any) -> UpsertResult:
    """Upload the code bundles and create or update the pipeline on SageMaker, as ``llpipe upsert`` does."""
    return upsert_pipeline(load_settings(settings, config), description)


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
    from pipeline.api.arguments import in_api_words
    from pipeline.api.sagemaker_execution import SageMakerExecution
    from pipeline.sagemaker import aws
    from pipeline.sagemaker.start import start as start_execution

    with in_api_words():
        settings, parameters = split_options(options)
        pipeline_config = load_settings(settings, config)
        session = aws.session(pipeline_config)
        arn = start_execution(pipeline_config, parameters, session=session, display_name=display_name)
    execution = SageMakerExecution(pipeline_config, arn, session=session)
    return execution.wait(poll_seconds) if wait else execution


# ---------------------------------------------------------------------------------------------- list and compare


def get_execution(
    execution_id: str,
    *,
    sagemaker: bool = False,
    workdir: PathLike = DEFAULT_WORKDIR,
    config: PathLike | None = None,
    **settings: Any,
) -> Execution:
    """One execution by id (or ARN on SageMaker)."""
    return find_execution(execution_id, workdir, load_settings(settings, config) if sagemaker else None)


def find_execution(
    execution_id: str, workdir: PathLike = DEFAULT_WORKDIR, config: PipelineConfig | None = None
) -> Execution:
    """An execution of the work dir by id (``NoResultsError`` naming it when there is none), or with ``config`` one
    on SageMaker by id or ARN: what the commands call with the configuration their flags give."""
    if config is None:
        from pipeline.api.execution import LocalExecution
        from pipeline.local.reaper import reap_quietly

        where = Workdir.at(Path(workdir))
        reap_quietly(where)
        return LocalExecution.load(where, execution_id)
    from pipeline.api.sagemaker_execution import SageMakerExecution

    return SageMakerExecution.find(config, execution_id)


def executions(
    *,
    sagemaker: bool = False,
    workdir: PathLike = DEFAULT_WORKDIR,
    max_results: int = 20,
    gate: bool = False,
    config: PathLike | None = None,
    **settings: Any,
) -> pd.DataFrame:
    """Recent executions, newest first: id, status, start, seconds, data, the parameters that differ from the
    defaults, and the gate metric (on SageMaker only with ``gate=True``: three more calls per execution)."""
    import pandas as pd

    from pipeline.api.comparison import SUMMARY_COLUMNS, recent_executions

    pipeline_config = load_settings(settings, config) if sagemaker else None
    rows = recent_executions(workdir, max_results, pipeline_config, gate=gate)
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def compare(
    first: Execution | str,
    second: Execution | str,
    *,
    sagemaker: bool = False,
    workdir: PathLike = DEFAULT_WORKDIR,
    config: PathLike | None = None,
    **settings: Any,
) -> pd.DataFrame:
    """Two executions side by side: status, parameters, metrics (value ± standard deviation), gate, model package;
    a column per execution, a row per item, and a ``differs`` column. Executions or their ids."""
    from pipeline.api.comparison import side_by_side

    def resolve(item: Execution | str) -> Execution:
        if isinstance(item, str):
            return get_execution(item, sagemaker=sagemaker, workdir=workdir, config=config, **settings)
        return item

    return side_by_side(resolve(first), resolve(second))
