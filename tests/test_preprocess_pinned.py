"""Preprocess outputs pinned byte for byte: the digests were computed with the pandas-only reader (before the Arrow
CSV reader; the same in the project's environment and in the processing image's, pandas 1.1.3), so any change of
parsing, chunking, hashing, split or shuffle order shows up here."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from preprocessing.preprocess import main


def write_inputs(folder: Path) -> None:
    """Three files (CSV, gzip CSV, Parquet) with awkward values: many digits, -0.0, exponents, blank lines, NaN,
    categorical text, an id column; the CSV parts span several chunks."""
    rng = np.random.default_rng(11)
    rows = 2_500
    frame = pd.DataFrame(
        {
            "id": [f"user-{i:05d}" for i in range(rows)],
            "x1": rng.normal(size=rows) * 1e3,
            "x2": rng.integers(-5, 5, size=rows),
            "colour": rng.choice(["red", "green", " blue", "NA-ish"], size=rows),
            "x3": rng.normal(size=rows).astype(np.float32).astype(np.float64) * 1e-20,
            "target": rng.integers(0, 3, size=rows),
            "flag": rng.choice(["yes", "no"], size=rows),
        }
    )
    frame.loc[7, "x1"] = -0.0
    frame.loc[11, "x3"] = np.nan
    frame.loc[13, "colour"] = None
    folder.mkdir()
    text = frame.iloc[:1000].to_csv(index=False, float_format="%.17g")
    lines = text.splitlines()
    lines.insert(50, "")  # a blank line is not a row
    (folder / "a.csv").write_text("\n".join(lines) + "\n")
    frame.iloc[1000:2000].to_csv(folder / "b.csv.gz", index=False)
    frame.iloc[2000:].to_parquet(folder / "c.parquet", index=False)


CASES = {
    "multiclass, categorical, missing zero": (
        ["--label-column", "target", "--predictor-type", "multiclass_classifier", "--categorical-columns", "colour",
         "--hash-buckets", "5", "--missing", "zero", "--feature-columns", "x1,x2,colour,x3"],
        "924225574a6e435f28c070172ad852fbae2c6a16d876ddf8e50297917ad81899",
    ),
    "binary by label values, id split, missing drop": (
        ["--label-column", "flag", "--predictor-type", "binary_classifier", "--label-values", "no,yes",
         "--id-column", "id", "--categorical-columns", "colour", "--missing", "drop"],
        "59b382078c056f284d85c1c53355d9fdcbac261ac89c4879ba26713d23623885",
    ),
    "regression, numeric only": (
        ["--label-column", "x1", "--predictor-type", "regressor", "--feature-columns", "x2,x3,target",
         "--missing", "zero"],
        "58af18e6ec161da561b4c10dcf11bc7301b64b1e4460f501003002913f8eae58",
    ),
}  # fmt: skip


def output_digest(output: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in output.rglob("*") if p.is_file()):
        digest.update(path.relative_to(output).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@pytest.mark.parametrize("case", list(CASES))
def test_outputs_are_byte_identical_to_the_pandas_reader(tmp_path: Path, case: str) -> None:
    arguments, expected = CASES[case]
    write_inputs(tmp_path / "in")
    code = main(
        ["--input-dir", str(tmp_path / "in"), "--output-dir", str(tmp_path / "out"), "--resource-config",
         str(tmp_path / "absent.json"), "--chunk-rows", "300", "--train-shards", "3", "--seed", "5", *arguments]
    )  # fmt: skip
    assert code == 0
    assert output_digest(tmp_path / "out") == expected
