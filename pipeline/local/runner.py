"""One local execution from start to end: build the definition, stage its code and data, interpret it, summarise.

The work dir (``pipeline.local.workdir``) holds everything: the local S3 folder, the registry, the models and the
execution records. Data is staged under ``s3://<bucket>/<pipeline>/input/<name>-<version>/`` and the same version
is the DataVersion parameter, so an unchanged data set keeps its URI and cache keys, and changed data re-runs
Preprocess and everything after it. A step failure naming a staged object names the user's file instead.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from containerlib.tables import files as tables
from pipeline.data_version import PARAMETER as DATA_VERSION
from pipeline.data_version import DataVersionError, files_version, local_s3_version
from pipeline.errors import DataError
from pipeline.files import atomic_path
from pipeline.local import preflight
from pipeline.local.environments import ImageEnvironments
from pipeline.local.executions import ExecutionRecord, ExecutionStore, StepRecord
from pipeline.local.interpreter import Interpreter
from pipeline.local.jobs import local_runners
from pipeline.local.plan import load_definition
from pipeline.local.s3 import LocalS3
from pipeline.local.workdir import Workdir
from pipeline.names import DATA_SUFFIXES

if TYPE_CHECKING:
    from pipeline.inference import Inferred


@dataclass(frozen=True)
class DataSource:
    """The input of one run: files to stage, and the parameters they imply."""

    name: str
    files: list[Path]
    base: Path
    parameters: dict[str, str]


def data_files(path: Path, workdir: Path | None = None) -> tuple[Path, list[Path]]:
    """The CSV/Parquet files of a file or folder (recursively, sorted; Preprocess's rule of which files are data,
    ``containerlib.tables.files``) and the folder they are relative to.

    Nothing under ``workdir`` is data: a work dir inside the folder holds this tool's own staged copies."""
    inside = workdir is not None and path.resolve().is_relative_to(workdir.resolve())
    if inside:
        raise DataError(f"--data {path} is inside the work dir {workdir}; give the data's own file or folder")
    if path.is_file():
        if not tables.is_data_name(path.name):
            raise DataError(f"--data {path}: not a data file; Preprocess reads {', '.join(DATA_SUFFIXES)} files")
        return path.parent, [path]
    if not path.is_dir():
        raise DataError(f"--data {path}: no such file or folder")
    files = tables.data_files(path)
    if workdir is not None:
        files = [p for p in files if not p.resolve().is_relative_to(workdir.resolve())]
    if not files:
        raise DataError(f"--data {path}: no {', '.join(DATA_SUFFIXES)} files in this folder")
    return path, files


def user_data(path: Path, label_column: str, predictor_type: str, workdir: Path | None = None) -> DataSource:
    """The user's own data (never the work dir's files); with a single file, one processing instance (a second would
    get no object)."""
    base, files = data_files(path, workdir)
    parameters = {"LabelColumn": label_column, "PredictorType": predictor_type}
    if len(files) == 1:
        parameters["ProcessingInstanceCount"] = "1"
    return DataSource(path.name.split(".")[0] or "data", files, base, parameters)


def example_data(workdir: Workdir) -> DataSource:
    """The bundled breast cancer example, written once into the work dir."""
    from pipeline.example_data import EXAMPLE_LABEL_COLUMN, EXAMPLE_PREDICTOR_TYPE, write_example_data

    folder = workdir.example_data
    files = write_example_data(folder)
    parameters = {"LabelColumn": EXAMPLE_LABEL_COLUMN, "PredictorType": EXAMPLE_PREDICTOR_TYPE}
    return DataSource("breast-cancer", files, folder, parameters)


@dataclass(frozen=True)
class StagedData:
    """Data staged into the local S3 folder: its prefix URI and the user's own file behind each staged object."""

    uri: str  # ends with "/": the InputDataUrl of the run
    files: dict[str, Path]  # staged object URI -> the file as the user named it (--data's path, or below its folder)

    def user_paths(self, text: str) -> str:
        """``text`` with each staged object's URI replaced by the user's file: jobs name the objects they read
        (Preprocess's ``--input-source``), but the user gave ``bad.csv``, not ``s3://<bucket>/.../bad.csv``."""
        if not self.files:
            return text
        longest_first = sorted(self.files, key=len, reverse=True)  # .../a.csv must not take the start of .../a.csv.gz
        pattern = "|".join(re.escape(uri) for uri in longest_first)
        return re.sub(pattern, lambda match: str(self.files[match.group(0)]), text)


def stage_data(s3: LocalS3, source: DataSource, prefix: str, version: str) -> StagedData:
    """Copy the data into the local S3 folder under its version; returns where it went and what came from where.

    A copy, not a link: editing the user's file later must not rewrite what an earlier execution read."""
    uri = f"{prefix}/input/{source.name}-{version}/"
    files = {}
    for path in source.files:
        object_uri = uri + path.relative_to(source.base).as_posix()
        target = s3.path(object_uri)
        if not target.exists():
            with atomic_path(target) as temporary:
                shutil.copyfile(path, temporary)
        files[object_uri] = path
    return StagedData(uri, files)


