"""The feature layout every host shares: which columns are features, label and id, in which order, and how they
become float32 features (a numeric column one feature, a categorical one a block of hash buckets)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from containerlib.encoding import FeatureLayout
from containerlib.feature_names import feature_names_in_model_order
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

    @property
    def layout(self) -> FeatureLayout:
        """The feature layout as the shared encoder (:func:`containerlib.encoding.encode_features`) takes it."""
        return FeatureLayout(self.feature_columns, self.categorical_columns, self.hash_buckets)

    @property
    def feature_names(self) -> list[str]:
        """Every feature's name in model order (:func:`containerlib.feature_names.feature_names_in_model_order`)."""
        return feature_names_in_model_order(self.layout)

    @property
    def feature_offsets(self) -> dict[str, int]:
        """Index of each feature column's first feature (the shared encoder's layout decides it)."""
        return self.layout.feature_offsets

    @property
    def feature_dim(self) -> int:
        return self.layout.feature_dim

    @property
    def text_columns(self) -> list[str]:
        """Columns read as text: categorical features and the id."""
        return list(self.categorical_columns) + ([self.id_column] if self.id_column else [])

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
    return Schema(
        label_column=settings.label_column,
        id_column=id_column,
        numeric_columns=tuple(column for column in features if column not in categorical),
        categorical_columns=tuple(column for column in features if column in categorical),
        hash_buckets=settings.hash_buckets,
        feature_columns=tuple(features),
        label_as_text=bool(settings.label_values or decided.get("label_values")),
        expected_columns=expected,
        layout_source=source,
    )


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
