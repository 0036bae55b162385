"""One local execution: prepared once, then executed.

``LocalRun.prepare`` decides everything before anything is written: the checked plan and every parameter's value,
the job runners, the checks of the parameters, the registry and the data (each data file is pre-scanned once), the
data the run reads and its version, and (with a sample size) the schema. ``PreparedRun.execute`` then writes: the
code bundles and the schema into the local S3 folder, the user's files staged under their version, and the
interpreter runs the plan. The work dir (``pipeline.local.workdir``) holds everything.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pipeline.core.data_version import PARAMETER as DATA_VERSION
from pipeline.core.errors import DataError, opt
from pipeline.core.forkserver import ForkServers, shared_pool
from pipeline.definition.config import DEFAULT_MODEL_PACKAGE_GROUP, PipelineConfig
from pipeline.definition.schema_inference import Inferred
from pipeline.local import preflight
from pipeline.local.data import DataSource, RunData, run_data, stage_data
from pipeline.local.environments import ImageEnvironments
from pipeline.local.executions import ExecutionRecord, ExecutionStore, StepRecord
from pipeline.local.interpreter import Interpreter
from pipeline.local.jobs import local_runners
from pipeline.local.plan import Plan, load_definition
from pipeline.local.s3 import LocalS3
from pipeline.local.table_groups import OtherTable, check_group_columns
from pipeline.local.workdir import Workdir

# the parameters a local run's data options set, and the option that sets each
DATA_OPTIONS = {"LabelColumn": "label_column", "PredictorType": "predictor_type"}


def merge_parameters(implied: Mapping[str, str], overrides: Mapping[str, str]) -> dict[str, str]:
    """The data's parameters, then the overrides; an override contradicting a data option is an error."""
    for name, value in overrides.items():
        if name in DATA_OPTIONS and name in implied and implied[name] != value:
            setting = DATA_OPTIONS[name]
            raise DataError(f"{opt(name, value)} contradicts {opt(setting, implied[name])}", option=name, value=value)
    return {**implied, **overrides}


