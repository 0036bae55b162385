"""Batch transform: score files with a model artifact and write one jsonlines object per record, in order."""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from evaluation.linear_learner_model import LinearModel, read_model
from pipeline.core.errors import AlgorithmInputError
from pipeline.linear_learner.data import read_features_and_labels


def prediction_lines(model: LinearModel, features) -> list[str]:
    """The service's response objects: binary {score, predicted_label}, multiclass {score: [..], ..}, {score}."""
    score, label = model.predict(features)
    # repr of a finite Python float is valid JSON and round-trips exactly; formatting beats json.dumps per record
    if not np.all(np.isfinite(score)):
        raise ValueError("the model produced a non-finite score; its weights or the input overflow float range")
    if model.predictor_type == "regressor":
        return [f'{{"score": {s!r}}}' for s in score.tolist()]
    if model.predictor_type == "multiclass_classifier":
        return [
            f'{{"score": [{", ".join(map(repr, row))}], "predicted_label": {k}}}'
            for row, k in zip(score.tolist(), label.tolist(), strict=True)
        ]
    return [f'{{"score": {s!r}, "predicted_label": {k}}}' for s, k in zip(score.tolist(), label.tolist(), strict=True)]


def transform_files(model_path: Path, input_files: Sequence[Path], output_dir: Path, content_type: str) -> list[Path]:
    """Write ``output_dir/<name>.out`` for every input; all outputs appear only if every file succeeds."""
    model = read_model(model_path)
    output_dir.mkdir(parents=True, exist_ok=True)
    written: list[tuple[Path, Path]] = []
    try:
        for path in input_files:
            features, _ = read_features_and_labels(path, content_type, labels_in_csv=False)
            if features.shape[1] != model.feature_dim:
                raise AlgorithmInputError(
                    f"{path}: records have {features.shape[1]} features; the model expects "
                    f"{model.feature_dim} ({model_path})"
                )
            target = output_dir / (path.name + ".out")
            # unique per writer: two transforms into one folder never share a temporary file
            temporary = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
            lines = prediction_lines(model, features) if features.shape[0] else []
            temporary.write_text("".join(line + "\n" for line in lines))
            written.append((temporary, target))
    except BaseException:
        for temporary, _ in written:
            temporary.unlink(missing_ok=True)
        raise
    for temporary, target in written:
        temporary.replace(target)
    return [target for _, target in written]
