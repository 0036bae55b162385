"""Issue 40: each column's encoding decided by schema inference, and Preprocess applying it: one-hot up to the limit,
hashed above it into buckets that fit, yes/no spellings by meaning, HashBuckets as an override, imputation values
from the schema inference sample."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from containerlib.encoding import MISSING, OTHER, ColumnEncoding, FeatureLayout, encode_features, impute
from containerlib.recordio.reader import read_file
from pipeline.definition.encodings import HASH_BUCKETS_LIMIT, ONE_HOT_LIMIT
from pipeline.definition.schema import decide, sample_local
from preprocessing.command import main

VALUES = {"LabelColumn": "y", "PredictorType": "binary_classifier", "HashBuckets": 0, "MissingValues": "impute"}


def table(rows: int = 600, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = pd.Series(rng.integers(18, 90, rows).astype(float))
    age[rng.random(rows) < 0.25] = np.nan
    colour = pd.Series(rng.choice(["red", "green", "blue"], rows), dtype=object)
    colour[rng.random(rows) < 0.1] = None
    return pd.DataFrame(
        {
            "colour": colour,
            "smoker": rng.choice(["yes", "no", "YES", "N"], rows),
            "code": [f"c{value}" for value in rng.integers(0, 5000, rows)],
            "age": age,
            "y": rng.integers(0, 2, rows),
        }
    )


def decided(tmp_path: Path, frame: pd.DataFrame, **values: object) -> dict:
    (tmp_path / "data").mkdir(parents=True, exist_ok=True)
    frame.to_csv(tmp_path / "data" / "t.csv", index=False)
    sample = sample_local([tmp_path / "data" / "t.csv"], tmp_path / "data")
    decision = decide(sample, {**VALUES, **values}, set())
    (tmp_path / "schema.json").write_bytes(decision.body)
    return decision.document


def test_few_values_one_hot_yes_no_by_meaning_many_values_hashed_into_fitting_buckets(tmp_path: Path) -> None:
    encodings = decided(tmp_path, table())["encodings"]
    assert encodings["colour"]["kind"] == "one_hot" and encodings["colour"]["values"] == ["blue", "green", "red"]
    assert encodings["colour"]["indicator"] is True, "colour had gaps in the sample's train rows"
    # four spellings, two meanings: one value per meaning, its most frequent spelling
    assert encodings["smoker"]["boolean"] is True and len(encodings["smoker"]["values"]) == 2
    distinct = table()["code"].nunique()
    assert distinct > ONE_HOT_LIMIT
    assert encodings["code"] == {"kind": "hashed", "buckets": min(HASH_BUCKETS_LIMIT, 1 << (distinct - 1).bit_length())}
    assert encodings["age"]["kind"] == "number" and encodings["age"]["indicator"] is True
    forced = decided(tmp_path, table(), HashBuckets=8)["encodings"]
    assert {forced[c]["kind"] for c in ("colour", "smoker", "code")} == {"hashed"}
    assert forced["colour"]["buckets"] == 8


def test_yes_no_spellings_and_case_find_their_meaning_and_unseen_values_other() -> None:
    smoker = ColumnEncoding("smoker", "one_hot", ("No", "Yes"), boolean=True)
    colour = ColumnEncoding("colour", "one_hot", ("blue", "red"), indicator=True)
    layout = FeatureLayout(("smoker", "colour"), ("smoker", "colour"), 16, (smoker, colour))
    assert layout.feature_names == [
        "smoker=No", "smoker=Yes", f"smoker={OTHER}",
        "colour=blue", "colour=red", f"colour={OTHER}", f"colour={MISSING}",
    ]  # fmt: skip
    rows = {"smoker": ["YES", "n", True, 0, "maybe"], "colour": ["red", "RED", None, "blue", "blue"]}
    encoded = encode_features(rows, layout, lambda *_: AssertionError())
    assert impute(encoded, layout) == []
    assert encoded.features.tolist() == [
        [0, 1, 0, 0, 1, 0, 0],
        [1, 0, 0, 0, 0, 1, 0],  # text is matched as written: RED is not red
        [0, 1, 0, 0, 0, 0, 1],
        [1, 0, 0, 1, 0, 0, 0],
        [0, 0, 1, 1, 0, 0, 0],
    ]
    assert {column: mask.tolist() for column, mask in encoded.unseen.items()} == {
        "smoker": [False, False, False, False, True],
        "colour": [False, True, False, False, False],
    }


def test_the_median_comes_from_the_train_rows_and_preprocess_fills_it_on_every_host(tmp_path: Path) -> None:
    """The sample is the whole file here: the fill is the median of the ages of the rows Preprocess puts in the train
    split (the sample's rows hashed as Preprocess hashes them), and Preprocess fills exactly that value there."""
    frame = table(800, 3)
    frame["age"] += np.random.default_rng(1).integers(0, 4, 800) / 4  # quarters: exact in float32, medians too
    document = decided(tmp_path, frame)
    fill = document["encodings"]["age"]["fill"]
    out = tmp_path / "out"
    code = main(["--input-dir", str(tmp_path / "data"), "--output-dir", str(out), "--label-column", "y",
                 "--predictor-type", "binary_classifier", "--schema", str(tmp_path / "schema.json"),
                 "--missing", "impute"])  # fmt: skip
    assert code == 0
    summary = json.loads((out / "summary" / "summary.json").read_text())
    names = summary["feature_names"]
    train = np.vstack([np.asarray(read_file(path)[0], dtype=np.float32) for path in (out / "train").glob("*.pbr")])
    present = train[:, names.index(f"age={MISSING}")] == 0
    # the median of the train split's own ages, not of every row's
    assert fill == float(np.median(train[present, names.index("age")]))
    assert fill != float(np.median(frame["age"].dropna().to_numpy(dtype=np.float64)))
    assert summary["imputed_values"]["age"] == int(frame["age"].isna().sum())
    assert (~present).any() and (train[~present, names.index("age")] == np.float32(fill)).all()


def splits_by_id(ids: pd.Series, seed: int) -> np.ndarray:
    from preprocessing.hashing import assign_splits, hash_texts

    return assign_splits(hash_texts(ids.astype(str), seed), (0.7, 0.15, 0.15))


@pytest.mark.parametrize("seed", [0, 5])
def test_validation_and_test_values_no_longer_move_the_medians(tmp_path: Path, seed: int) -> None:
    """Split by IdColumn, so changing a row's age keeps its split: the test and validation rows' ages set to
    10,000 leave the fill as it was; the train rows' moved change it."""
    frame = table(600, 4).assign(key=[f"row-{index}" for index in range(600)])
    split = splits_by_id(frame["key"], seed)
    before = decided(tmp_path / "a", frame, IdColumn="key", SplitSeed=seed)["encodings"]["age"]["fill"]
    assert before == float(np.median(frame["age"][split == 0].dropna()))
    moved = frame.copy()
    moved.loc[(split != 0) & moved["age"].notna().to_numpy(), "age"] = 10_000.0
    assert decided(tmp_path / "b", moved, IdColumn="key", SplitSeed=seed)["encodings"]["age"]["fill"] == before
    moved.loc[(split == 0) & moved["age"].notna().to_numpy(), "age"] = 10_000.0
    assert decided(tmp_path / "c", moved, IdColumn="key", SplitSeed=seed)["encodings"]["age"]["fill"] == 10_000.0


def test_the_medians_fall_back_to_every_sampled_row_and_say_so(tmp_path: Path) -> None:
    """Too few train rows in the sample, or a Parquet sample without IdColumn: every row, named in the note."""
    small = table(20, 5)
    (tmp_path / "data").mkdir()
    small.to_csv(tmp_path / "data" / "t.csv", index=False)
    decision = decide(sample_local([tmp_path / "data" / "t.csv"], tmp_path / "data"), VALUES, set())
    [note] = [note for note in decision.notes if note.startswith("imputation")]
    assert "medians filled in, from every one of the 20 sampled row(s): only " in note
    assert "of them are train rows (SplitSeed 0), fewer than 20" in note
    assert decision.document["encodings"]["age"]["fill"] == float(np.median(small["age"].dropna()))
    parquet = tmp_path / "parquet"
    parquet.mkdir()
    big = table(300, 6)
    big.to_parquet(parquet / "t.parquet", index=False)
    decision = decide(sample_local([parquet / "t.parquet"], parquet), VALUES, set())
    [note] = [note for note in decision.notes if note.startswith("imputation")]
    assert "from every one of the 300 sampled row(s): a Parquet sample's rows cannot be hashed as Preprocess" in note
    assert decision.document["encodings"]["age"]["fill"] == float(np.median(big["age"].dropna()))
    # with an id the Parquet sample's train rows are known
    keyed = big.assign(key=[f"k{index}" for index in range(300)])
    keyed.to_parquet(parquet / "t.parquet", index=False)
    decision = decide(sample_local([parquet / "t.parquet"], parquet), {**VALUES, "IdColumn": "key"}, set())
    train = splits_by_id(keyed["key"], 0) == 0
    assert decision.document["encodings"]["age"]["fill"] == float(np.median(keyed["age"][train].dropna()))


@pytest.mark.parametrize("policy", ["error", "zero"])
def test_the_error_for_a_missing_value_suggests_impute_first(tmp_path: Path, policy: str, capsys) -> None:
    frame = table(50, 4)
    (tmp_path / "in").mkdir()
    frame.to_csv(tmp_path / "in" / "t.csv", index=False)
    code = main(["--input-dir", str(tmp_path / "in"), "--output-dir", str(tmp_path / "out"), "--label-column", "y",
                 "--predictor-type", "binary_classifier", "--categorical-columns", "colour,smoker,code",
                 "--missing", policy])  # fmt: skip
    error = capsys.readouterr().err
    if policy == "error":
        assert code == 1 and "set --missing (pipeline parameter MissingValues) to impute (the training median" in error
    else:
        assert code == 0


def test_hash_buckets_given_to_preprocess_hashes_every_text_column_and_keeps_the_imputation(tmp_path: Path) -> None:
    """HashBuckets=N is the explicit override: the schema's vocabularies are set aside, its imputation kept."""
    decided(tmp_path, table(300, 5))
    out = tmp_path / "out"
    code = main(["--input-dir", str(tmp_path / "data"), "--output-dir", str(out), "--label-column", "y",
                 "--predictor-type", "binary_classifier", "--schema", str(tmp_path / "schema.json"),
                 "--missing", "impute", "--hash-buckets", "4"])  # fmt: skip
    assert code == 0
    summary = json.loads((out / "summary" / "summary.json").read_text())
    names = summary["feature_names"]
    assert names[:5] == ["colour#0", "colour#1", "colour#2", "colour#3", f"colour={MISSING}"]
    assert names[5:9] == ["smoker#0", "smoker#1", "smoker#2", "smoker#3"]
    assert names[-2:] == ["age", f"age={MISSING}"] and len(names) == 4 + 1 + 4 + 4 + 2