@dataclass
class LocalRun:
    """Everything local executions of one built definition share; ``prepare`` decides one, ``execute`` runs it."""

    config: PipelineConfig
    workdir: Workdir
    definition_json: str
    uploads: dict[str, bytes]
    use_cache: bool = True
    max_parallel: int = 2
    on_change: Callable[[ExecutionRecord, StepRecord], None] | None = None
    environments: ImageEnvironments | None = None  # the processing images' environments (default: the user's cache)
    # size the jobs' counts and volumes from the data and refuse a given volume too small for it (False: the values
    # as given, so a test can show a job failing past its volume)
    size_from_data: bool = True
    # the fork servers its job processes start from, shared with other runs and closed by the caller
    # (pipeline.core.forkserver.sharing makes one current); None: the run starts and ends its own
    fork_servers: ForkServers | None = None

    @property
    def s3(self) -> LocalS3:
        return LocalS3(self.workdir.s3)

    @property
    def store(self) -> ExecutionStore:
        return ExecutionStore(self.workdir.executions)

    def _interpreter(self, fork_servers: ForkServers) -> Interpreter:
        """The interpreter with a job runner for every step type, built once per prepared run."""
        account = self.config.role_arn.split(":")[4]
        return Interpreter(
            runners=local_runners(
                self.workdir,
                region=self.config.region,
                account=account,
                environments=self.environments,
                fork_servers=fork_servers,
            ),
            store=self.store,
            read_json=lambda uri: json.loads(self.s3.path(uri).read_text()),
            pipeline_name=self.config.pipeline_name,
            max_parallel=self.max_parallel,
            use_cache=self.use_cache,
            arn_prefix=f"arn:aws:sagemaker:{self.config.region}:{account}",
            on_change=self.on_change or (lambda record, step: None),
            has_objects=self.s3.has_objects,
            local_path=self.s3.path,
        )

    def prepare(
        self,
        source: DataSource,
        overrides: Mapping[str, str],
        sample_rows: int | None = None,
        scanned: preflight.DataFacts | None = None,
    ) -> PreparedRun:
        """Decide the run without writing anything; a bad override, data option or data file raises here (the data
        files' own faults already before the definition was built, when ``scanned`` holds ``preflight.scan_data``'s
        findings for the source's files).

        In order: the plan and the parameter values (the data's, then ``overrides``), the checks that need only
        those, the registry check, the data the run reads (``source``, or the objects under an ``InputDataUrl``
        override) with the pre-scan of its files and its version, and, with ``sample_rows``, the schema decided
        from that many first rows of each file unless ``SchemaUrl`` is given (its values pass ``decide``'s own
        checks: label values that fit the predictor type, at least 3 classes, a matching ``NumClasses``)."""
        from pipeline.definition.parameters import check_overrides

        shared = self.fork_servers or shared_pool()
        servers = shared or ForkServers()  # started on demand, so a run prepared but never executed starts none
        interpreter = self._interpreter(servers)
        requested = merge_parameters(source.parameters, overrides)
        plan, values = interpreter.prepare(load_definition(self.definition_json), requested)
        preflight.check_parameters(plan, values)  # before the data is read (only its own faults, scan_data, come first)
        preflight.check_registry(self.workdir.registry_db)
        # a first run calculates the data-quality baseline later runs are checked against
        group = self.config.model_package_group
        values.update(preflight.first_baseline(self.workdir.registry_db, group, values, requested))
        data = run_data(self.s3, source, overrides.get("InputDataUrl"), sampled=sample_rows is not None)
        warnings: list[str] = []
        rows = None
        if data.staged:  # objects under an InputDataUrl override are in the local S3 already: not pre-scanned
            facts = preflight.check_data(data.files, values, scanned)
            warnings = [*source.skipped, *preflight.scaling_warnings(facts, values)]
            rows = facts.rows
        if "SchemaUrl" in requested:
            preflight.check_schema_url(self.s3, str(values["SchemaUrl"]), values, data.files if data.staged else None)
        if self.size_from_data:
            values.update(self.sizes(data, values, requested, rows))
        inferred = None
        if sample_rows is not None and "SchemaUrl" not in requested:
            from pipeline.local import schema_cache

            inferred = schema_cache.inferred(
                self.workdir.schemas,
                data.files,
                data.base,
                sample_rows,
                values,
                set(requested),
                self.config.pipeline_prefix,
            )
            values.update(check_overrides(plan.parameters, inferred.parameters))  # a value given is never replaced
            requested = {**requested, **inferred.parameters}
            # another table than the group's approved version's: in the default group it runs in a group of its
            # own; in a group the user chose it is refused now, not at DataQuality with a violation per column
            schema = json.loads(inferred.body)
            try:
                check_group_columns(self.workdir, group, values, schema["feature_columns"], schema["label_column"])
            except OtherTable as other:
                if group != DEFAULT_MODEL_PACKAGE_GROUP:
                    raise
                return self._in_own_group(other, source, overrides, sample_rows, scanned)
        own = None if shared else servers
        prepared = PreparedRun(self, plan, values, frozenset(requested), data, inferred, interpreter, tuple(warnings))
        return replace(prepared, fork_servers=servers, own_servers=own)

    def _in_own_group(
        self,
        other: OtherTable,
        source: DataSource,
        overrides: Mapping[str, str],
        sample_rows: int,
        scanned: preflight.DataFacts | None,
    ) -> PreparedRun:
        """The run prepared in the table's own model package group (the definition built for it), saying so."""
        from pipeline.definition.build import build_definition

        config = replace(self.config, model_package_group=other.own_group)
        built = build_definition(config)
        own = replace(self, config=config, definition_json=built.definition_json, uploads=built.uploads)
        prepared = own.prepare(source, overrides, sample_rows, scanned)
        said = (
            f"this table's feature columns differ from those of the approved version of model package group "
            f"{self.config.model_package_group}: it runs in a group of its own, {other.own_group}; give that group "
            "to the commands that read the registry (models, deploy, serve, monitor), or choose one with the config "
            "setting model_package_group"
        )
        return replace(prepared, warnings=(said, *prepared.warnings))

    def sizes(self, data: RunData, values: Mapping[str, Any], requested: Mapping[str, str], rows: int | None) -> dict:
        """The counts and volumes the data needs (``pipeline.core.sizing``; a GB scaled by ``LLPIPE_LIMIT_SCALE``,
        as the local jobs' volumes are); a given volume too small for the data raises ``ParameterError``."""
        from pipeline.core.instances import volume_bytes
        from pipeline.core.sizing import InputData, plan_sizes, sized_parameters

        if data.staged:
            objects = [(path.relative_to(data.base).as_posix(), path.stat().st_size) for path in data.files]
        else:
            objects = [(uri, self.s3.path(uri).stat().st_size) for uri in self.s3.list_objects(str(data.prefix))]
        if not objects:
            return {}
        plan = plan_sizes(InputData(tuple(objects), rows=rows), values, set(requested), gb=max(1, volume_bytes(1)))
        return sized_parameters(plan, values, set(requested))

    def execute(self, source: DataSource, overrides: Mapping[str, str]) -> ExecutionRecord:
        """Prepare and execute a run with nothing decided in between (no schema inference); the finished record."""
        return self.prepare(source, overrides).execute()


