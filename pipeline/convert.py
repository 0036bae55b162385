"""CSV/Parquet files to RecordIO-protobuf shards for Linear Learner: validated, dealt round-robin, all-or-nothing.

What ``llpipe convert`` (pipeline/cli/convert.py) runs; its help text describes the rules.
"""

from __future__ import annotations

import gzip
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pipeline.errors import ConvertError
from pipeline.names import DATA_SUFFIXES

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

CHUNK_ROWS = 50_000
PROGRESS_MIN_BYTES = 16 << 20


@dataclass
class Conversion:
    """What one conversion wrote: rows, feature count, the shard files, and how long it took."""

    rows: int
    features: int
    shards: list[Path]
    sparse: bool
    seconds: float

    def describe(self) -> str:
        size = sum(path.stat().st_size for path in self.shards)
        kind = "sparse" if self.sparse else "dense"
        folder = self.shards[0].parent
        return (
            f"converted {self.rows:,} rows x {self.features:,} features to {len(self.shards)} {kind} RecordIO-protobuf "
            f"shard(s) in {folder} ({size / 1e6:,.1f} MB, {self.seconds:.1f} s)"
        )


def convert(
    inputs: list[Path], label_column: str, output: Path, shards: int, sparse: bool = False, overwrite: bool = False
) -> Conversion:
    """Convert ``inputs`` into ``shards`` RecordIO-protobuf files in ``output``; ConvertError on bad input."""
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    started = time.perf_counter()
    if shards < 1:
        raise ConvertError(f"--shards must be at least 1, got {shards}")
    files = _input_files(inputs)
    names = [output / f"part-{i:05d}.pbr" for i in range(shards)]
    existing = sorted(output.glob("part-*.pbr")) if output.is_dir() else []
    if existing and not overwrite:
        raise ConvertError(f"{output} already holds shards ({existing[0].name}, ...); use --overwrite to replace them")
    if output.exists() and not output.is_dir():
        raise ConvertError(f"--output {output} is a file, not a folder")
    created = not output.exists()
    output.mkdir(parents=True, exist_ok=True)
    total_bytes = sum(path.stat().st_size for path in files)
    work = Path(tempfile.mkdtemp(prefix=".convert-", dir=output))
    try:
        writer = _ShardWriter([work / name.name for name in names], sparse)
        progress = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            DownloadColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
            disable=total_bytes < PROGRESS_MIN_BYTES,
        )
        with progress, writer:
            task = progress.add_task("converting", total=total_bytes)
            done_bytes = 0
            columns: list[str] | None = None
            for path in files:
                progress.update(task, description=path.name)
                for table, read_bytes in _read_table(path, label_column, columns):
                    columns = columns or table.feature_columns
                    writer.write(table.features, table.labels)
                    progress.update(task, completed=done_bytes + read_bytes)
                done_bytes += path.stat().st_size
        if writer.rows == 0:
            raise ConvertError("the input files hold no data rows")
        if writer.rows < shards:
            raise ConvertError(f"--shards {shards} is more than the {writer.rows} input rows (no empty shards)")
        for stale in existing:
            stale.unlink()
        for name in names:
            (work / name.name).replace(name)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        if created:
            shutil.rmtree(output, ignore_errors=True)
        raise
    shutil.rmtree(work, ignore_errors=True)
    return Conversion(writer.rows, len(columns or []), names, sparse, time.perf_counter() - started)


def _input_files(inputs: list[Path]) -> list[Path]:
    """The input files: files as given, folders expanded to their CSV/Parquet files (sorted, recursive)."""
    files: list[Path] = []
    for path in inputs:
        if path.is_dir():
            found = sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and p.name.lower().endswith(DATA_SUFFIXES) and p.name[0] not in "._"
            )
            if not found:
                raise ConvertError(f"{path}: no .csv, .csv.gz, .parquet or .pq files in this folder")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise ConvertError(f"{path}: no such file or folder")
    return files


