"""Batch transform: score files with a model artifact and write one jsonlines object per record, in order."""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from pathlib import Path

from containerlib.linear_learner.model import LinearModel, read_model
from containerlib.linear_learner.responses import response_lines
from pipeline.core.errors import AlgorithmInputError
from pipeline.linear_learner.data import read_features_and_labels


def prediction_lines(model: LinearModel, features) -> list[str]:
    """The service's response objects of ``features``' records, as JSON lines (without their newline)."""
    return response_lines(model.predictor_type, *model.predict(features))


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
