"""The featurizer's and the labels container's model data: the schema the training run used and its Preprocess
summary (``preprocessing/model_data.py`` writes them as ``model.tar.gz``), read into what serving needs."""

from __future__ import annotations

import json
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from containerlib.encoding import FeatureLayout
from containerlib.names import SERVING_SCHEMA_FILE, SERVING_SUMMARY_FILE


@dataclass(frozen=True)
class ServingSpec:
    """How requests become features and answers get label values, fixed by the training run."""

    layout: FeatureLayout
    predictor_type: str
    label_column: str
    id_column: str | None
    missing_policy: str  # Preprocess's --missing: error, zero or drop (serving cannot drop: drop answers 400)
    label_values: tuple[str, ...] | None  # predicted_label i -> label_values[i]; None: labels are the numbers

    @property
    def columns(self) -> tuple[str, ...]:
        return self.layout.feature_columns


def spec_from_documents(schema: dict, summary: dict) -> ServingSpec:
    """The spec from the schema (feature order, categorical columns, buckets) and the summary (policy, labels)."""
    categorical = summary.get("categorical") or {}
    layout = FeatureLayout(
        tuple(schema["feature_columns"]),
        tuple(schema.get("categorical_columns") or categorical.get("columns") or ()),
        int(schema.get("hash_buckets") or categorical.get("hash_buckets") or 1),
    )
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
    )


def load_spec(model_dir: Any) -> ServingSpec:
    """The spec from an unpacked model folder (``/opt/ml/model``) or a ``model.tar.gz``."""
    documents = model_documents(model_dir)
    return spec_from_documents(documents[SERVING_SCHEMA_FILE], documents[SERVING_SUMMARY_FILE])


def model_documents(model_dir: Any) -> dict[str, Any]:
    """The schema and summary documents (file name -> parsed JSON) of an unpacked model folder, a
    ``model.tar.gz``, or one opened as a binary file (its bytes read from S3, say)."""
    if hasattr(model_dir, "read"):
        with tarfile.open(fileobj=model_dir, mode="r:gz") as archive:
            return _archived_documents(archive, "the model data")
    path = Path(model_dir)
    if path.is_file():
        with tarfile.open(path, "r:gz") as archive:
            return _archived_documents(archive, str(path))
    return {name: json.loads((path / name).read_text()) for name in (SERVING_SCHEMA_FILE, SERVING_SUMMARY_FILE)}


def _archived_documents(archive: tarfile.TarFile, where: str) -> dict[str, Any]:
    documents = {}
    for name in (SERVING_SCHEMA_FILE, SERVING_SUMMARY_FILE):
        member = archive.extractfile(name)
        if member is None:
            raise ValueError(f"{where}: {name} is not a file")
        documents[name] = json.loads(member.read())
    return documents
