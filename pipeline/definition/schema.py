"""The schema, decided once by the client from a sample of the input, never inside a processing host.

Preprocess hosts each see only their own files, so they cannot agree on column order or types by themselves. Before
a run the client reads the first rows of the input (local files for ``llpipe run``; for ``llpipe start`` and
``llpipe schedule`` the first objects under ``InputDataUrl``, with ranged GETs), decides what the user did not set
(the feature columns in one order, the categorical ones, the label values, the number of classes) and writes a small
JSON object at a content-addressed key, ``<pipeline prefix>/schemas/<sha256>.json``. The ``SchemaUrl`` parameter
names it; Preprocess gets it as a FullyReplicated input. Short decisions also become plain parameters (a parameter
value holds at most 1,024 characters). The built-in default schema decides nothing.
"""

from __future__ import annotations

import hashlib
import io
import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from containerlib.errors import TableError
from containerlib.names import SCHEMA_FORMAT
from containerlib.tables.files import is_data_file, is_gzip, is_hidden, is_parquet, path_below_prefix, unread_table
from containerlib.tables.sample import missing_cell_text
from containerlib.time_text import FORMS, LABELS, REFUSED, text_kind, to_seconds
from pipeline.core.errors import PARAMETERS, SchemaError, opt
from pipeline.core.names import DATA_SUFFIXES
from pipeline.core.s3_listing import list_pages
from pipeline.definition.centring import decide_centres

if TYPE_CHECKING:
    import pandas as pd

# a decided list travels as a parameter only when Preprocess's container argument carrying it (flag included) fits
# the 256 characters of the service's ContainerArgument shape (pipeline.definition.service_limits checks every one)
CONTAINER_ARGUMENT_LIMIT = 256
DEFAULT_SAMPLE_ROWS = 10_000  # rows read from the start of each sampled file
DEFAULT_SAMPLE_OBJECTS = 16  # S3 objects sampled (the first ones in key order)
DEFAULT_SAMPLE_BYTES = 4 << 20  # bytes read from each sampled S3 object at most
DECIDED_PARAMETERS = ("CategoricalColumns", "LabelValues", "NumClasses")  # decided when the user did not set them


