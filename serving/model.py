"""The featurizer's and the labels container's model data: the schema the training run used and its Preprocess
summary (``preprocessing/model_data.py`` writes them as ``model.tar.gz``), read into what serving needs."""

from __future__ import annotations

import json
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from containerlib.encoding import ColumnEncoding, FeatureLayout
from containerlib.names import (
    SERVING_SCHEMA_FILE,
    SERVING_SUMMARY_FILE,
    UNSEEN_CHOICES,
    UNSEEN_OTHER,
)


@dataclass(frozen=True)
class ServingSpec:
    """How requests become features and answers get label values, fixed by the training run."""

    layout: FeatureLayout
    predictor_type: str
    label_column: str
    id_column: str | None
    missing_policy: str  # Preprocess's --missing: impute, error, zero or drop (serving cannot drop: drop answers 400)
    label_values: tuple[str, ...] | None  # predicted_label i -> label_values[i]; None: labels are the numbers
    unseen: str = UNSEEN_OTHER  # a value outside a one-hot column's vocabulary: "other" (scored) or "refuse" (400)

    @property
    def columns(self) -> tuple[str, ...]:
        return self.layout.feature_columns


def feature_names(schema: dict) -> list[str]:
    """Every feature's name in model order (``column``, ``column=value``, ``column=(other)``, ``column#bucket``,
    ``column=(missing)``) from the model data's schema: the i-th weight of the model belongs to the i-th name."""
    return layout_of(schema, {}).feature_names


def layout_of(schema: dict, summary: dict) -> FeatureLayout:
    """The feature layout the training run used: feature order, categorical columns, each column's encoding."""
    categorical = summary.get("categorical") or {}
    encodings = schema.get("encodings") or categorical.get("encodings") or {}
    return FeatureLayout(
        tuple(schema["feature_columns"]),
        tuple(schema.get("categorical_columns") or categorical.get("columns") or ()),
        int(schema.get("hash_buckets") or categorical.get("hash_buckets") or 1),
        tuple(ColumnEncoding.from_json(column, document) for column, document in encodings.items()),
        tuple((str(column), float(value)) for column, value in sorted((schema.get("centres") or {}).items())),
        tuple((str(column), str(kind)) for column, kind in sorted((schema.get("times") or {}).items())),
    )


def spec_from_documents(schema: dict, summary: dict, unseen: str = UNSEEN_OTHER) -> ServingSpec:
    """The spec from the schema (feature order, each column's encoding) and the summary (policy, labels);
    ``unseen``: what a value outside a one-hot vocabulary gets (:data:`UNSEEN_CHOICES`)."""
    if unseen not in UNSEEN_CHOICES:
        raise ValueError(f"unseen categories must be one of {list(UNSEEN_CHOICES)}, got {unseen!r}")
    layout = layout_of(schema, summary)
    if summary.get("feature_dim") not in (None, layout.feature_dim):
        raise ValueError(f"the schema gives {layout.feature_dim} features, the summary {summary['feature_dim']}")
    values = summary.get("label_values") or schema.get("label_values")
    return ServingSpec(
        layout=layout,
        predictor_type=str(summary.get("predictor_type") or schema["predictor_type"]),
        label_column=str(summary.get("label_column") or schema["label_column"]),
        id_column=summary.get("id_column") or schema.get("id_column"),
        missing_policy=str(summary.get("missing_policy") or "error"),
        label_values=tuple(str(value) for value in values) if values else None,
        unseen=unseen,
    )


def load_spec(model_dir: Any, unseen: str = UNSEEN_OTHER) -> ServingSpec:
    """The spec from an unpacked model folder (``/opt/ml/model``) or a ``model.tar.gz``."""
    documents = model_documents(model_dir)
    return spec_from_documents(documents[SERVING_SCHEMA_FILE], documents[SERVING_SUMMARY_FILE], unseen)


# The featurizer's model data is two JSON documents (the schema and the Preprocess summary, kB to a few MB with
# thousands of columns): a tar holding more, or larger members, is refused from its headers before it is inflated.
DOCUMENT_LIMIT = 64 * 2**20  # bytes, each document
MAX_MEMBERS = 8


def model_documents(model_dir: Any) -> dict[str, Any]:
    """The schema and summary documents (file name -> parsed JSON) of an unpacked model folder, a
    ``model.tar.gz``, or one opened as a binary file (its bytes read from S3, say); an archive is streamed, its
    members bounded (:data:`DOCUMENT_LIMIT`, :data:`MAX_MEMBERS`)."""
    if hasattr(model_dir, "read"):
        return _archived_documents(model_dir, "the model data")
    path = Path(model_dir)
    if path.is_file():
        with path.open("rb") as handle:
            return _archived_documents(handle, str(path))
    return {name: json.loads((path / name).read_text()) for name in (SERVING_SCHEMA_FILE, SERVING_SUMMARY_FILE)}


def _archived_documents(source: Any, where: str) -> dict[str, Any]:
    try:
        return _streamed_documents(source, where)
    except (tarfile.TarError, EOFError, zlib.error) as error:
        raise ValueError(f"{where}: not a readable gzip tar archive ({error})") from None


def _streamed_documents(source: Any, where: str) -> dict[str, Any]:
    wanted = (SERVING_SCHEMA_FILE, SERVING_SUMMARY_FILE)
    documents: dict[str, Any] = {}
    with tarfile.open(fileobj=source, mode="r|gz") as archive:
        for count, info in enumerate(archive, start=1):
            if count > MAX_MEMBERS or info.size > DOCUMENT_LIMIT:
                raise ValueError(
                    f"{where}: member {info.name!r} ({info.size:,} bytes, member {count}) is above the model data's "
                    f"bounds ({MAX_MEMBERS} members of at most {DOCUMENT_LIMIT:,} bytes); refused unread"
                )
            if info.name in wanted:
                member = archive.extractfile(info)
                if member is None:
                    raise ValueError(f"{where}: {info.name} is not a file")
                documents[info.name] = json.loads(member.read())
            if len(documents) == len(wanted):
                return documents
    missing = [name for name in wanted if name not in documents]
    raise ValueError(f"{where}: no member {missing[0]}")
