"""The serving featurizer's model data: ``model/model.tar.gz`` holding the schema the run used (the decided schema
with the feature layout resolved) and Preprocess's summary, so the featurizer encodes requests exactly as this
execution encoded its training data. Written by the first host only (everything in it is host-independent)."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path
from typing import Any

from containerlib.names import SCHEMA_FORMAT, SERVING_SCHEMA_FILE, SERVING_SUMMARY_FILE
from preprocessing.labels import LabelSpec
from preprocessing.layout import Schema

MODEL = "model"  # the output folder
MODEL_DATA = "model.tar.gz"


def resolved_schema(decided: dict[str, Any], schema: Schema, labels: LabelSpec, missing_policy: str) -> dict[str, Any]:
    """The decided schema with what this run resolved (feature order, categorical columns, each column's encoding:
    vocabulary or buckets, imputation values; every feature's name in model order; labels)."""
    return {
        **decided,
        "format": SCHEMA_FORMAT,
        "label_column": schema.label_column,
        "id_column": schema.id_column,
        "feature_columns": list(schema.feature_columns),
        "categorical_columns": list(schema.categorical_columns),
        "hash_buckets": schema.hash_buckets,
        "encodings": {encoding.column: encoding.to_json() for encoding in schema.layout.columns},
        "feature_names": schema.feature_names,
        "missing_policy": missing_policy,
        "predictor_type": labels.predictor_type,
        "label_values": list(labels.values) if labels.values else None,
    }


def write_model_data(target: Path, schema: dict[str, Any], summary: dict[str, Any]) -> None:
    """``model.tar.gz`` with ``schema.json`` and ``summary.json`` (fixed member times: same content, same bytes)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, content in ((SERVING_SCHEMA_FILE, schema), (SERVING_SUMMARY_FILE, summary)):
            data = (json.dumps(content, indent=2, sort_keys=True) + "\n").encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            archive.addfile(info, io.BytesIO(data))
    zipped = bytearray(gzip.compress(buffer.getvalue(), mtime=0))
    zipped[9] = 255  # the header's OS byte ("unknown"), which Python versions set differently: same bytes on each
    target.write_bytes(bytes(zipped))
