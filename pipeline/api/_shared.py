"""What the Python API and the ``llpipe`` commands share, not part of the API: options split into settings and
parameter overrides, the configuration, the work dir, a local run's input and its execution, the upsert, an
execution by id, the local stages' endpoints and a model version's deployment to a stage. The commands call these
with what their flags give, :mod:`pipeline.api`'s functions with their keyword arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.core.errors import DataError
from pipeline.core.names import PREDICTOR_TYPES
from pipeline.local.workdir import DEFAULT_ROOT, Workdir

if TYPE_CHECKING:
    import pandas as pd

    from pipeline.api.execution import Execution, LocalExecution
    from pipeline.core.deployment import DeployTarget, Outcome, Progress
    from pipeline.definition.config import PipelineConfig
    from pipeline.definition.schema_inference import Inferred
    from pipeline.local.data import DataSource
    from pipeline.local.endpoints import LocalEndpoints
    from pipeline.local.executions import ExecutionRecord, StepRecord
    from pipeline.sagemaker.deploy import UpsertResult
    from pipeline.sagemaker.endpoint_requests import Traffic

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
    ``llpipe run`` and :func:`pipeline.api.run_local` both call. A bad override, data option or data file raises
    before anything is staged; a data file's own fault (``preflight.scan_data``) before the definition is built.
    ``on_inferred`` sees the schema and its local path, and ``on_warning`` each preflight warning (instances against
    train shards, MiniBatchSize against records per instance), before the run starts.
    After the run the execution is logged to MLflow unless the configuration turns tracking off
    (:mod:`pipeline.api.tracking`); a store that cannot be reached is one more warning, never a failure."""
    from pipeline.api.execution import LocalExecution
    from pipeline.definition.schema import DEFAULT_SAMPLE_ROWS
    from pipeline.local import preflight
    from pipeline.local.runner import build_local_run

    # the data files' own faults need no definition: refused before it is built (the SDK's import and build on a
    # definition cache miss take seconds), in the words the run's preflight has for them
    scanned = None if "InputDataUrl" in overrides else preflight.scan_data(source.files)
    local_run = build_local_run(config, workdir, use_cache=use_cache, on_change=on_change)
    rows = (sample_rows or DEFAULT_SAMPLE_ROWS) if infer else None
    prepared = local_run.prepare(source, overrides, rows, scanned)
    if prepared.inferred is not None and on_inferred is not None:
        on_inferred(prepared.inferred, local_run.s3.path(prepared.inferred.uri))
    for warning in prepared.warnings:
        if on_warning is not None:
            on_warning(warning)
    execution = LocalExecution(prepared.execute(), local_run.s3)
    from pipeline.api.tracking import track

    track(execution, config, workdir, on_warning or _warn)
    return execution


def _warn(text: str) -> None:
    """A warning of the API on stderr, one line (Python's ``warnings`` would add the source line)."""
    import sys

    print(f"Warning: {text}", file=sys.stderr)


def upsert_pipeline(config: PipelineConfig, description: str | None = None) -> UpsertResult:
    """Build the definition offline, upload its code bundles, create or update the pipeline: what ``llpipe upsert``
    and :func:`pipeline.api.upsert` both call."""
    from pipeline.core.errors import LlpipeError
    from pipeline.definition.build import build_definition
    from pipeline.sagemaker.deploy import upsert

    try:
        built = build_definition(config)
    except FileNotFoundError as error:  # a code bundle's source file is missing from the installation
        raise LlpipeError(str(error)) from None
    return upsert(config, built, description=description)


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


def local_endpoints(
    workdir: str | Path | None = None, config: PipelineConfig | None = None, ports: dict[str, int] | None = None
) -> LocalEndpoints:
    """The stages of ``workdir`` (default ``.llpipe``); ``ports`` sets a stage's port for its first deployment
    (staging 8081, prod 8080; 0 picks a free one), after which the stage keeps its port."""
    from pipeline.local.endpoints import LocalEndpoints

    folder = open_workdir(workdir if workdir is not None else DEFAULT_WORKDIR)
    return LocalEndpoints(folder, config or load_settings({}), ports)


def deploy_version(
    config: PipelineConfig,
    stage: str,
    model_package: str | int | None = None,
    *,
    sagemaker: bool = False,
    workdir: PathLike = DEFAULT_WORKDIR,
    port: int | None = None,
    smoke_rows: int | None = None,
    quality_tolerance: float | None = None,
    progress: Progress = lambda message: None,
    if_newer: bool = False,
    allow_new_columns: bool = False,
    traffic: Traffic | None = None,
    poll_seconds: float = 30.0,
) -> Outcome:
    """Deploy ``model_package`` to ``stage``'s endpoint on SageMaker or, without ``sagemaker``, to the work dir's
    local stage (``port`` for its first deployment), smoke-test it and record the pass
    (:func:`pipeline.core.deployment.deploy`): what ``llpipe deploy`` and :func:`pipeline.api.deploy_model` call.
    ``smoke_rows`` and ``quality_tolerance`` default to the deploy flow's (200 rows, 0.01)."""
    from pipeline.core.deployment import DEFAULT_QUALITY_TOLERANCE, DEFAULT_SMOKE_ROWS, deploy

    target: DeployTarget
    guard: AbstractContextManager[None]
    if sagemaker:
        from pipeline.sagemaker.endpoints import SageMakerEndpoints

        target = SageMakerEndpoints(config, traffic=traffic, poll_seconds=poll_seconds)
        guard = nullcontext()  # the service refuses an endpoint that is updating
    else:
        local = local_endpoints(workdir, config, {stage: port} if port is not None else None)
        target, guard = local, local.changing(stage)
    requested = None if model_package is None else str(model_package)
    with guard:
        return deploy(
            target,
            stage,
            requested,
            DEFAULT_SMOKE_ROWS if smoke_rows is None else smoke_rows,
            DEFAULT_QUALITY_TOLERANCE if quality_tolerance is None else quality_tolerance,
            progress,
            if_newer,
            allow_new_columns=allow_new_columns,
        )


def compare_runs(
    items: list[Execution | str], sagemaker: bool, workdir: PathLike, pipeline_config: PipelineConfig
) -> pd.DataFrame:
    """The MLflow runs of ``items`` (run ids, execution ids or logged executions) side by side, read from the store:
    the configured tracking URI, else with ``sagemaker`` the MLflow ARN, else the work dir's own."""
    from pipeline.api.mlflow_comparison import read_runs, runs_side_by_side
    from pipeline.api.tracking import default_tracking_uri
    from pipeline.core.errors import UsageError

    references = []
    for item in items:
        if isinstance(item, str):
            references.append(item)
            continue
        run = item.mlflow_run
        if run is None:
            raise UsageError(f"execution {item.id} has no MLflow run: log it first (tracking on), or give a run id")
        references.append(run.run_id)
    uri = pipeline_config.mlflow_tracking_uri or (pipeline_config.mlflow_arn if sagemaker else None)
    uri = uri or default_tracking_uri(open_workdir(workdir))
    return runs_side_by_side(read_runs(uri, references, pipeline_config.experiment_name))
