"""Date-time and time-of-day text in a CSV file is read as seconds, like a Parquet or DataFrame date-time (it was
hashed into 16 buckets as text, without a word): decided by the schema from the sample, applied alike by Preprocess's
readers and the serving featurizer; Parquet time32/time64 columns are seconds since midnight."""

from __future__ import annotations

import calendar
import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from containerlib.encoding import FeatureLayout, encode_features
from containerlib.tables.chunks import read_chunks
from containerlib.tables.header import read_header
from containerlib.tables.sample import parquet_sample
from containerlib.time_text import (
    datetime_seconds,
    day_first_seconds,
    month_first_seconds,
    named_month_seconds,
    text_kind,
    time_seconds,
)
from pipeline.core.errors import SchemaError
from pipeline.definition.schema import decide, sample_local

EPOCH_2013 = calendar.timegm((2013, 1, 1, 0, 0, 0))
VALUES = {"LabelColumn": "y", "PredictorType": "binary_classifier", "HashBuckets": 16, "MissingValues": "zero"}


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2013-01-01", EPOCH_2013),
        ("2013-01-01 05:00:00", EPOCH_2013 + 5 * 3600),
        ("2013-01-01T05:00", EPOCH_2013 + 5 * 3600),
        (" 2013-01-01t05:00:00.250 ", EPOCH_2013 + 5 * 3600 + 0.25),
        ("2013-01-01T05:00:00Z", EPOCH_2013 + 5 * 3600),
        ("2013-01-01 05:00:00+01:00", EPOCH_2013 + 4 * 3600),
        ("2013-01-01T05:00:00-0530", EPOCH_2013 + 10 * 3600 + 30 * 60),
        ("2012-02-29 23:59:59,5", calendar.timegm((2012, 2, 29, 23, 59, 59)) + 0.5),
        ("1969-12-31 23:00:00", -3600),
    ],
)
def test_iso_dates_and_times_are_seconds_since_1970_utc(text: str, seconds: float) -> None:
    assert datetime_seconds(text) == pytest.approx(seconds, abs=1e-6)
    parsed = pd.Timestamp(text.strip().replace(",", ".").upper())
    utc = parsed.tz_convert("UTC") if parsed.tzinfo else parsed.tz_localize("UTC")
    assert datetime_seconds(text) == pytest.approx(utc.timestamp(), abs=1e-6), "as pandas reads it"


@pytest.mark.parametrize(
    "text", ["2013-02-30", "2013-13-01", "2013-01-01 24:00", "2013-01-01 05:60", "13-01-01", "2013/01-01", "today", ""]
)
def test_what_is_not_an_iso_date_is_none(text: str) -> None:
    assert datetime_seconds(text) is None


@pytest.mark.parametrize(
    ("text", "seconds"), [("05:00:00", 18000), ("5:00", 18000), ("23:59:59.5", 86399.5), ("00:00", 0)]
)
def test_times_of_day_are_seconds_since_midnight(text: str, seconds: float) -> None:
    assert time_seconds(text) == seconds
    assert time_seconds("24:00") is None and time_seconds("12") is None and time_seconds("5:7") is None


def test_a_column_is_of_a_kind_when_its_values_are_and_names_the_few_that_are_not() -> None:
    assert text_kind(["2013-01-01", "2013-01-02 05:00"]) == ("datetime", [])
    assert text_kind(["05:00", "17:30:00"]) == ("time", [])
    assert text_kind([f"2013-01-{day:02d}" for day in range(1, 20)] + ["2013-01-32"]) == ("datetime", ["2013-01-32"])
    assert text_kind(["2013-01-01", "red", "blue"]) == (None, [])
    assert text_kind(["12", "13"]) == (None, [])


@pytest.mark.parametrize(
    "text", ["2013/03/04", "2013.3.4 17:05", "03/04/2013 5:05:09 pm", "3-4-2013T00:30 AM", "12/31/1999 12:00 AM"]
)
def test_other_common_date_forms_are_seconds_as_pandas_reads_them(text: str) -> None:
    """Year first with / or ., month or day first with /, - or ., a 12-hour clock: the seconds pandas gives."""
    expected = pd.Timestamp(text.replace("T", " ").upper().replace(".", "-", 2) if text.startswith("2013.") else
                            text.replace("T", " ").upper()).timestamp()  # fmt: skip
    parse = datetime_seconds if text.startswith(("2013", "1999")) else month_first_seconds
    assert parse(text) == pytest.approx(expected)
    if parse is month_first_seconds:
        month, day, rest = text.replace("-", "/").split("/", 2)
        assert day_first_seconds(f"{day}.{month}.{rest}") == pytest.approx(expected), "day first, dotted"


