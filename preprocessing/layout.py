"""The feature layout every host shares: which columns are features, label and id, in which order, and how they
become float32 features (a numeric column one feature, a categorical one a block of hash buckets)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from containerlib.encoding import DEFAULT_HASH_BUCKETS, HASHED, NUMBER, ColumnEncoding, FeatureLayout
from containerlib.time_text import KINDS
from preprocessing import PreprocessError
from preprocessing.settings import Settings


@dataclass(frozen=True)
class Schema:
    """The columns read from every file and the feature layout they produce (identical on every host)."""

    label_column: str
    id_column: str | None
    numeric_columns: tuple[str, ...]
    categorical_columns: tuple[str, ...]
    hash_buckets: int
    feature_columns: tuple[str, ...]  # in output order: numeric ones as one feature, categorical ones as a block
    label_as_text: bool  # with --label-values, labels are matched as the text in the file
    expected_columns: frozenset[str] | None  # every file has exactly these columns; None: extra columns are ignored
    layout_source: str  # where the feature order comes from, for messages
    encodings: tuple[ColumnEncoding, ...] = ()  # decided per column (the schema's), else number / hashed
    centres: tuple[tuple[str, float], ...] = ()  # the schema's centres of numeric columns (FeatureLayout.centres)
    times: tuple[tuple[str, str], ...] = ()  # numeric columns of date-time or time-of-day text (FeatureLayout.times)

    @property
    def layout(self) -> FeatureLayout:
        """The feature layout as the shared encoder (:func:`containerlib.encoding.encode_features`) takes it."""
        return FeatureLayout(
            self.feature_columns,
            self.categorical_columns,
            self.hash_buckets,
            self.encodings,
            self.centres,
            self.times,
        )

    @property
    def feature_names(self) -> list[str]:
        """Every feature's name in model order (``column``, ``column=value``, ``column#bucket``, ...)."""
        return self.layout.feature_names

    @property
    def feature_offsets(self) -> dict[str, int]:
        """Index of each feature column's first feature (the shared encoder's layout decides it)."""
        return self.layout.feature_offsets

    @property
    def feature_dim(self) -> int:
        return self.layout.feature_dim

    @property
    def text_columns(self) -> list[str]:
        """Columns read as text: categorical features, date-time or time-of-day text (read as seconds) and the id."""
        times = [column for column, _ in self.times]
        return list(self.categorical_columns) + times + ([self.id_column] if self.id_column else [])

    @property
    def used_columns(self) -> list[str]:
        return [self.label_column, *self.feature_columns] + ([self.id_column] if self.id_column else [])


def given_or_decided(given: Sequence[str], decided: dict[str, Any], key: str) -> list[str]:
    """An argument the user gave wins over the schema's decision (the client never decides what the user set)."""
    return list(given) if given else list(decided.get(key) or [])


def resolve_schema(settings: Settings, decided: dict[str, Any], name: str, header: Sequence[str]) -> Schema:
    """The feature layout every host shares, from the arguments, the decided schema and (last) a fixed rule;
    ``header`` is that of the first file, named ``name`` in messages.

    Feature order: ``--feature-columns``, else the schema's ``feature_columns``, else every column but the label
    and the id sorted by name (a rule needing no coordination: hosts that see the same columns agree)."""
    decided_label = decided.get("label_column")
    if decided_label is not None and decided_label != settings.label_column:
        raise PreprocessError(
            f"the schema was decided for label column {decided_label!r} but --label-column (pipeline parameter "
            f"LabelColumn) is {settings.label_column!r}; infer the schema again (leave pipeline parameter SchemaUrl "
            "unset) or pass the matching label column"
        )
    id_column = settings.id_column or decided.get("id_column") or None
    categorical = given_or_decided(settings.categorical_columns, decided, "categorical_columns")
    excluded = {settings.label_column, id_column}
    if settings.feature_columns:
        features, expected, source = list(settings.feature_columns), None, "--feature-columns"
    elif decided.get("feature_columns"):
        features = list(decided["feature_columns"])
        expected = frozenset([settings.label_column, *features] + ([id_column] if id_column else []))
        source = "the schema"
    else:
        require_columns(name, header, [settings.label_column] + ([id_column] if id_column else []))
        features = sorted(column for column in header if column not in excluded)
        expected, source = frozenset(header), f"the columns of {PurePosixPath(name).name} sorted by name"
    clash = excluded.intersection(features)
    if clash:
        raise PreprocessError(f"feature columns must not include the label or id column: {sorted(clash)}")
    duplicated = sorted({column for column in features if features.count(column) > 1})
    if duplicated:
        raise PreprocessError(f"feature columns listed twice: {duplicated}")
    unknown = [column for column in categorical if column not in features]
    if unknown:
        raise PreprocessError(
            f"categorical columns {unknown} are not feature columns {features}; check --categorical-columns "
            "(pipeline parameter CategoricalColumns)"
        )
    if not features:
        raise PreprocessError(f"{name}: no feature columns besides the label {settings.label_column!r}")
    numeric = tuple(column for column in features if column not in categorical)
    return Schema(
        label_column=settings.label_column,
        id_column=id_column,
        numeric_columns=numeric,
        categorical_columns=tuple(column for column in features if column in categorical),
        hash_buckets=settings.hash_buckets or DEFAULT_HASH_BUCKETS,
        feature_columns=tuple(features),
        label_as_text=bool(settings.label_values or decided.get("label_values")),
        expected_columns=expected,
        layout_source=source,
        encodings=decided_encodings(decided, features, categorical, settings.hash_buckets),
        centres=decided_centres(decided, numeric),
        times=decided_times(decided, numeric),
    )