@dataclass(frozen=True)
class PreparedRun:
    """One local execution, decided: the plan, every parameter's value, the data, the schema, the interpreter."""

    run: LocalRun
    plan: Plan
    values: Mapping[str, Any]
    requested: frozenset[str]  # the parameters set by the data options, overrides or the decided schema
    data: RunData
    inferred: Inferred | None
    interpreter: Interpreter
    warnings: tuple[str, ...] = ()  # what the user should hear before it starts (preflight.scaling_warnings)
    fork_servers: ForkServers | None = None  # what the job processes start from
    own_servers: ForkServers | None = None  # the run's own pool (not a caller's): ended with the run

    def execute(self) -> ExecutionRecord:
        """Write the code bundles and the schema, stage the data, interpret the plan; the finished record.

        DataVersion (unless given) is the data's version: of the source's files, or of the objects under the
        ``InputDataUrl`` override."""
        try:
            self._warm_fork_servers()
            return self._execute()
        finally:  # on every way out (a stop signal raises Interrupted): the run's own servers end with it
            if self.own_servers is not None:
                self.own_servers.close()

    def _warm_fork_servers(self) -> None:
        """Start the fork servers of the plan's processing and training jobs that will run, which preload while the
        code, schema and data are written. A step the cache may skip is left to start its server with its first job
        (a server preloading for a cache hit is CPU for nothing), as is one whose environment is not built yet."""
        if self.fork_servers is None:
            return
        from pipeline.linear_learner.launcher import TRAINING_PRELOAD
        from pipeline.local.cache import caching_enabled
        from pipeline.local.jobs.processing import ProcessingJobs

        processing = self.interpreter.runners.get("Processing")
        runs = [
            step
            for step in self.plan.steps.values()
            if not (self.interpreter.use_cache and caching_enabled(step.definition))
        ]
        if any(step.type in ("Training", "Tuning") for step in runs):
            self.fork_servers.warm(sys.executable, TRAINING_PRELOAD, os.environ)
        for step in runs:
            if step.type == "Processing" and isinstance(processing, ProcessingJobs):
                processing.warm(step.arguments)

    def _execute(self) -> ExecutionRecord:
        s3 = self.run.s3
        schemas = {self.inferred.uri: self.inferred.body} if self.inferred else {}
        for uri, body in {**self.run.uploads, **schemas}.items():
            if not s3.path(uri).is_file() or s3.path(uri).read_bytes() != body:
                s3.put_bytes(uri, body)
        values = dict(self.values)
        interpreter = self.interpreter
        if self.data.staged:
            staged = stage_data(s3, self.data.source, self.run.config.pipeline_prefix, self.data.version)
            values["InputDataUrl"] = staged.uri
            interpreter = replace(interpreter, reword_failure=staged.user_paths)
        if DATA_VERSION in values and DATA_VERSION not in self.requested:  # an override of DataVersion wins
            values[DATA_VERSION] = self.data.version
        return interpreter.execute(self.plan, values)


def build_local_run(config: PipelineConfig, workdir: Workdir, **options: Any) -> LocalRun:
    """Build the definition offline for ``config`` and wrap it in a ``LocalRun``."""
    from pipeline.definition.build import build_definition

    built = build_definition(config)
    return LocalRun(config, workdir, built.definition_json, built.uploads, **options)
