"""The data-quality analyzer (``dataquality/``) against Model Monitor's own files (tests/fixtures/model_monitor/,
sources in SOURCES.md): the same data gives the analyzer's statistics byte for byte, suggested constraints and
violations have the documented shapes, capture records are read as SageMaker writes them."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.capture_files import Captured, write_capture
from support.container import Container

from dataquality import AnalyzerError
from dataquality.capture import CaptureError, Payload, read_records, records, request_rows
from dataquality.dataset import DatasetFormat
from dataquality.jackson import dumps, java_double
from dataquality.job import analyze
from dataquality.kll import KLLSketch
from dataquality.settings import Settings
from dataquality.violations import CHECK_TYPES

FIXTURES = Path(__file__).parents[2] / "fixtures" / "model_monitor"
# the documented constraint_check_type values (DG model-monitor-interpreting-violations.md)
DOCUMENTED_CHECKS = {
    "data_type_check",
    "completeness_check",
    "baseline_drift_check",
    "missing_column_check",
    "extra_column_check",
    "categorical_values_check",
}
# DG model-monitor-byoc-constraints (live page): monitoring_config and its distribution_constraints
DOCUMENTED_CONFIG = {"evaluate_constraints", "emit_metrics", "datatype_check_threshold", "domain_content_threshold"}
DOCUMENTED_DISTRIBUTION = {
    "perform_comparison",
    "comparison_threshold",
    "comparison_method",
    "categorical_comparison_threshold",
    "categorical_drift_method",
}


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def sdk_dataset(folder: Path) -> Path:
    """The 100 rows behind the SDK's analyzer-statistics.json (each KLL sketch holds its column's values, in input
    order), as the headerless CSV the analyzer read (values written 3.0: Fractional)."""
    columns = [
        feature["numerical_statistics"]["distribution"]["kll"]["sketch"]["data"][0]
        for feature in fixture("analyzer-statistics.json")["features"]
    ]
    folder.mkdir(parents=True)
    lines = [",".join(repr(value) for value in row) for row in zip(*columns, strict=True)]
    (folder / "data.csv").write_text("\n".join(lines) + "\n")
    return folder


def run(source: Path, output: Path, fmt: str = '{"csv": {"header": true}}', **baseline: Path) -> object:
    return analyze(
        Settings(
            source,
            DatasetFormat.parse(fmt),
            output,
            baseline.get("constraints"),
            baseline.get("statistics"),
        )
    )


def table(folder: Path, frame: pd.DataFrame, name: str = "part-0.csv") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    frame.to_csv(folder / name, index=False)
    return folder


def baseline_frame(rows: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, rows),
            "income": np.round(rng.normal(50_000, 12_000, rows), 2),
            "color": rng.choice(["red", "green", "blue"], rows, p=[0.5, 0.3, 0.2]),
        }
    )


@pytest.mark.parametrize("name", ["analyzer-statistics.json", "analyzer-constraints-bad-case.json"])
def test_files_are_written_in_the_analyzers_own_style(name: str) -> None:
    text = (FIXTURES / name).read_text()
    assert dumps(json.loads(text)) == text


def test_java_number_format() -> None:
    assert [java_double(x) for x in (231.0, 2.31, 0.001, 1e-4, 1e7, 12345678.9, -0.0, float("nan"))] == [
        "231.0",
        "2.31",
        "0.001",
        "1.0E-4",
        "1.0E7",
        "1.23456789E7",
        "-0.0",
        '"NaN"',
    ]


def test_the_analyzers_data_gives_its_statistics_byte_for_byte(tmp_path: Path, container: Container) -> None:
    """Run from the bundle in the scikit-learn image's Python 3.9, settings from the environment as the image
    takes them: the same 100 rows give the analyzer's statistics.json exactly (sums and standard deviations to
    the last digit, KLL buckets and sketch) and its suggested constraints (the SDK's good case)."""
    source = sdk_dataset(tmp_path / "input")
    environment = {
        "dataset_source": str(source),
        "dataset_format": '{"csv": {"header": false, "output_columns_position": "START"}}',
        "output_path": str(tmp_path / "output"),
        "publish_cloudwatch_metrics": "Disabled",
    }
    result = container.run("dataquality", env=environment, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "output" / "statistics.json").read_text() == (FIXTURES / "analyzer-statistics.json").read_text()
    suggested = json.loads((tmp_path / "output" / "constraints.json").read_text())
    good = fixture("analyzer-constraints-bad-case.json")
    good["features"][5]["inferred_type"] = "Fractional"  # the SDK's good_cases/constraints.json
    assert suggested["version"] == good["version"] == 0.0
    assert suggested["features"] == good["features"]
    config, documented = suggested["monitoring_config"], good["monitoring_config"]
    assert set(config) == DOCUMENTED_CONFIG | {"distribution_constraints"} == set(documented)
    assert {key: config[key] for key in DOCUMENTED_CONFIG} == {key: documented[key] for key in DOCUMENTED_CONFIG}
    assert set(config["distribution_constraints"]) == DOCUMENTED_DISTRIBUTION
    assert config["distribution_constraints"].items() >= documented["distribution_constraints"].items()
    assert not (tmp_path / "output" / "constraint_violations.json").exists()  # no baseline, no check


def test_a_string_feature_has_the_documented_statistics_and_domain(tmp_path: Path) -> None:
    value = "preproc-not-YET-supported-for-csv-json"
    source = table(tmp_path / "input", pd.DataFrame({"message": [value] * 418}))
    outcome = run(source, tmp_path / "output")
    assert outcome.statistics == fixture("string-feature-statistics.json")
    documented = fixture("string-feature-constraints.json")["features"][1]  # the one without overrides
    assert outcome.constraints["features"] == [{**documented, "name": "message"}]


def test_no_baseline_violations_for_the_baseline_itself_and_every_check_fires_when_due(tmp_path: Path) -> None:
    baseline = table(tmp_path / "baseline", baseline_frame())
    run(baseline, tmp_path / "baseline-out")
    given = {"constraints": tmp_path / "baseline-out" / "constraints.json"}
    given["statistics"] = tmp_path / "baseline-out" / "statistics.json"
    assert run(baseline, tmp_path / "again", **given).violations == []
    assert json.loads((tmp_path / "again" / "constraint_violations.json").read_text()) == {"violations": []}

    current = baseline_frame(seed=1)
    current["income"] = current["income"].astype(object)
    current.loc[:9, "income"] = ""  # 10 missing values: completeness
    current["color"] = current["color"].replace({"red": "purple"})  # an unknown category replacing half: both
    current = current.rename(columns={"age": "age_years"})  # a missing and an extra column
    outcome = run(table(tmp_path / "current", current), tmp_path / "current-out", **given)
    found = {(item["feature_name"], item["constraint_check_type"]) for item in outcome.violations}
    assert found == {
        ("age", "missing_column_check"),
        ("age_years", "extra_column_check"),
        ("income", "completeness_check"),
        ("color", "categorical_values_check"),
        ("color", "baseline_drift_check"),
    }
    written = json.loads((tmp_path / "current-out" / "constraint_violations.json").read_text())
    sample = fixture("constraint-violations.json")
    assert set(written) == set(sample) == {"violations"}
    assert all(set(item) == set(sample["violations"][0]) for item in written["violations"])
    assert set(CHECK_TYPES) == DOCUMENTED_CHECKS
    color = next(item for item in outcome.violations if item["constraint_check_type"] == "categorical_values_check")
    assert "'purple'" in color["description"]

    typed = baseline_frame(seed=2)
    typed["age"] = typed["age"].astype(object)
    typed.loc[:19, "age"] = 30.5
    outcome = run(table(tmp_path / "typed", typed), tmp_path / "typed-out", **given)
    (item,) = [item for item in outcome.violations if item["constraint_check_type"] == "data_type_check"]
    # the analyzer's own wording (aws/amazon-sagemaker-examples, sm-model_monitor_introduction)
    assert re.fullmatch(
        r"Data type match requirement is not met\. Expected data type: Integral, Expected match: 100\.0%\. "
        r"Observed: Only 95\.0% of data is Integral\.",
        item["description"],
    ), item["description"]


def test_a_constant_column_drifts(tmp_path: Path) -> None:
    baseline = table(tmp_path / "baseline", baseline_frame())
    run(baseline, tmp_path / "out")
    current = baseline_frame(seed=3)
    current["income"] = 50_000.0
    outcome = run(
        table(tmp_path / "current", current),
        tmp_path / "current-out",
        constraints=tmp_path / "out" / "constraints.json",
        statistics=tmp_path / "out" / "statistics.json",
    )
    (item,) = outcome.violations
    assert (item["feature_name"], item["constraint_check_type"]) == ("income", "baseline_drift_check")
    distance = float(re.match(r"Baseline drift distance: ([0-9.E-]+) exceeds threshold: 0\.1", item["description"])[1])
    # the two-sample KS statistic against a point mass at the median is about 0.5; Robust subtracts 1.8 sqrt(2/400)
    assert 0.2 < distance < 0.5


def test_the_kll_sketch_compacts_as_deequ_does() -> None:
    values = np.random.default_rng(0).normal(size=20_000)
    sketch = KLLSketch()
    sketch.update(values[:7_000])
    sketch.update(values[7_000:])
    one_by_one = KLLSketch()
    for start in range(0, len(values), 997):
        one_by_one.update(values[start : start + 997])
    assert sketch.data == one_by_one.data  # chunking never changes the sketch
    assert sketch.weight == len(values)
    items = sum(len(level) for level in sketch.levels)
    assert len(sketch.levels) > 1 and items <= sum(sketch.capacity(h) for h in range(len(sketch.levels)))
    quartiles = np.quantile(values, [0.25, 0.5, 0.75])
    assert np.allclose(sketch.rank(quartiles) / len(values), [0.25, 0.5, 0.75], atol=0.01)
    small = KLLSketch()
    small.update(np.arange(2050.0))
    assert small.data == [np.arange(2050.0).tolist()]  # up to the first level's capacity: the values, in order


def test_a_categorical_baseline_domain_is_left_out_when_values_do_not_repeat(tmp_path: Path) -> None:
    source = table(tmp_path / "input", pd.DataFrame({"id": [f"x{i}" for i in range(50)], "kind": ["a", "b"] * 25}))
    features = {feature["name"]: feature for feature in run(source, tmp_path / "out").constraints["features"]}
    assert "string_constraints" not in features["id"]
    assert features["kind"]["string_constraints"] == {"domains": ["a", "b"]}


def test_capture_records_of_the_documented_samples(tmp_path: Path) -> None:
    (record,) = read_records(FIXTURES / "capture-linear-learner-json.jsonl")
    assert record.inference_time == datetime(2024, 1, 19, 19, 27, 57, tzinfo=timezone.utc)
    assert request_rows(record.endpoint_input) == [[28, 2, 133937, 9, 13, 2, 0, 0, 4, 1, 15024, 0, 55, 37]]
    template = (FIXTURES / "capture-csv-template.jsonl").read_text().replace("{%s}", "2024-01-19T19:10:00Z")
    (tmp_path / "capture.jsonl").write_text(template)
    rows = [request_rows(item.endpoint_input) for item in read_records(tmp_path / "capture.jsonl")]
    assert rows[0] == [["9", "45", "45", "42", "7", "5", "0"]]


@pytest.mark.parametrize(
    ("content_type", "data", "expected"),
    [
        ("text/csv", "1.5,red\n2,blue\n", [["1.5", "red"], ["2", "blue"]]),
        ("text/csv; charset=utf-8", "x,c\n1.5,red\n", [{"x": "1.5", "c": "red"}]),  # a header line names them
        ("text/csv", "c,x,label\nred,1.5,Yes\n", [{"c": "red", "x": "1.5", "label": "Yes"}]),  # and one more
        ("application/json", '[{"x": 1.5, "c": "red"}]', [{"x": 1.5, "c": "red"}]),
        ("application/json", '{"x": 1.5, "c": "red"}', [{"x": 1.5, "c": "red"}]),
        ("application/json", '{"instances": [{"features": [1.5, 2]}]}', [[1.5, 2]]),
        ("application/json", '{"instances": [{"data": {"features": {"values": [1, 2]}}}]}', [[1, 2]]),
        ("application/json", "[[1.5, 2], [3, 4]]", [[1.5, 2], [3, 4]]),
        ("application/jsonlines", '{"x": 1}\n{"x": 2}\n', [{"x": 1}, {"x": 2}]),
    ],
)
def test_request_forms(content_type: str, data: str, expected: list) -> None:
    assert request_rows(Payload(content_type, "INPUT", data, "CSV"), ["x", "c"]) == expected


def test_encoded_requests_are_skipped_and_counted_raw_rows_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A smoke test's RecordIO requests hold no raw rows: the data set is the CSV traffic beside them."""
    from dataquality.dataset import chunks

    start = datetime(2024, 1, 19, 18, 0, tzinfo=timezone.utc)
    items = [
        Captured(start, "text/csv", "1.5,red"),
        Captured(start + timedelta(minutes=1), "application/x-recordio-protobuf", "AAAA"),
        Captured(start + timedelta(minutes=2), "text/csv", "x,c\n2.5,blue"),
    ]
    write_capture(tmp_path, "ep", "AllTraffic", items)
    capture = DatasetFormat.parse('{"sagemakerCaptureJson": {}}')
    frames = [frame for _, frame in chunks(tmp_path / "ep" / "AllTraffic", capture, ["x", "c"])]
    assert pd.concat(frames).to_dict("records") == [{"x": "1.5", "c": "red"}, {"x": "2.5", "c": "blue"}]
    assert "skipped 1 captured request(s) of application/x-recordio-protobuf" in capsys.readouterr().err


def test_bad_capture_data_is_named_by_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"captureData": {}}\nnot json\n')
    with pytest.raises(CaptureError, match="bad.jsonl line 1: a capture record needs eventMetadata"):
        list(read_records(tmp_path / "bad.jsonl"))
    payload = Payload("application/x-recordio-protobuf", "INPUT", "AAAA", "BASE64")
    with pytest.raises(CaptureError, match="f.jsonl line 3: content type 'application/x-recordio-protobuf'"):
        request_rows(payload, where="f.jsonl line 3")