def merge_parameters(implied: Mapping[str, str], overrides: Mapping[str, str]) -> dict[str, str]:
    """The data's parameters, then ``--param`` overrides; a ``--param`` contradicting a data flag is an error."""
    for name, value in overrides.items():
        if name in ("LabelColumn", "PredictorType") and name in implied and implied[name] != value:
            raise DataError(f"--param {name}={value} contradicts the data option that sets it to {implied[name]}")
    return {**implied, **overrides}


@dataclass
class LocalRun:
    """Everything one local execution needs; ``execute`` runs it and returns the record."""

    config: Any  # pipeline.config.PipelineConfig
    workdir: Workdir
    definition_json: str
    uploads: dict[str, bytes]
    use_cache: bool = True
    max_parallel: int = 2
    on_change: Callable[[ExecutionRecord, StepRecord], None] | None = None
    environments: ImageEnvironments | None = None  # the processing images' environments (default: the user's cache)

    @property
    def s3(self) -> LocalS3:
        return LocalS3(self.workdir.s3)

    @property
    def store(self) -> ExecutionStore:
        return ExecutionStore(self.workdir.executions)

    def interpreter(self) -> Interpreter:
        account = self.config.role_arn.split(":")[4]
        return Interpreter(
            runners=local_runners(
                self.workdir, region=self.config.region, account=account, environments=self.environments
            ),
            store=self.store,
            read_json=lambda uri: json.loads(self.s3.path(uri).read_text()),
            pipeline_name=self.config.pipeline_name,
            max_parallel=self.max_parallel,
            use_cache=self.use_cache,
            arn_prefix=f"arn:aws:sagemaker:{self.config.region}:{account}",
            on_change=self.on_change or (lambda record, step: None),
            has_objects=self.s3.has_objects,
        )

    def infer(self, source: DataSource, overrides: Mapping[str, str], sample_rows: int) -> Inferred | None:
        """The schema decided from the first ``sample_rows`` rows of each file; None when the user gave SchemaUrl."""
        from pipeline.inference import infer
        from pipeline.schema import sample_local

        parameters = merge_parameters(source.parameters, overrides)
        if "SchemaUrl" in parameters:
            return None
        checked, values = self.interpreter().prepare(load_definition(self.definition_json), parameters)
        preflight.check_parameters(checked, values)  # the parameter and data checks come before the sample
        if "InputDataUrl" not in overrides:
            preflight.check_data(source.files, values)
        files, base = source.files, source.base
        if "InputDataUrl" in overrides:  # the run reads that prefix of the local S3, not --data: sample what it reads
            uri = str(values["InputDataUrl"])
            base = self.s3.path(uri)
            objects = self.s3.list_objects(uri)
            files = [
                self.s3.path(found) for found in objects if tables.is_data_file(tables.path_below_prefix(uri, found))
            ]
            if not files:
                raise DataError(f"--param InputDataUrl={values['InputDataUrl']}: no data objects in the local S3")
            base = base if base.is_dir() else base.parent
        sample = sample_local(files, base, sample_rows)
        return infer(sample, values, set(parameters), self.config.pipeline_prefix)

    def execute(
        self, source: DataSource, overrides: Mapping[str, str], schemas: Mapping[str, bytes] | None = None
    ) -> ExecutionRecord:
        """Validate, stage code, schemas and data, then interpret the definition; errors before staging leave nothing.

        ``schemas`` are decided schema objects to put into the local S3 (URI -> bytes). DataVersion (unless
        overridden) is the fingerprint of the data: of ``source``'s files, or of the objects under an
        ``InputDataUrl`` override in the local S3 folder.
        """
        definition = load_definition(self.definition_json)
        interpreter = self.interpreter()
        parameters = merge_parameters(source.parameters, overrides)
        checked, values = interpreter.prepare(definition, parameters)
        preflight.check_parameters(checked, values)
        preflight.check_registry(self.workdir.registry_db)
        if "InputDataUrl" not in overrides:
            preflight.check_data(source.files, values)
        s3 = self.s3
        version = self.data_version(source, overrides)
        for uri, body in {**self.uploads, **(schemas or {})}.items():
            if not s3.path(uri).is_file() or s3.path(uri).read_bytes() != body:
                s3.put_bytes(uri, body)
        if "InputDataUrl" not in overrides:
            staged = stage_data(s3, source, self.config.pipeline_prefix, version)
            values["InputDataUrl"] = staged.uri
            interpreter = replace(interpreter, reword_failure=staged.user_paths)
        if DATA_VERSION in values and DATA_VERSION not in parameters:  # a --param DataVersion wins
            values[DATA_VERSION] = version
        return interpreter.execute(checked, values)

    def data_version(self, source: DataSource, overrides: Mapping[str, str]) -> str:
        """The fingerprint of the data this run reads (see :mod:`pipeline.data_version`)."""
        if "InputDataUrl" not in overrides:
            return files_version(source.files, source.base)
        try:
            return local_s3_version(self.s3, overrides["InputDataUrl"])
        except (DataVersionError, ValueError) as error:
            raise DataError(f"--param InputDataUrl={overrides['InputDataUrl']}: {error}") from None


def build_local_run(config: Any, workdir: Workdir, **options: Any) -> LocalRun:
    """Build the definition offline for ``config`` and wrap it in a ``LocalRun``."""
    from pipeline.definition import build_definition

    built = build_definition(config)
    return LocalRun(config, workdir, built.definition_json, built.uploads, **options)
