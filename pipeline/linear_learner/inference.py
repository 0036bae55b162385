"""Batch transform: score files with a model artifact and write one jsonlines object per record, in order."""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from pathlib import Path

from containerlib.linear_learner.model import LinearModel, read_model
from containerlib.linear_learner.responses import response_lines
from pipeline.core.errors import AlgorithmInputError
from pipeline.linear_learner.data import iter_file

TRANSFORM_RECORDS = 65_536  # records read, scored and written at a time: memory holds these, never a whole file


def prediction_lines(model: LinearModel, features) -> list[str]:
    """The service's response objects of ``features``' records, as JSON lines (without their newline)."""
    return response_lines(model.predictor_type, *model.predict(features))


def transform_files(model_path: Path, input_files: Sequence[Path], output_dir: Path, content_type: str) -> list[Path]:
    """Write ``output_dir/<name>.out`` for every input, ``TRANSFORM_RECORDS`` records at a time; all outputs appear
    only if every file succeeds."""
    model = read_model(model_path)
    output_dir.mkdir(parents=True, exist_ok=True)
    written: list[tuple[Path, Path]] = []
    try:
        for path in input_files:
            target = output_dir / (path.name + ".out")
            # unique per writer: two transforms into one folder never share a temporary file
            temporary = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
            written.append((temporary, target))
            with temporary.open("w") as out:
                _transform_file(model, model_path, path, content_type, out)
    except BaseException:
        for temporary, _ in written:
            temporary.unlink(missing_ok=True)
        raise
    for temporary, target in written:
        temporary.replace(target)
    return [target for _, target in written]


def _transform_file(model: LinearModel, model_path: Path, path: Path, content_type: str, out) -> None:
    """Score one file a piece at a time, each piece's lines written before the next is read."""
    pieces = 0
    for _, features, _ in iter_file(path, content_type, TRANSFORM_RECORDS, labels_in_csv=False):
        pieces += 1
        if features.shape[1] != model.feature_dim:
            raise AlgorithmInputError(
                f"{path}: records have {features.shape[1]} features; the model expects {model.feature_dim} "
                f"({model_path})"
            )
        if features.shape[0]:
            out.write("".join(line + "\n" for line in prediction_lines(model, features)))
    if not pieces and model.feature_dim:  # no records at all: as a whole file of none, 0 features
        raise AlgorithmInputError(
            f"{path}: records have 0 features; the model expects {model.feature_dim} ({model_path})"
        )