def _is_parquet(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(4) == b"PAR1"


@dataclass
class _Table:
    feature_columns: list[str]
    features: np.ndarray
    labels: np.ndarray


def _read_table(path: Path, label_column: str, columns: list[str] | None) -> Iterator[tuple[_Table, int]]:
    """Chunks of one file as float32 features/labels, with how many bytes of the file were read so far."""
    if _is_parquet(path):
        yield from _read_parquet(path, label_column, columns)
    else:
        yield from _read_csv(path, label_column, columns)


def _read_csv(path: Path, label_column: str, columns: list[str] | None) -> Iterator[tuple[_Table, int]]:
    import pandas as pd

    with open(path, "rb") as raw:
        gzipped = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        text: IO[bytes] = gzip.GzipFile(fileobj=raw) if gzipped else raw
        try:
            reader = pd.read_csv(text, chunksize=CHUNK_ROWS, low_memory=False, encoding="utf-8")
            first_row = 1
            for frame in reader:
                header = [str(c) for c in frame.columns]
                yield _to_table(path, frame, header, label_column, columns, first_row), raw.tell()
                first_row += len(frame)
        except pd.errors.EmptyDataError:
            raise ConvertError(f"{path}: empty file, expected a header row") from None
        except (pd.errors.ParserError, UnicodeDecodeError, gzip.BadGzipFile, EOFError) as error:
            raise ConvertError(f"{path}: not a readable CSV file: {error}") from None


def _read_parquet(path: Path, label_column: str, columns: list[str] | None) -> Iterator[tuple[_Table, int]]:
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except Exception as error:  # pyarrow raises several types for a corrupt file
        raise ConvertError(f"{path}: not a readable Parquet file: {error}") from None
    header = list(parquet.schema_arrow.names)
    total_rows = max(parquet.metadata.num_rows, 1)
    size = path.stat().st_size
    first_row = 1
    for batch in parquet.iter_batches(batch_size=CHUNK_ROWS):
        frame = batch.to_pandas()
        yield _to_table(path, frame, header, label_column, columns, first_row), int(size * first_row / total_rows)
        first_row += len(frame)


def _to_table(
    path: Path, frame: pd.DataFrame, header: list[str], label_column: str, columns: list[str] | None, first_row: int
) -> _Table:
    """Check the columns against the first file's, then convert every value to a finite float32."""
    import numpy as np

    if label_column not in header:
        raise ConvertError(f"{path}: no label column {label_column!r} (columns: {', '.join(header)})")
    features = [c for c in header if c != label_column]
    if columns is not None and features != columns:
        raise ConvertError(
            f"{path}: feature columns differ from the first file's: got {', '.join(features)}; "
            f"expected {', '.join(columns)}"
        )
    if not features:
        raise ConvertError(f"{path}: no feature columns besides the label column {label_column!r}")
    return _Table(
        features,
        np.column_stack([_numbers(path, frame[c], c, first_row) for c in features]).astype(np.float32),
        _numbers(path, frame[label_column], label_column, first_row).astype(np.float32),
    )


def _numbers(path: Path, column: pd.Series, name: str, first_row: int) -> np.ndarray:
    """A column as float64 values that are finite in float32; ConvertError naming the first bad value."""
    import numpy as np
    import pandas as pd

    if column.dtype.kind in "fiub":
        values = column.to_numpy(dtype=np.float64)
    else:
        values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~(np.abs(values) <= np.finfo(np.float32).max)  # NaN, infinity, or beyond float32
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raw: Any = column.iloc[i]
        if pd.isna(raw):
            problem = "is empty or NaN"
        elif np.isnan(values[i]):
            problem = f"{str(raw)!r} is not a number"
        else:
            problem = f"{str(raw)!r} is infinite or beyond float32's range"
        raise ConvertError(f"{path}: row {first_row + i}, column {name!r}: {problem}")
    return values


class _ShardWriter:
    """Deals rows round-robin to open shard files."""

    def __init__(self, paths: list[Path], sparse: bool) -> None:
        self._paths = paths
        self._sparse = sparse
        self._files: list[IO[bytes]] = []
        self.rows = 0

    def __enter__(self) -> _ShardWriter:
        self._files = [open(path, "wb") for path in self._paths]  # noqa: SIM115 - closed in __exit__
        return self

    def __exit__(self, *exc_info: object) -> None:
        for handle in self._files:
            handle.close()

    def write(self, features: np.ndarray, labels: np.ndarray) -> None:
        from containerlib.recordio import write_dense, write_sparse

        n = len(self._files)
        for shard, handle in enumerate(self._files):
            first = (shard - self.rows) % n
            X, y = features[first::n], labels[first::n]
            if not len(X):
                continue
            if self._sparse:
                import scipy.sparse

                write_sparse(handle, scipy.sparse.csr_matrix(X), y)
            else:
                write_dense(handle, X, y)
        self.rows += len(features)