def test_a_window_reads_the_hours_and_records_within_it(tmp_path: Path) -> None:
    start = datetime(2024, 1, 19, 18, 0, tzinfo=timezone.utc)
    items = [Captured(start + timedelta(minutes=25 * i), "text/csv", f"{i},red") for i in range(8)]  # 18:00..20:55
    write_capture(tmp_path, "ep", "AllTraffic", items)
    window = list(records(tmp_path, start + timedelta(minutes=50), start + timedelta(hours=2)))
    assert [request_rows(item.endpoint_input)[0][0] for item in window] == ["2", "3", "4"]  # 18:50, 19:15, 19:40


def test_capture_data_is_checked_against_a_baseline_by_position(tmp_path: Path) -> None:
    """Headerless CSV requests and JSON rows are named by the baseline's columns, in its order."""
    baseline = table(tmp_path / "baseline", baseline_frame())
    run(baseline, tmp_path / "out")
    frame = baseline_frame(seed=4)
    moment = datetime(2024, 1, 19, 18, 5, tzinfo=timezone.utc)
    items = [
        Captured(moment, "text/csv", "\n".join(",".join(map(str, row)) for row in frame.values[:200].tolist())),
        Captured(moment, "application/json", json.dumps({"instances": frame.values[200:].tolist()})),
    ]
    write_capture(tmp_path / "capture", "ep", "AllTraffic", items)
    outcome = run(
        tmp_path / "capture",
        tmp_path / "monitor",
        '{"sagemakerCaptureJson": {"captureIndexNames": ["endpointInput", "endpointOutput"]}}',
        constraints=tmp_path / "out" / "constraints.json",
        statistics=tmp_path / "out" / "statistics.json",
    )
    assert outcome.statistics["dataset"]["item_count"] == 400
    assert [feature["name"] for feature in outcome.statistics["features"]] == ["age", "income", "color"]
    assert outcome.violations == []


def test_bad_settings_fail_with_the_exit_message(tmp_path: Path, container: Container) -> None:
    message = tmp_path / "output" / "message"
    message.parent.mkdir()
    environment = {"dataset_source": str(tmp_path), "dataset_format": '{"xml": {}}', "output_path": str(tmp_path)}
    result = container.run("dataquality", "--exit-message-file", message, env=environment)
    assert result.returncode == 1
    assert "dataset_format" in result.stderr and "expected one of csv, json, parquet" in result.stderr
    assert "analyze: error: dataset_format" in message.read_text()
    with pytest.raises(AnalyzerError, match="no records in"):
        run(table(tmp_path / "empty", pd.DataFrame({"a": []})), tmp_path / "o")