def schema_bytes(document: Mapping[str, Any]) -> bytes:
    """The canonical bytes of a schema document (sorted keys), so equal decisions give equal keys."""
    return (json.dumps(dict(document), indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


DEFAULT_SCHEMA = schema_bytes({"format": SCHEMA_FORMAT})


def schema_uri(pipeline_prefix: str, body: bytes) -> str:
    """``<pipeline prefix>/schemas/<sha256 of the bytes>.json``: the content names the object."""
    return f"{pipeline_prefix}/schemas/{hashlib.sha256(body).hexdigest()}.json"


def default_schema_uri(pipeline_prefix: str) -> str:
    """Where the built-in schema that decides nothing lives (uploaded with the code bundles)."""
    return schema_uri(pipeline_prefix, DEFAULT_SCHEMA)


# ------------------------------------------------------------------------------------------------------------ sample


@dataclass
class Sample:
    """The first rows of some input files: each file's header and the rows as text (missing values as NaN)."""

    source: str
    headers: dict[str, list[str]] = field(default_factory=dict)  # file name -> its columns, as written
    frames: list[pd.DataFrame] = field(default_factory=list)
    rows_per_file: int = DEFAULT_SAMPLE_ROWS
    bytes_read: int = 0
    files_total: int = 0  # data files under the source (objects listed, for S3)
    skipped: list[str] = field(default_factory=list)  # objects that look like tables but are not read, and why

    @property
    def rows(self) -> int:
        return sum(len(frame) for frame in self.frames)

    def add(self, name: str, header: list[str], frame: pd.DataFrame) -> None:
        """One file's header (checked by the table reader: named, unique columns) and first rows."""
        self.headers[name] = header
        self.frames.append(frame)

    def describe(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "files_sampled": len(self.headers),
            "files_total": self.files_total,
            "rows_per_file": self.rows_per_file,
            "rows": self.rows,
        }


def sample_local(files: list[Path], base: Path, rows: int = DEFAULT_SAMPLE_ROWS) -> Sample:
    """The header and first ``rows`` rows of every local file (read by ``containerlib.tables``, as Preprocess reads)."""
    from containerlib.tables.sample import sample_file

    # the folder name only: the schema (and so the cache key of Preprocess) must not depend on where it was run
    sample = Sample(source=base.resolve().name, rows_per_file=rows, files_total=len(files))
    for path in files:
        name = path.relative_to(base).as_posix() if path.is_relative_to(base) else str(path)
        try:
            read = sample_file(path, name, rows)
        except TableError as error:
            raise SchemaError(str(error)) from None
        sample.bytes_read += read.bytes_read
        sample.add(name, read.header, read.frame)
    return sample


def sample_s3(
    s3: Any,
    uri: str,
    rows: int = DEFAULT_SAMPLE_ROWS,
    max_objects: int = DEFAULT_SAMPLE_OBJECTS,
    max_bytes: int = DEFAULT_SAMPLE_BYTES,
) -> Sample:
    """The first rows of the first ``max_objects`` data objects under an S3 prefix (ListObjectsV2, ranged GETs).

    CSV: bytes ``0..max_bytes-1``, cut after the last complete line. Gzip CSV: the same prefix decompressed as a
    stream (a gzip prefix decompresses to a prefix of the text). Parquet: objects up to ``max_bytes`` read whole;
    larger ones through ranged reads of the footer and of as many row groups as ``max_bytes`` holds, spread over
    the file (``containerlib.tables.sample.sampled_row_groups``). The objects and
    their rows are read by the rules Preprocess reads them with (``containerlib.tables``)."""
    from containerlib.s3_uri import split_s3_uri
    from containerlib.tables.sample import complete_lines, csv_sample, parquet_sample

    try:
        bucket, prefix = split_s3_uri(uri)
    except ValueError:
        raise SchemaError(f"InputDataUrl {uri!r} is not an s3:// URI") from None
    skipped: list[str] = []
    objects = _list_data_objects(s3, bucket, prefix, max_objects, skipped)
    if not objects:
        unread = "".join(f"; {reason}" for reason in skipped[:5])
        raise NothingToSample(f"no {', '.join(DATA_SUFFIXES)} objects under {uri} to infer the schema from{unread}")
    sample = Sample(source=uri, rows_per_file=rows, files_total=len(objects), skipped=skipped)
    for key, size in objects[:max_objects]:
        name = _relative_key(prefix, key)
        try:
            if is_parquet(key):
                handle = RangedObject(s3, bucket, key, size, budget=max_bytes)
                passthrough = (SampleBudgetExceeded,)
                budget = None if size <= max_bytes else max_bytes  # a small object is read whole, in one GET
                header, frame = parquet_sample(handle, f"s3://{bucket}/{key}", rows, passthrough, budget)
                sample.bytes_read += handle.bytes_read
            else:
                whole = size <= max_bytes
                data = _get_range(s3, bucket, key, 0, min(size, max_bytes)) if size else b""
                sample.bytes_read += len(data)
                if is_gzip(key):
                    decompressor = zlib.decompressobj(wbits=31)
                    try:
                        text = decompressor.decompress(data)
                    except zlib.error as error:
                        raise SchemaError(f"s3://{bucket}/{key}: not a readable gzip file ({error})") from None
                    data = complete_lines(text, whole and decompressor.eof)
                else:
                    data = complete_lines(data, whole)
                header, frame = csv_sample(data, f"s3://{bucket}/{key}", rows)
        except TableError as error:
            raise SchemaError(str(error)) from None
        sample.add(name, header, frame)
    return sample


def _relative_key(prefix: str, key: str) -> str:
    """Where an object under an S3Prefix lands in a processing job's input folder (the key after the prefix, or its
    last part when the prefix is the whole key): the name Preprocess sees it by."""
    return key[len(prefix) :].lstrip("/") or key.rsplit("/", 1)[-1]


def _list_data_objects(
    s3: Any, bucket: str, prefix: str, wanted: int, skipped: list[str] | None = None
) -> list[tuple[str, int]]:
    """Data objects (key, size) under the prefix in key order, as ShardedByS3Key sees them; stops once ``wanted``
    are found. Which objects are data is Preprocess's rule (``containerlib.tables.files``), applied to each object's
    path below the prefix; a visible object that looks like a table but is not read (``.csv.bz2``) is added to
    ``skipped`` with why."""
    found: list[tuple[str, int]] = []
    for page in list_pages(s3, bucket, prefix):
        for item in page:
            key = item["Key"]
            below = path_below_prefix(prefix, key)
            if is_data_file(below):
                found.append((key, int(item["Size"])))
            elif skipped is not None and not is_hidden(below) and unread_table(key.rsplit("/", 1)[-1]):
                skipped.append(f"s3://{bucket}/{key} is skipped: {unread_table(key.rsplit('/', 1)[-1])}")
        if len(found) >= wanted:
            break
    return found


def _get_range(s3: Any, bucket: str, key: str, start: int, end: int) -> bytes:
    """Bytes ``start..end-1`` of an object (one GetObject with a Range header)."""
    response = s3.get_object(Bucket=bucket, Key=key, Range=f"bytes={start}-{end - 1}")
    return response["Body"].read()


class NothingToSample(SchemaError):
    """The input holds no data objects yet (a schedule may be created before data lands)."""


class SampleBudgetExceeded(SchemaError):
    """Reading the sample would take more bytes than allowed."""


class RangedObject(io.RawIOBase):
    """A read-only, seekable file over one S3 object: each read is a ranged GetObject, within a byte budget."""

    def __init__(self, s3: Any, bucket: str, key: str, size: int, budget: int):
        self.s3, self.bucket, self.key, self.size, self.budget = s3, bucket, key, size, budget
        self.position = 0
        self.bytes_read = 0
        self.cache: dict[int, bytes] = {}  # start offset -> bytes fetched there

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = max(0, base + offset)
        return self.position

    def readinto(self, buffer: Any) -> int:
        end = min(self.size, self.position + len(buffer))
        if end <= self.position:
            return 0
        data = self._fetch(self.position, end)
        buffer[: len(data)] = data
        self.position += len(data)
        return len(data)

    def _fetch(self, start: int, end: int) -> bytes:
        if self.size <= self.budget and not self.cache:  # small object: one GET of the whole object
            self.cache[0] = _get_range(self.s3, self.bucket, self.key, 0, self.size) if self.size else b""
            self.bytes_read += self.size
        for offset, data in self.cache.items():
            if offset <= start and end <= offset + len(data):
                return data[start - offset : end - offset]
        if self.bytes_read + (end - start) > self.budget:
            raise SampleBudgetExceeded(
                f"s3://{self.bucket}/{self.key}: sampling a row group needs more than {self.budget} bytes; "
                f"raise {opt('sample_bytes')}, or give the decisions as {opt(PARAMETERS)} and pass "
                f"{opt('infer', False)}"
            )
        data = _get_range(self.s3, self.bucket, self.key, start, end)
        self.bytes_read += len(data)
        self.cache[start] = data
        return data


# ------------------------------------------------------------------------------------------------------------ decide


@dataclass(frozen=True)
class Decision:
    """The schema document, the parameters to pass with it, and what to tell the user."""

    document: dict[str, Any]
    parameters: dict[str, str]  # SchemaUrl is added by the caller once it knows where the schema lives
    notes: list[str]

    @property
    def body(self) -> bytes:
        return schema_bytes(self.document)


def decide(sample: Sample, values: Mapping[str, Any], given: set[str]) -> Decision:
    """Decide the schema from a sample: ``values`` are the run's parameter values (defaults filled in), ``given``
    the names the user set; a value the user gave is used as is, never replaced."""
    label = str(values["LabelColumn"])
    predictor = str(values["PredictorType"])
    id_column = str(values.get("IdColumn") or "") or None
    header = _common_header(sample, label, id_column)
    features = [column for column in header if column not in (label, id_column)]
    if not features:
        raise SchemaError(f"{sample.source}: no feature columns besides the label {label!r}")
    notes: list[str] = []
    parameters: dict[str, str] = {}
    import pandas as pd

    frame = pd.concat(sample.frames, ignore_index=True, sort=False) if sample.frames else pd.DataFrame()

    if "CategoricalColumns" in given:
        categorical = [item.strip() for item in str(values["CategoricalColumns"]).split(",") if item.strip()]
        unknown = [column for column in categorical if column not in features]
        if unknown:
            raise SchemaError(f"CategoricalColumns names {unknown}, which are not feature columns {features}")
        _check_types(sample, [column for column in features if column not in categorical])
        times = _decide_times(frame, [column for column in features if column not in categorical])
    else:
        _check_types(sample, features)
        times = _decide_times(frame, features)
        categorical = [column for column in features if column not in times and _has_text(frame[column])]
        joined = ",".join(categorical)
        fits = len(f"--categorical-columns={joined}") <= CONTAINER_ARGUMENT_LIMIT
        if categorical and fits and not any("," in column for column in categorical):
            parameters["CategoricalColumns"] = joined
        notes.append(f"categorical columns (text values in the sample): {', '.join(categorical) or 'none'}")
    policy = str(values.get("MissingValues") or "impute")
    if policy in ("error", "drop"):
        _refuse_empty_columns(sample, [label, *features], label, policy)
    if policy == "error":
        _refuse_missing(sample, [label, *features], label)
    if id_column:
        dropped_if_empty = {"drop": [label, *features], "impute": [label]}.get(policy, [])  # rows Preprocess drops
        _refuse_empty_ids(sample, id_column, dropped_if_empty)

    label_values, num_classes = _decide_labels(frame[label], label, predictor, values, given)
    if label_values is not None and "LabelValues" not in given:
        joined = ",".join(label_values)
        fits = len(f"--label-values={joined}") <= CONTAINER_ARGUMENT_LIMIT
        if fits and not any("," in value for value in label_values):
            parameters["LabelValues"] = joined
        notes.append(f"label values (mapped to 0..{len(label_values) - 1} in this order): {', '.join(label_values)}")
    if num_classes is not None and "NumClasses" not in given:
        parameters["NumClasses"] = str(num_classes)
        notes.append(f"number of classes: {num_classes}")
    if times:
        shown = ", ".join(f"{column} ({LABELS.get(kind, 'time of day')})" for column, kind in times.items())
        notes.append(f"date and time text read as seconds: {shown}")
    numbers = frame.assign(**{column: _seconds_of(frame[column], column, kind) for column, kind in times.items()})
    centres = decide_centres(numbers, [column for column in features if column not in categorical])
    if centres:
        shown = ", ".join(f"{column} - {centre:.15g}" for column, centre in centres.items())
        notes.append(f"centred (an offset far above the spread, which float32 features would lose): {shown}")
    from pipeline.definition.encodings import decide_encodings

    # on the date and time columns' seconds: a median filled in is a number of seconds like the column's values
    train = None
    if policy == "impute":  # the medians from the rows Preprocess will train on
        from pipeline.definition.sample_splits import train_rows

        train = train_rows(sample.frames, values, label)
    encodings, encoding_notes = decide_encodings(numbers, features, categorical, values, train)
    notes.extend(encoding_notes)
    document = {
        "format": SCHEMA_FORMAT,
        "predictor_type": predictor,
        "label_column": label,
        "id_column": id_column,
        "feature_columns": features,
        "categorical_columns": categorical,
        "encodings": encodings,
        "label_values": label_values,
        "num_classes": num_classes,
        "sample": sample.describe(),
        **({"centres": centres} if centres else {}),
        **({"times": times} if times else {}),
    }
    notes.insert(0, f"feature columns: {len(features)} in the order of {next(iter(sample.headers))}")
    notes.extend(f"warning: {reason}" for reason in sample.skipped)
    return Decision(document, parameters, notes)


def _common_header(sample: Sample, label: str, id_column: str | None) -> list[str]:
    """The first file's header; every sampled file must have the same column names (in any order)."""
    if not sample.headers:
        raise SchemaError(f"{sample.source}: no files to sample")
    (first_name, header), *others = sample.headers.items()
    for required, what in ((label, "label column (LabelColumn)"), (id_column, "id column (IdColumn)")):
        if required and required not in header:
            raise SchemaError(f"{first_name}: no {what} {required!r}; the header has {header}")
    for name, columns in others:
        missing = [column for column in header if column not in columns]
        unexpected = [column for column in columns if column not in header]
        if missing or unexpected:
            raise SchemaError(
                f"{name}: columns differ from {first_name}'s: missing {missing}, unexpected {unexpected}; "
                "every file needs the same column names (in any order)"
            )
    return header


MOSTLY_NUMERIC = 0.9  # a column whose present values parse as numbers at least this often is meant to be numeric
SHOWN_VALUES = 5
_THOUSANDS = r"^[+-]?\d{1,3}(,\d{3})+(\.\d*)?$"  # 1,234 or 12,345.67: a number written with separators


def _kind(column: pd.Series) -> str:
    """What a file's sampled values of one column are: "empty", "number", "boolean" (true/false) or "text"."""
    present = column.dropna().astype(str).str.strip()
    present = present[present != ""]
    if present.empty:
        return "empty"
    if not _unparsable(present).any():
        return "number"
    return "boolean" if present.str.lower().isin(["true", "false"]).all() else "text"


def _unparsable(present: pd.Series) -> pd.Series:
    import pandas as pd

    return pd.to_numeric(present, errors="coerce").isna()


def _check_types(sample: Sample, columns: list[str]) -> None:
    """Decide each column's type on purpose: a column must be of one kind in every file (Yes/No text in one and
    booleans in another were four unrelated categories), and a numeric column with a few unparsable values (``?``,
    ``-``, ``0x10``, ``1,234``) is an error naming them and their rows, not a column silently hashed as text."""
    import pandas as pd

    for column in columns:
        kinds: dict[str, list[str]] = {}
        bad: list[tuple[str, str, int]] = []  # value, file, row (from 1)
        numeric = total = 0
        for name, frame in zip(sample.headers, sample.frames, strict=True):
            values = frame[column]
            kinds.setdefault(_kind(values), []).append(name)
            present = values.dropna().astype(str).str.strip()
            present = present[present != ""]
            unparsable = _unparsable(present)
            total += len(present)
            numeric += int((~unparsable).sum())
            bad.extend((value, name, int(row) + 1) for row, value in present[unparsable].items())
        kinds.pop("empty", None)
        separated = int(pd.Series([value for value, _, _ in bad], dtype=object).str.match(_THOUSANDS).sum())
        meant_numeric = bool(bad) and numeric + separated >= MOSTLY_NUMERIC * total
        if len(kinds) > 1 and not (set(kinds) == {"number", "text"} and meant_numeric):
            shown = "; ".join(f"{kind} in {', '.join(names[:3])}" for kind, names in sorted(kinds.items()))
            raise SchemaError(
                f"column {column!r} has a different type in different files ({shown}); every file must give a column "
                "the same type: write the files alike (e.g. true/false everywhere, or numbers everywhere)"
            )
        if meant_numeric:
            hint = (
                "; numbers with thousands separators (1,234) must be written without them (1234)" if separated else ""
            )
            shown = ", ".join(f"{value!r} ({name} row {row})" for value, name, row in bad[:SHOWN_VALUES]) + (
                f" and {len(bad) - SHOWN_VALUES} more" if len(bad) > SHOWN_VALUES else ""
            )
            raise SchemaError(
                f"column {column!r} is numeric but {len(bad)} of its {total} sampled values are not numbers: {shown}"
                f"{hint}; fix those values or leave them empty (MissingValues=impute, zero or drop), or declare the "
                f"column categorical (CategoricalColumns={column}) if it is text"
            )


def _decide_times(frame: pd.DataFrame, columns: list[str]) -> dict[str, str]:
    """``{column: kind}`` of the text columns whose sampled values are dates, date-times or times of day
    (:mod:`containerlib.time_text`), read as seconds like a Parquet or DataFrame date-time; a column with a few
    values that are not is refused naming them (hashed as text, thousands of timestamps would be noise)."""
    times: dict[str, str] = {}
    for column in columns:
        if not _has_text(frame[column]):
            continue
        texts = [str(value) for value in frame[column].dropna()]
        kind, bad = text_kind(texts)
        if kind is None:
            continue
        if kind in REFUSED:
            shown = ", ".join(repr(value) for value in bad)
            raise SchemaError(
                f"column {column!r} holds {REFUSED[kind]}, such as {shown}: write them year first with four digits "
                f"(2013-01-02, or 2013-01-02 05:00:00 with a time) to read them as seconds, or declare the column "
                f"categorical ({opt('CategoricalColumns', column)}) to hash its values as text",
                column=column,
            )
        if bad:
            shown = ", ".join(repr(value) for value in bad[:SHOWN_VALUES])
            raise SchemaError(
                f"column {column!r} holds {FORMS[kind]} but {len(bad)} of its {len(texts)} sampled values are not: "
                f"{shown}; fix those values or leave them empty (MissingValues=zero or drop), or declare the column "
                f"categorical ({opt('CategoricalColumns', column)}) to hash its values as text",
                column=column,
            )
        times[column] = kind
    return times


def _seconds_of(column: pd.Series, name: str, kind: str) -> list[float]:
    """A sampled date or time column as seconds, as Preprocess reads it (every value parses: ``_decide_times``)."""

    def bad(row: int, cell: Any) -> Exception:
        return SchemaError(f"column {name!r} row {row + 1}: {cell!r} is not {FORMS[kind]}", column=name)

    return to_seconds(column.tolist(), kind, bad)


def _has_text(column: pd.Series) -> bool:
    """True when a present value does not parse as a number (Preprocess would refuse it as a numeric feature)."""
    import pandas as pd

    present = column.dropna()
    present = present[present.astype(str).str.strip() != ""]
    return bool(pd.to_numeric(present, errors="coerce").isna().any())


def _refuse_empty_columns(sample: Sample, columns: list[str], label: str, policy: str) -> None:
    """A column with no value in any sampled row fails Preprocess under MissingValues=error at its first row and,
    under =drop, once every row is dropped: say so before anything runs, with what does work."""
    rows = sum(len(frame) for frame in sample.frames)
    for column in columns:
        if rows and all(frame[column].isna().all() for frame in sample.frames):
            fix = (
                "give the label values"
                if column == label
                else f"leave the column out of the data, or pass {opt('MissingValues', 'zero')} (a constant 0 feature)"
            )
            raise SchemaError(
                f"column {column!r} has no value in any of the {rows:,} sampled rows; with MissingValues={policy} "
                f"Preprocess would {'drop every row' if policy == 'drop' else 'fail on its first row'}: {fix}",
                column=column,
            )


def _refuse_empty_ids(sample: Sample, id_column: str, dropped_if_empty: list[str]) -> None:
    """Preprocess splits by the id's hash and fails on an empty id whatever MissingValues says (except on a row it
    drops: one with an empty value in ``dropped_if_empty``, under MissingValues=drop): say so first."""
    for name, frame in zip(sample.headers, sample.frames, strict=True):
        empty = frame[id_column].isna().to_numpy()
        if dropped_if_empty:
            empty = empty & ~frame[dropped_if_empty].isna().any(axis=1).to_numpy()
        if empty.any():
            raise SchemaError(
                f"{name} row {int(empty.argmax()) + 1}: id column {id_column!r} is empty; Preprocess would fail on it "
                "(every row needs an id to be split by; MissingValues does not apply to the id): give the row an id, "
                "or leave IdColumn unset to split by the row's content"
            )


def _refuse_missing(sample: Sample, columns: list[str], label: str) -> None:
    """Under MissingValues=error Preprocess fails on the first empty value: say so before anything runs."""
    for name, frame in zip(sample.headers, sample.frames, strict=True):
        holes = frame[columns].isna().to_numpy()
        if holes.any():
            row, column = (int(index) for index in divmod(int(holes.argmax()), len(columns)))
            drop = f"{opt('MissingValues', 'drop')} (drop the rows)"
            fix = (
                drop
                if columns[column] == label
                else f"{opt('MissingValues', 'impute')} (the training median, a missing category and indicator), "
                f"{opt('MissingValues', 'zero')} (0) or {drop}"
            )
            text = missing_cell_text(frame, columns[column], row)
            what = "is null" if text is None else "is empty" if not text.strip() else f"holds the text {text!r}"
            raise SchemaError(
                f"{name} row {row + 1}: column {columns[column]!r} {what}, a missing value; Preprocess would fail on it"
                f" with MissingValues=error: pass {fix}",
                file=name,
                row=row + 1,
                column=columns[column],
            )


def _number_text(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def _decide_labels(
    column: pd.Series, label: str, predictor: str, values: Mapping[str, Any], given: set[str]
) -> tuple[list[str] | None, int | None]:
    """(label values, number of classes) for the schema; the user's LabelValues / NumClasses are kept."""
    import pandas as pd

    texts = sorted({str(value).strip() for value in column.dropna() if str(value).strip()})
    numbers = pd.to_numeric(pd.Series(texts, dtype=object), errors="coerce")
    numeric = bool(texts) and not numbers.isna().any()
    if predictor == "regressor":
        if texts and not numeric:
            bad = [text for text, number in zip(texts, numbers, strict=True) if pd.isna(number)][:5]
            raise SchemaError(f"regressor needs numeric labels; label column {label!r} has text values {bad}")
        return None, None
    if "LabelValues" in given and str(values["LabelValues"]).strip():
        label_values = [item.strip() for item in str(values["LabelValues"]).split(",") if item.strip()]
        if predictor == "multiclass_classifier":
            return label_values, _checked_classes(len(label_values), values, given, label)
        return label_values, None
    distinct = sorted(set(numbers)) if numeric else texts
    if numeric:
        if predictor == "binary_classifier" and set(distinct) <= {0.0, 1.0}:
            return None, None
        if (
            predictor == "multiclass_classifier"
            and all(value == int(value) for value in distinct)
            and distinct == list(range(len(distinct)))
        ):
            return None, _checked_classes(len(distinct), values, given, label)
        label_values = [_number_text(value) for value in distinct]
    else:
        label_values = texts
    if predictor == "binary_classifier" and len(label_values) != 2:
        raise SchemaError(
            f"binary_classifier needs 2 label values; the sample of label column {label!r} has {len(label_values)}: "
            f"{label_values[:10]}; pass {opt('LabelValues', 'NEGATIVE,POSITIVE')}"
            + (f" or use {opt('predictor_type', 'multiclass_classifier')}" if len(label_values) > 2 else ""),
            column=label,
        )
    if predictor == "multiclass_classifier":
        return label_values, _checked_classes(len(label_values), values, given, label)
    return label_values, None


def _checked_classes(count: int, values: Mapping[str, Any], given: set[str], label: str) -> int:
    if count < 3:
        raise SchemaError(
            f"multiclass_classifier needs at least 3 classes; the sample of label column {label!r} has {count}: "
            f"use {opt('predictor_type', 'binary_classifier')}, or pass {opt('LabelValues', '...')} listing every "
            "class",
            column=label,
        )
    if "NumClasses" in given and int(values["NumClasses"]) != count:
        raise SchemaError(
            f"{opt('NumClasses', values['NumClasses'])} but label column {label!r} has {count} classes (sample or "
            f"LabelValues); pass matching values, or {opt('LabelValues', '...')} listing every class",
            option="NumClasses",
            value=values["NumClasses"],
            column=label,
        )
    return count
