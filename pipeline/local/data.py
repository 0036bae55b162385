"""What a local run reads: the user's files or the bundled example (``DataSource``), or the objects under an
``InputDataUrl`` override in the local S3 folder, and how the user's files are staged there.

Data is staged under ``s3://<bucket>/<pipeline>/input/<name>-<version>/`` and the same version is the DataVersion
parameter, so an unchanged data set keeps its URI and cache keys, and changed data re-runs Preprocess and everything
after it. A step failure naming a staged object names the user's file instead (``StagedData.user_paths``).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from containerlib.tables import files as tables
from pipeline.core.data_version import DataVersionError, files_version, local_s3_version
from pipeline.core.errors import DataError
from pipeline.core.files import atomic_path
from pipeline.core.names import DATA_SUFFIXES
from pipeline.local.s3 import LocalS3
from pipeline.local.workdir import Workdir


@dataclass(frozen=True)
class DataSource:
    """The input of one run: files to stage, and the parameters they imply."""

    name: str
    files: list[Path]
    base: Path
    parameters: dict[str, str]
    skipped: tuple[str, ...] = ()  # what looked like data and is not read, said as a warning each


def data_files(path: Path, workdir: Path | None = None) -> tuple[Path, list[Path]]:
    """The CSV/Parquet files of a file or folder (recursively, sorted; Preprocess's rule of which files are data,
    ``containerlib.tables.files``) and the folder they are relative to.

    Nothing under ``workdir`` is data: a work dir inside the folder holds this tool's own staged copies."""
    inside = workdir is not None and path.resolve().is_relative_to(workdir.resolve())
    if inside:
        raise DataError(
            f"is inside the work dir {workdir}; give the data's own file or folder", option="data", value=path
        )
    if path.is_file():
        if not tables.is_data_name(path.name):
            expected = f"{', '.join(DATA_SUFFIXES)} files"
            raise DataError(
                f"not a data file; Preprocess reads {expected}", option="data", value=path, expected=expected
            )
        return path.parent, [path]
    if not path.is_dir():
        if path.exists():  # /dev/zero, a FIFO, a socket: once reported as "no such file"
            raise DataError(
                "not a regular file or a folder (a device, FIFO or socket); give a CSV or Parquet file, or a folder "
                "of them",
                option="data",
                value=path,
            )
        text = str(path)
        if text.lower().startswith(("s3:/", "https:/", "http:/")):  # a Path folds the URI's // into one
            scheme, rest = text.split(":/", 1)
            raise DataError(
                "is a URI, and a local run reads a local CSV or Parquet file or folder: copy the objects to a local "
                "folder first (the AWS CLI's s3 sync), or run on SageMaker with the pipeline parameter InputDataUrl "
                "set to the URI (llpipe start)",
                option="data",
                value=f"{scheme}://{rest.lstrip('/')}",
            )
        raise DataError("no such file or folder", option="data", value=path)
    files = tables.data_files(path)
    if workdir is not None:
        files = [p for p in files if not p.resolve().is_relative_to(workdir.resolve())]
    if not files:
        unread = "".join(f"; {entry}: {why}" for entry, why in tables.unread_entries(path)[:5])
        raise DataError(f"no {', '.join(DATA_SUFFIXES)} files in this folder{unread}", option="data", value=path)
    return path, files


def skipped_entries(path: Path) -> tuple[str, ...]:
    """A warning for each entry of a data folder that looks like data and is not read (``unread_entries``)."""
    if not path.is_dir():
        return ()
    return tuple(f"{entry} is skipped: {why}" for entry, why in tables.unread_entries(path))


def user_data(path: Path, label_column: str, predictor_type: str, workdir: Path | None = None) -> DataSource:
    """The user's own data (never the work dir's files); with a single file, one processing instance (a second would
    get no object)."""
    base, files = data_files(path, workdir)
    parameters = {"LabelColumn": label_column, "PredictorType": predictor_type}
    if len(files) == 1:
        parameters["ProcessingInstanceCount"] = "1"
    return DataSource(path.name.split(".")[0] or "data", files, base, parameters, skipped_entries(path))


def example_data(workdir: Workdir) -> DataSource:
    """The bundled breast cancer example, written once into the work dir."""
    from pipeline.local.example_data import EXAMPLE_LABEL_COLUMN, EXAMPLE_PREDICTOR_TYPE, write_example_data

    folder = workdir.example_data
    files = write_example_data(folder)
    parameters = {"LabelColumn": EXAMPLE_LABEL_COLUMN, "PredictorType": EXAMPLE_PREDICTOR_TYPE}
    return DataSource("breast-cancer", files, folder, parameters)


@dataclass(frozen=True)
class StagedData:
    """Data staged into the local S3 folder: its prefix URI and the user's own file behind each staged object."""

    uri: str  # ends with "/": the InputDataUrl of the run
    files: dict[str, Path]  # staged object URI -> the file as the user named it (the data's path, or below its folder)

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


@dataclass(frozen=True)
class RunData:
    """The data one run reads, decided once: the source's files, staged when the run starts, or (``prefix``) the
    objects already under an ``InputDataUrl`` override in the local S3 folder; ``version`` is their DataVersion."""

    source: DataSource
    files: list[Path]  # what preflight scans (the source's files) and the schema sample reads
    base: Path
    version: str
    prefix: str | None = None  # the InputDataUrl override; None: the source's files are staged and read

    @property
    def staged(self) -> bool:
        """Whether the run stages the source's files (and preflight scans them): no InputDataUrl override."""
        return self.prefix is None


def run_data(s3: LocalS3, source: DataSource, input_data_url: str | None, sampled: bool) -> RunData:
    """The data of a run on ``source``, or on the objects under ``input_data_url`` (the override) when given.

    For an override the files are the prefix's data objects (what the sample reads, when ``sampled``: none is an
    error); its version is that of every object under it, as for ``llpipe start``."""
    if input_data_url is None:
        return RunData(source, source.files, source.base, files_version(source.files, source.base))
    base = s3.path(input_data_url)
    objects = s3.list_objects(input_data_url)
    files = [s3.path(uri) for uri in objects if tables.is_data_file(tables.path_below_prefix(input_data_url, uri))]
    if sampled and not files:
        raise DataError("no data objects in the local S3", option="InputDataUrl", value=input_data_url)
    try:
        version = local_s3_version(s3, input_data_url)
    except (DataVersionError, ValueError) as error:
        raise DataError(str(error), option="InputDataUrl", value=input_data_url) from None
    return RunData(source, files, base if base.is_dir() else base.parent, version, input_data_url)