@pytest.mark.parametrize(
    "text",
    ["Jan 5, 2013", "January 5 2013", "Jan. 5th, 2013 5:00 PM", "Sept 3, 2013", "5 Jan 2013", "05-Jan-2013",
     "5 january, 2013", "05/Dec/2013 23:59:59", "Sat, 05 Jan 2013 17:00:00 +0100", "Saturday, January 5, 2013 9:30 am",
     "feb 29 2016"],
)  # fmt: skip
def test_dates_with_the_month_named_are_seconds_as_pandas_reads_them(text: str) -> None:
    """Month or day first, the month a name or its abbreviation in any case, a weekday ignored: pandas' seconds."""
    assert named_month_seconds(text) == pytest.approx(
        pd.Timestamp(text.replace("5th", "5").replace("Sept", "Sep")).timestamp()
    )


@pytest.mark.parametrize(
    "text", ["Foo 5, 2013", "Feb 30, 2013", "Jan 5, 13", "5 Jan", "Jan 2013", "2013 Jan 5", "Jan 5, 2013 25:00"]
)
def test_what_is_not_a_named_month_date_is_none(text: str) -> None:
    assert named_month_seconds(text) is None


def test_a_column_of_named_month_dates_is_of_its_kind_and_names_its_typos() -> None:
    stamps = pd.date_range("2014-01-03", periods=40, freq="5D")
    assert text_kind(stamps.strftime("%b %d, %Y")) == ("datetime-named", [])
    assert text_kind([*stamps.strftime("%d-%b-%Y %H:%M"), "31-Feb-2014"]) == ("datetime-named", ["31-Feb-2014"])
    assert text_kind(["Jan 5, 2013", "red", "blue"]) == (None, [])


def test_times_of_day_on_a_twelve_hour_clock() -> None:
    assert [time_seconds(t) for t in ["12:00 AM", "12:30 pm", "1:00 p.m.", "11:59:59.5PM"]] == [
        0,
        45000,
        46800,
        86399.5,
    ]
    assert time_seconds("13:00 PM") is None and time_seconds("0:10 am") == 600


def test_the_sample_decides_month_or_day_first_and_refuses_what_it_cannot_tell() -> None:
    spread = [f"{month:02d}/{day:02d}/2014 {hour}:15" for month, day, hour in [(1, 5, 3), (2, 28, 14), (11, 13, 0)]]
    assert text_kind(spread) == ("datetime-mdy", [])
    assert text_kind([f"{d}.{m}.2014" for d, m in [(5, 1), (28, 2), (13, 11)]]) == ("datetime-dmy", [])
    kind, bad = text_kind([f"{d}-{m}-2014" for d, m in [(5, 1), (28, 2)] * 10] + ["31-31-2014"])
    assert (kind, bad) == ("datetime-dmy", ["31-31-2014"]), "a typo named like an ISO column's"
    assert text_kind(["04/05/2014", "12/01/2014", "1/1/2015"])[0] == "ambiguous-day-month"
    assert text_kind(["04/25/14", "12/01/14", "1/1/15"])[0] == "two-digit-year"
    assert text_kind(["1.5", "2.25", "3.5.7"]) == (None, [])


@pytest.mark.parametrize(
    ("values", "said"),
    [
        ([f"{1 + i % 12}/{1 + i % 7}/2016" for i in range(60)], "day and month cannot be told apart"),
        ([f"{1 + i % 12}-{1 + i % 28}-16" for i in range(60)], "two-digit years"),
    ],
)
def test_dates_the_schema_cannot_read_one_way_are_refused_naming_the_column_and_ways_out(
    tmp_path: Path, values: list[str], said: str
) -> None:
    table = frame(60).assign(opened=values)
    table.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(SchemaError, match=rf"column 'opened' holds .*{said}.*year first.*CategoricalColumns=opened"):
        decide(sample_local([tmp_path / "t.csv"], tmp_path), VALUES, {"LabelColumn"})
    declared = decide(
        sample_local([tmp_path / "t.csv"], tmp_path), {**VALUES, "CategoricalColumns": "opened,colour"},
        {"LabelColumn", "CategoricalColumns"},
    )  # fmt: skip
    assert "opened" not in declared.document["times"]


