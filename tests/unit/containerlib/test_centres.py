"""Columns whose offset dwarfs their spread are centred by the schema and the centre subtracted in float64 before the
features become float32, the same by every path a value takes: Preprocess's Arrow and pandas readers, and the serving
featurizer's request rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from containerlib.encoding import FeatureLayout, encode_features
from containerlib.tables.chunks import read_chunks
from containerlib.tables.header import read_header
from pipeline.definition.centring import decide_centres


def _bad(row: int, column: str, value: object) -> Exception:
    return ValueError(f"row {row}: {column}={value!r}")


@pytest.mark.parametrize(("offset", "scale"), [(1e4, 1e-3), (1e8, 1.0), (-1e12, 1e6), (1.7e9, 3600.0)])
def test_a_column_far_from_zero_gets_a_centre_that_the_same_table_always_gets(offset: float, scale: float) -> None:
    rng = np.random.default_rng(int(abs(offset)) % 97)
    samples = [
        pd.DataFrame({"x": offset + scale * rng.normal(size=rows), "near": rng.normal(size=rows)})
        for rows in (500, 2000, 9000)
    ]
    centres = [decide_centres(sample, ["x", "near"]) for sample in samples]
    assert all(set(found) == {"x"} for found in centres), "a column near zero is left as written"
    assert len({found["x"] for found in centres}) == 1, "the same centre from any sample"
    assert abs(centres[0]["x"] - offset) <= 50 * scale


@pytest.mark.parametrize("values", [[5.0, 5.0, 5.0], [1e8, None, 1e8], ["a", "b", "c"], [0.0, 1.0, 1e3]])
def test_constant_text_and_ordinary_columns_get_no_centre(values: list) -> None:
    assert decide_centres(pd.DataFrame({"x": values}), ["x"]) == {}


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_preprocess_readers_and_requests_encode_a_centred_column_alike(tmp_path: Path, suffix: str) -> None:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"big": 1e8 + rng.normal(size=50), "small": rng.normal(size=50), "y": 0})
    frame.loc[7, "big"] = np.nan
    path = tmp_path / f"t{suffix}"
    frame.to_parquet(path, index=False) if suffix == ".parquet" else frame.to_csv(path, index=False)
    layout = FeatureLayout(("big", "small"), (), 1, centres=(("big", 1e8),))
    centres = layout.numeric_centres(layout.numeric_columns)
    header = read_header(path, path.name)
    chunks = list(read_chunks(path, header, ["y", "big", "small"], [], list(layout.numeric_columns), 20, centres))
    read = np.vstack([encode_features(c.frame, layout, _bad, c.numeric).features for c in chunks])
    rows = {column: [None if pd.isna(v) else v for v in frame[column]] for column in layout.feature_columns}
    requested = encode_features(rows, layout, _bad).features
    expected = (frame[["big", "small"]].to_numpy(np.float64) - [1e8, 0.0]).astype(np.float32)
    expected[7, 0] = 0.0  # missing: 0, and marked absent
    np.testing.assert_array_equal(read, expected)
    np.testing.assert_array_equal(requested, expected)
    assert np.unique(read[:, 0]).size == 50, "float32 1e8 + N(0, 1) without the centre held 3 or 4 values"