def decided_encodings(
    decided: dict[str, Any], features: Sequence[str], categorical: Sequence[str], hash_buckets: int
) -> tuple[ColumnEncoding, ...]:
    """Each feature column's encoding as the schema decided it (``encodings``: vocabularies, buckets, imputation
    values). ``--hash-buckets N`` (N > 0) overrides: every categorical column hashed into N buckets, its imputation
    kept. A column the schema decided as a number but the arguments declare categorical (or the reverse) takes the
    arguments' kind, hashed."""
    documents = decided.get("encodings") or {}
    if not isinstance(documents, dict):
        raise PreprocessError(f"the schema's encodings must be an object of column: encoding, got {documents!r}")
    encodings = []
    for column in features:
        if column not in documents:
            continue
        try:
            encoding = ColumnEncoding.from_json(column, documents[column])
        except (ValueError, TypeError, AttributeError) as error:
            raise PreprocessError(f"the schema's encoding of column {column!r} cannot be read ({error})") from None
        text = column in categorical
        if hash_buckets > 0 and text:
            encoding = ColumnEncoding(column, HASHED, buckets=hash_buckets, indicator=encoding.indicator)
        elif text != (encoding.kind != NUMBER):
            kind = HASHED if text else NUMBER
            buckets = (hash_buckets or DEFAULT_HASH_BUCKETS) if text else 0
            encoding = ColumnEncoding(column, kind, buckets=buckets, fill=encoding.fill, indicator=encoding.indicator)
        encodings.append(encoding)
    return tuple(encodings)


def decided_times(decided: dict[str, Any], numeric: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The schema's ``times`` (column -> ``datetime`` or ``time``) of the numeric feature columns."""
    given = decided.get("times") or {}
    unknown = sorted({str(kind) for kind in given.values()} - set(KINDS)) if isinstance(given, dict) else [given]
    if unknown:
        raise PreprocessError(f"the schema's times must map column names to one of {list(KINDS)}, not {unknown}")
    return tuple((column, str(given[column])) for column in numeric if column in given)


def decided_centres(decided: dict[str, Any], numeric: Sequence[str]) -> tuple[tuple[str, float], ...]:
    """The schema's ``centres`` of the numeric feature columns (a centre of a column that is not one is unused)."""
    given = decided.get("centres") or {}
    if not isinstance(given, dict):
        raise PreprocessError(f"the schema's centres must map column names to numbers, not {given!r}")
    try:
        return tuple((column, float(given[column])) for column in numeric if column in given)
    except (TypeError, ValueError) as error:
        raise PreprocessError(f"the schema's centres must map column names to numbers ({error})") from None


def require_columns(name: str, header: Sequence[str], required: Sequence[str]) -> None:
    missing = [column for column in required if column not in header]
    if missing:
        raise PreprocessError(f"{name}: missing column(s) {missing}; the header has {list(header)}")


def check_columns(name: str, header: Sequence[str], schema: Schema) -> None:
    """A file's columns, matched by name against the shared layout: missing or unexpected ones fail naming both."""
    required = schema.used_columns
    missing = [column for column in required if column not in header]
    unexpected = [] if schema.expected_columns is None else [c for c in header if c not in schema.expected_columns]
    if missing or unexpected:
        raise PreprocessError(
            f"{name}: columns differ from the layout every host uses ({schema.layout_source}): "
            f"missing {missing}, unexpected {unexpected}; every file needs the same column names (in any order)"
        )
