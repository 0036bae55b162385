"""The local batch transform streams (issue 39): a file is read, scored and written a piece at a time, and its
output is what scoring it whole gives, byte for byte."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.mxnet_oracle import service_artifact

from containerlib.linear_learner.model import read_model
from containerlib.recordio.writer import dense_layout
from pipeline.core.errors import AlgorithmInputError
from pipeline.linear_learner import inference
from pipeline.linear_learner.inference import prediction_lines, transform_files

RNG = np.random.default_rng(39)
WEIGHTS, BIAS = RNG.normal(size=(5, 3)).astype(np.float32), RNG.normal(size=3).astype(np.float32)


@pytest.mark.parametrize("content_type", ["text/csv", "application/x-recordio-protobuf"])
def test_a_file_scored_in_pieces_gives_the_whole_file_s_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content_type: str
) -> None:
    model_path = tmp_path / "model.tar.gz"
    model_path.write_bytes(service_artifact("multiclass_classifier", WEIGHTS, BIAS))
    features = RNG.normal(size=(103, 5)).astype(np.float32)
    data = tmp_path / ("data.csv" if content_type == "text/csv" else "data.pbr")
    if content_type == "text/csv":
        np.savetxt(data, features, delimiter=",", fmt="%.9g")
    else:
        data.write_bytes(dense_layout(5, labelled=False).frames(features, None).tobytes())
    monkeypatch.setattr(inference, "TRANSFORM_RECORDS", 10)  # 11 pieces
    [output] = transform_files(model_path, [data], tmp_path / "out", content_type)
    whole = prediction_lines(read_model(model_path), features)
    assert output.read_text() == "".join(line + "\n" for line in whole)


def test_a_bad_record_in_a_later_piece_fails_the_transform_and_leaves_no_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model_path = tmp_path / "model.tar.gz"
    model_path.write_bytes(service_artifact("multiclass_classifier", WEIGHTS, BIAS))
    good, bad = tmp_path / "a.csv", tmp_path / "b.csv"
    good.write_text("1,2,3,4,5\n" * 30)
    bad.write_text("1,2,3,4,5\n" * 30 + "1,2,3,4\n")
    monkeypatch.setattr(inference, "TRANSFORM_RECORDS", 10)
    expected = (
        f"{bad}: row 31, column 5 is ''; expected a finite number (CSV without header, label in the first column)"
    )
    with pytest.raises(AlgorithmInputError) as raised:
        transform_files(model_path, [good, bad], tmp_path / "out", "text/csv")
    assert str(raised.value) == expected
    assert list((tmp_path / "out").iterdir()) == []