def _decided_read_and_requested(
    tmp_path: Path, table: pd.DataFrame, columns: tuple[str, ...]
) -> tuple[Any, np.ndarray, np.ndarray]:
    """The schema decided from ``table`` written as CSV (label ``y``), and ``columns`` encoded as Preprocess reads
    the file and as requests send the same values."""
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    decision = decide(sample_local([path], tmp_path), VALUES, {"LabelColumn"})
    layout = FeatureLayout(columns, (), 1, times=tuple(decision.document["times"].items()))
    (chunk,) = read_chunks(path, read_header(path), [*columns, "y"], list(columns), list(columns), 100)
    read = encode_features(chunk.frame, layout, _bad, chunk.numeric).features
    requested = encode_features({c: table[c].tolist() for c in columns}, layout, _bad).features
    return decision, read, requested


def test_month_first_text_reaches_preprocess_and_requests_as_the_same_seconds(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    stamps = pd.Timestamp("2015-06-01") + pd.to_timedelta(rng.integers(0, 86400 * 60, 80), unit="s")
    table = pd.DataFrame({"seen": stamps.strftime("%m/%d/%Y %I:%M %p"), "at": stamps.strftime("%I:%M:%S %p"),
                          "y": rng.integers(0, 2, 80)})  # fmt: skip
    decision, read, requested = _decided_read_and_requested(tmp_path, table, ("seen", "at"))
    assert decision.document["times"] == {"seen": "datetime-mdy", "at": "time"}
    assert any("seen (date-time, month first), at (time of day)" in note for note in decision.notes)
    minutes = stamps.floor("min")
    np.testing.assert_array_equal(read[:, 0], minutes.to_numpy("datetime64[s]").astype(np.int64).astype(np.float32))
    np.testing.assert_array_equal(read[:, 1], (stamps - stamps.normalize()).total_seconds().to_numpy(np.float32))
    np.testing.assert_array_equal(requested, read)


def test_named_month_text_reaches_preprocess_and_requests_as_the_same_seconds(tmp_path: Path) -> None:
    """``Jun 03, 2015 05:07 PM`` and ``03-Jun-2015``: decided by the sample, read alike by Preprocess and requests."""
    rng = np.random.default_rng(5)
    stamps = pd.Timestamp("2015-06-01") + pd.to_timedelta(rng.integers(0, 86400 * 90, 80), unit="s")
    table = pd.DataFrame({"seen": stamps.strftime("%b %d, %Y %I:%M %p"), "day": stamps.strftime("%d-%b-%Y"),
                          "y": rng.integers(0, 2, 80)})  # fmt: skip
    decision, read, requested = _decided_read_and_requested(tmp_path, table, ("day", "seen"))
    assert decision.document["times"] == {"seen": "datetime-named", "day": "datetime-named"}
    assert any("seen (date-time, month named), day (date-time, month named)" in note for note in decision.notes)
    np.testing.assert_array_equal(
        read[:, 0], stamps.normalize().to_numpy("datetime64[s]").astype(np.int64).astype(np.float32)
    )
    np.testing.assert_array_equal(
        read[:, 1], stamps.floor("min").to_numpy("datetime64[s]").astype(np.int64).astype(np.float32)
    )
    np.testing.assert_array_equal(requested, read)


def frame(rows: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    stamps = pd.Timestamp("2013-01-01") + pd.to_timedelta(rng.integers(0, 86400 * 30, rows), unit="s")
    return pd.DataFrame(
        {
            "when": stamps.strftime("%Y-%m-%d %H:%M:%S"),
            "day": stamps.strftime("%Y-%m-%d"),
            "tod": stamps.strftime("%H:%M"),
            "colour": rng.choice(["red", "blue"], rows),
            "y": rng.integers(0, 2, rows),
        }
    )


def test_the_schema_reads_date_and_time_text_as_seconds_and_says_so(tmp_path: Path) -> None:
    table = frame(300)
    table.loc[[4, 9], "when"] = None
    table.to_csv(tmp_path / "t.csv", index=False)
    decision = decide(sample_local([tmp_path / "t.csv"], tmp_path), VALUES, {"LabelColumn"})
    assert decision.document["times"] == {"when": "datetime", "day": "datetime", "tod": "time"}
    assert decision.document["categorical_columns"] == ["colour"]
    assert set(decision.document["centres"]) == {"when", "day"}, "seconds since 1970 are far from zero"
    assert any("date and time text read as seconds: when (date-time), day (date-time), tod (time of day)" in note
               for note in decision.notes)  # fmt: skip


def test_a_date_column_with_a_few_typos_is_refused_naming_them_and_the_ways_out(tmp_path: Path) -> None:
    table = frame(200)
    table.loc[17, "day"] = "2013-01-32"
    table.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(SchemaError, match=r"column 'day' holds a year-first date.*'2013-01-32'.*CategoricalColumns"):
        decide(sample_local([tmp_path / "t.csv"], tmp_path), VALUES, {"LabelColumn"})
    declared = decide(
        sample_local([tmp_path / "t.csv"], tmp_path), {**VALUES, "CategoricalColumns": "day,colour"},
        {"LabelColumn", "CategoricalColumns"},
    )  # fmt: skip
    assert declared.document["times"] == {"when": "datetime", "tod": "time"}, "a declared text column is hashed"


def _bad(row: int, column: str, value: object) -> Exception:
    return ValueError(f"row {row + 1}, column {column!r}: {value!r} is not a number")


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_preprocess_and_requests_read_the_same_seconds(tmp_path: Path, suffix: str) -> None:
    table = frame(60, seed=1).drop(columns="colour")
    table.loc[5, "tod"] = None
    path = tmp_path / f"t{suffix}"
    table.to_parquet(path, index=False) if suffix == ".parquet" else table.to_csv(path, index=False)
    layout = FeatureLayout(
        ("when", "day", "tod"),
        (),
        1,
        centres=(("when", 1.357e9),),
        times=(("when", "datetime"), ("day", "datetime"), ("tod", "time")),
    )
    numeric = list(layout.numeric_columns)
    chunks = read_chunks(path, read_header(path), ["y", *numeric], numeric, numeric, 25,
                         layout.numeric_centres(numeric))  # fmt: skip
    read = np.vstack([encode_features(chunk.frame, layout, _bad, chunk.numeric).features for chunk in chunks])
    requested = encode_features({c: [None if pd.isna(v) else v for v in table[c]] for c in numeric}, layout, _bad)
    stamps = pd.to_datetime(table["when"]).to_numpy("datetime64[s]").astype(np.int64)
    np.testing.assert_array_equal(read[:, 0], (stamps - 1.357e9).astype(np.float32))
    np.testing.assert_array_equal(read[:, 1], (stamps // 86400 * 86400).astype(np.float32))
    assert read[5, 2] == 0 and read[6, 2] == pd.Timedelta(table["tod"][6] + ":00").total_seconds()
    np.testing.assert_array_equal(requested.features, read)
    with pytest.raises(ValueError, match=r"row 2, column 'tod': 'noon' is not a number; the column holds a time"):
        encode_features({"when": ["2013-01-01"] * 2, "day": ["2013-01-01"] * 2, "tod": ["05:00", "noon"]}, layout, _bad)


@pytest.mark.parametrize("kind", [pa.time32("s"), pa.time32("ms"), pa.time64("us"), pa.time64("ns")])
def test_parquet_times_of_day_are_seconds_since_midnight(tmp_path: Path, kind: pa.DataType) -> None:
    times = [dt.time(5, 0, 1), None, dt.time(23, 59, 59)]
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"tod": pa.array(times, type=kind), "y": [0, 1, 0]}), path)
    _, sample = parquet_sample(str(path), "t.parquet", 10)
    assert sample["tod"].tolist()[0] == "18001" and pd.isna(sample["tod"][1])
    (chunk,) = read_chunks(path, read_header(path), ["tod", "y"], [], ["tod"], 10)
    assert chunk.numeric[:, 0].tolist()[::2] == [18001.0, 86399.0]


def test_the_serving_spec_takes_times_and_centres_from_the_run_s_schema() -> None:
    from serving.model import spec_from_documents

    schema = {"feature_columns": ["when", "x"], "predictor_type": "regressor", "label_column": "y",
              "times": {"when": "datetime"}, "centres": {"when": 1.357e9}}  # fmt: skip
    spec = spec_from_documents(schema, {"feature_dim": 2})
    assert spec.layout.times == (("when", "datetime"),) and spec.layout.centres == (("when", 1.357e9),)
    features = encode_features({"when": ["2013-01-01 05:00:00"], "x": [1.5]}, spec.layout, _bad).features
    assert features.tolist() == [[EPOCH_2013 + 5 * 3600 - 1.357e9, 1.5]]
