"""Schema inference: decisions from samples of tables with text columns, missing values and string labels; sampling
local files and S3 objects (exact ListObjectsV2 / ranged GetObject requests, botocore's Stubber); ``llpipe start
--dry-run`` reading only; and Preprocess hosts that, given the schema, agree whatever files and column orders they got.
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

import boto3
import numpy as np
import pandas as pd
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from containerlib.recordio import read
from pipeline.definition.schema import (
    SCHEMA_FORMAT,
    SchemaError,
    decide,
    sample_local,
    sample_s3,
    schema_bytes,
    schema_uri,
)
from pipeline.definition.schema_inference import infer
from preprocessing.preprocess import main
from preprocessing.summary import merge_summaries

PREFIX = "s3://llpipe-local/linear-learner-pipeline"
BINARY = {"LabelColumn": "default", "PredictorType": "binary_classifier", "HashBuckets": 0, "MissingValues": "drop"}


def default_table(rows: int = 400, seed: int = 0) -> pd.DataFrame:
    """The textbook 'Default' shape: a No/Yes label, a No/Yes student column, balance and income (some missing)."""
    rng = np.random.default_rng(seed)
    student = rng.random(rows) < 0.3
    balance = np.clip(rng.normal(800, 450, rows), 0, None).round(2)
    income = np.where(student, rng.normal(17000, 5000, rows), rng.normal(40000, 10000, rows)).round(2)
    default = rng.random(rows) < 1 / (1 + np.exp(-(-6 + 0.006 * balance - 0.6 * student)))
    frame = pd.DataFrame(
        {
            "default": np.where(default, "Yes", "No"),
            "student": np.where(student, "Yes", "No"),
            "balance": balance,
            "income": income,
        }
    )
    frame.loc[rng.choice(rows, 5, replace=False), "income"] = np.nan
    return frame


def sample_of(tmp_path: Path, frames: dict[str, pd.DataFrame], rows: int = 10_000) -> Any:
    folder = tmp_path / "data"
    folder.mkdir(exist_ok=True)
    for name, frame in frames.items():
        frame.to_csv(folder / name, index=False)
    return sample_local(sorted(folder / name for name in frames), folder, rows)


# ------------------------------------------------------------------------------------------------ decisions


def test_the_default_table_gives_its_text_column_and_label_values(tmp_path: Path) -> None:
    decision = decide(sample_of(tmp_path, {"default.csv": default_table()}), BINARY, {"LabelColumn"})
    assert decision.document == {
        "format": SCHEMA_FORMAT,
        "predictor_type": "binary_classifier",
        "label_column": "default",
        "id_column": None,
        "feature_columns": ["student", "balance", "income"],
        "categorical_columns": ["student"],
        "encodings": {"student": {"kind": "one_hot", "values": ["No", "Yes"], "boolean": True}},
        "label_values": ["No", "Yes"],
        "num_classes": None,
        "sample": {"source": "data", "files_sampled": 1, "files_total": 1, "rows_per_file": 10_000,
                   "rows": 400},
    }  # fmt: skip
    assert decision.parameters == {"CategoricalColumns": "student", "LabelValues": "No,Yes"}


def test_what_the_user_gave_is_kept(tmp_path: Path) -> None:
    sample = sample_of(tmp_path, {"default.csv": default_table()})
    values = {**BINARY, "CategoricalColumns": "", "LabelValues": "Yes,No"}
    decision = decide(sample, values, {"CategoricalColumns", "LabelValues"})
    assert decision.document["categorical_columns"] == [] and decision.document["label_values"] == ["Yes", "No"]
    assert decision.parameters == {}, "nothing the user set is passed again or replaced"


def test_multiclass_labels_text_and_integers(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"x": rng.normal(size=60), "kind": rng.choice(["b", "c", "a"], 60)})
    values = {"LabelColumn": "kind", "PredictorType": "multiclass_classifier", "NumClasses": 3}
    decision = decide(sample_of(tmp_path, {"t.csv": frame}), values, set())
    assert (decision.document["label_values"], decision.document["num_classes"]) == (["a", "b", "c"], 3)
    assert decision.parameters == {"LabelValues": "a,b,c", "NumClasses": "3"}
    frame["kind"] = rng.integers(0, 4, 60)  # already 0..K-1: only the number of classes is decided
    decision = decide(sample_of(tmp_path, {"t.csv": frame}), values, set())
    assert decision.document["label_values"] is None and decision.parameters == {"NumClasses": "4"}
    frame["kind"] = rng.choice([1, 2, 5], 60)  # integers but not 0..K-1: mapped in numeric order
    assert decide(sample_of(tmp_path, {"t.csv": frame}), values, set()).document["label_values"] == ["1", "2", "5"]
    with pytest.raises(SchemaError, match=r"parameter NumClasses=5 but label column 'kind' has 3 classes"):
        decide(sample_of(tmp_path, {"t.csv": frame}), {**values, "NumClasses": 5}, {"NumClasses"})


def test_binary_numeric_labels_need_no_values_and_bad_labels_are_refused(tmp_path: Path) -> None:
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "y": [0, 1, 0, 1]})
    values = {"LabelColumn": "y", "PredictorType": "binary_classifier"}
    assert decide(sample_of(tmp_path, {"t.csv": frame}), values, set()).document["label_values"] is None
    frame["y"] = ["a", "b", "c", "a"]
    with pytest.raises(SchemaError, match=r"needs 2 label values; .* has 3: \['a', 'b', 'c'\]; pass parameter LabelV"):
        decide(sample_of(tmp_path, {"t.csv": frame}), values, set())
    with pytest.raises(SchemaError, match=r"regressor needs numeric labels; label column 'y' has text values"):
        decide(sample_of(tmp_path, {"t.csv": frame}), {**values, "PredictorType": "regressor"}, set())


def test_long_lists_travel_in_the_schema_only(tmp_path: Path) -> None:
    columns = {f"text_column_with_a_long_name_{index:03d}": ["a", "b"] for index in range(60)}
    frame = pd.DataFrame({**columns, "y": [0, 1]})
    decision = decide(sample_of(tmp_path, {"t.csv": frame}), {"LabelColumn": "y", "PredictorType": "regressor"}, set())
    assert len(decision.document["categorical_columns"]) == 60
    assert "CategoricalColumns" not in decision.parameters, "over 1,024 characters: the schema object carries it"


def test_files_whose_columns_differ_or_repeat_are_named(tmp_path: Path) -> None:
    frame = default_table(20)
    renamed = frame.rename(columns={"income": "salary"})
    with pytest.raises(SchemaError, match=r"b\.csv: columns differ from a\.csv's: missing \['income'\], unexpected"):
        decide(sample_of(tmp_path, {"a.csv": frame, "b.csv": renamed}), BINARY, set())
    (tmp_path / "dup").mkdir()
    (tmp_path / "dup" / "d.csv").write_text("a,b,default,default\n1,2,No,No\n")
    with pytest.raises(SchemaError, match=r"d\.csv: duplicate column name\(s\) \['default'\]"):
        sample_local([tmp_path / "dup" / "d.csv"], tmp_path / "dup")
    with pytest.raises(SchemaError, match=r"no label column \(LabelColumn\) 'target'"):
        decide(sample_of(tmp_path, {"a.csv": frame}), {**BINARY, "LabelColumn": "target"}, set())


def test_collisions_are_warned_about_and_missing_values_refused_before_the_run(tmp_path: Path) -> None:
    frame = pd.DataFrame({"city": ["Paris", "Lyon", "Nice", "Rome", "Oslo"], "x": [1, 2, 3, 4, 5], "y": [1] * 5})
    values = {"LabelColumn": "y", "PredictorType": "regressor", "HashBuckets": 2, "MissingValues": "error"}
    notes = decide(sample_of(tmp_path, {"t.csv": frame}), values, set()).notes
    assert any("column 'city': 5 distinct value(s) in the sample share 2 of 2 hash buckets" in note for note in notes)
    frame.loc[3, "x"] = None
    with pytest.raises(SchemaError, match=r"t\.csv row 4: column 'x' is empty, a missing value; .* parameter Missing"):
        decide(sample_of(tmp_path, {"t.csv": frame}), values, set())
    frame["x"] = frame["x"].astype(object)
    frame.loc[3, "x"] = "NaN"  # the text NaN, read as missing: said as written, not as an empty cell
    with pytest.raises(SchemaError, match=r"t\.csv row 4: column 'x' holds the text 'NaN', a missing value; .* param"):
        decide(sample_of(tmp_path, {"t.csv": frame}), values, set())
    assert decide(sample_of(tmp_path, {"t.csv": frame}), {**values, "MissingValues": "zero"}, set()).document


def test_a_column_empty_in_every_sampled_row_is_named_with_what_works(tmp_path: Path) -> None:
    """Before: the run was refused with "pass --param MissingValues=zero (impute 0) or =drop", and =drop then failed
    in Preprocess, after the run started: every row was dropped."""
    frames = {name: pd.DataFrame({"x": [1.0, 2.0, 3.0], "blank": [None] * 3, "y": [0, 1, 0]}) for name in "ab"}
    values = {"LabelColumn": "y", "PredictorType": "binary_classifier", "HashBuckets": 2}
    for policy, outcome in (("error", "fail on its first row"), ("drop", "drop every row")):
        with pytest.raises(
            SchemaError,
            match=rf"column 'blank' has no value in any of the 6 sampled rows; with "
            rf"MissingValues={policy} Preprocess would {outcome}: leave the column out of the data, "
            r"or pass parameter MissingValues=zero",
        ):
            decide(sample_of(tmp_path, frames), {**values, "MissingValues": policy}, set())
    assert decide(sample_of(tmp_path, frames), {**values, "MissingValues": "zero"}, set()).document
    frames["b"].loc[1, "blank"] = 4.0  # a value in one file: the rows without one are dropped, as asked
    assert decide(sample_of(tmp_path, frames), {**values, "MissingValues": "drop"}, set()).document


def test_an_empty_id_is_refused_before_the_run(tmp_path: Path) -> None:
    """Before: only the label and features were checked, so an empty IdColumn value in the sample failed Preprocess
    after the run started, under every MissingValues policy."""
    frame = pd.DataFrame({"id": ["a", None, "c"], "x": [1.0, 2.0, 3.0], "y": [0, 1, 0]})
    values = {"LabelColumn": "y", "PredictorType": "binary_classifier", "HashBuckets": 2, "IdColumn": "id"}
    for policy in ("error", "zero", "drop"):
        with pytest.raises(SchemaError, match=r"t\.csv row 2: id column 'id' is empty; Preprocess would fail on it"):
            decide(sample_of(tmp_path, {"t.csv": frame}), {**values, "MissingValues": policy}, set())
    frame.loc[1, "x"] = None  # a row MissingValues=drop drops is never split: its empty id does not matter
    assert decide(sample_of(tmp_path, {"t.csv": frame}), {**values, "MissingValues": "drop"}, set()).document
    frame.loc[1, ["id", "x"]] = ["b", 2.0]
    assert decide(sample_of(tmp_path, {"t.csv": frame}), {**values, "MissingValues": "error"}, set()).document


def test_the_key_is_the_content(tmp_path: Path) -> None:
    sample = sample_of(tmp_path, {"default.csv": default_table()})
    first, second = infer(sample, BINARY, set(), PREFIX), infer(sample, BINARY, set(), PREFIX)
    assert first.uri == second.uri == schema_uri(PREFIX, first.body)
    assert first.parameters["SchemaUrl"] == first.uri and json.loads(first.body)["label_values"] == ["No", "Yes"]
    # the same decisions given by the user make the same object; other decisions another one
    assert infer(sample, {**BINARY, "LabelValues": "No,Yes"}, {"LabelValues"}, PREFIX).uri == first.uri
    assert infer(sample, {**BINARY, "LabelValues": "Yes,No"}, {"LabelValues"}, PREFIX).uri != first.uri
    assert schema_bytes({"b": 1, "a": 2}) == schema_bytes({"a": 2, "b": 1})


# ------------------------------------------------------------------------------------------------ S3 sampling


def body(data: bytes) -> StreamingBody:
    return StreamingBody(io.BytesIO(data), len(data))


@pytest.fixture
def s3() -> Any:
    client = boto3.client("s3", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def test_s3_sample_reads_the_first_bytes_of_each_object(s3: Any) -> None:
    client, stubber = s3
    frame = default_table(3000)
    text = frame.to_csv(index=False).encode()
    gz = gzip.compress(text)
    parquet = io.BytesIO()
    frame.iloc[:50].to_parquet(parquet, index=False)
    objects = {
        "in/a.csv": text,
        "in/b.csv.gz": gz,
        "in/c.parquet": parquet.getvalue(),
    }
    listing = [{"Key": key, "Size": len(data)} for key, data in objects.items()]
    listing.insert(0, {"Key": "in/_SUCCESS", "Size": 0})
    stubber.add_response(
        "list_objects_v2", {"Contents": listing, "IsTruncated": False}, {"Bucket": "data", "Prefix": "in/"}
    )
    limit = 16384
    size = len(objects["in/c.parquet"])
    assert size < limit < len(gz) < len(text)
    # a.csv and b.csv.gz are larger than the limit: only their first 16 KiB are read and cut after the last line
    stubber.add_response(
        "get_object", {"Body": body(text[:limit])}, {"Bucket": "data", "Key": "in/a.csv", "Range": "bytes=0-16383"}
    )
    stubber.add_response(
        "get_object", {"Body": body(gz[:limit])}, {"Bucket": "data", "Key": "in/b.csv.gz", "Range": "bytes=0-16383"}
    )
    stubber.add_response(
        "get_object",
        {"Body": body(objects["in/c.parquet"])},
        {"Bucket": "data", "Key": "in/c.parquet", "Range": f"bytes=0-{size - 1}"},
    )
    sample = sample_s3(client, "s3://data/in/", rows=2000, max_objects=3, max_bytes=limit)
    assert list(sample.headers) == ["a.csv", "b.csv.gz", "c.parquet"]
    csv_rows = len(sample.frames[0])
    expected = pd.read_csv(io.BytesIO(text), dtype=str).iloc[:csv_rows]
    assert 0 < csv_rows < 2000 and sample.frames[0].equals(expected), "whole lines only, as written"
    assert csv_rows < len(sample.frames[1]) < 2000, "the gzip prefix decompresses to more rows than the plain prefix"
    assert sample.frames[1].equals(pd.read_csv(io.BytesIO(text), dtype=str).iloc[: len(sample.frames[1])])
    assert len(sample.frames[2]) == 50
    assert sample.bytes_read == 2 * limit + size
    decision = decide(sample, BINARY, set())
    assert decision.document["categorical_columns"] == ["student"]
    assert decision.document["label_values"] == ["No", "Yes"]


@pytest.mark.parametrize(
    ("max_bytes", "expected"), [(200_000, [0, 5, 10, 15, 20, 24, 29, 34, 39]), (100_000, [0, 39]), (80_000, [0])]
)
def test_s3_sample_of_a_large_parquet_reads_footer_and_row_groups_spread_over_it_by_ranges(
    s3: Any, max_bytes: int, expected: list[int]
) -> None:
    """Row groups as many as the byte budget holds, from the first to the last (a first row group of one class
    decided the label values); each is one ranged GetObject of its column chunks."""
    client, stubber = s3
    frame = default_table(40000).sort_values("default", kind="stable")  # No rows first: the first groups hold no Yes
    data = io.BytesIO()
    frame.to_parquet(data, index=False, row_group_size=1000)
    data = data.getvalue()
    stubber.add_response(
        "list_objects_v2",
        {"Contents": [{"Key": "t.parquet", "Size": len(data)}], "IsTruncated": False},
        {"Bucket": "data", "Prefix": "t"},
    )
    requested: list[tuple[int, int]] = []

    def respond(start: int, end: int) -> None:
        stubber.add_response(
            "get_object",
            {"Body": body(data[start:end])},
            {"Bucket": "data", "Key": "t.parquet", "Range": f"bytes={start}-{end - 1}"},
        )
        requested.append((start, end))

    # pyarrow reads the 8-byte tail, then the footer, then each row group's column chunks: queue what it asks for
    import pyarrow.parquet as pq

    metadata = pq.ParquetFile(io.BytesIO(data)).metadata
    footer_length = int.from_bytes(data[-8:-4], "little")
    tail = max(len(data) - 64 * 1024, 0)
    respond(tail, len(data))  # pyarrow reads a 64 KiB tail holding the footer
    for index in expected:
        group = metadata.row_group(index)
        columns = [group.column(c) for c in range(group.num_columns)]
        start = min(min(x for x in (c.dictionary_page_offset, c.data_page_offset) if x) for c in columns)
        if start < tail:  # a row group inside the tail already read is not asked for again
            respond(start, start + sum(c.total_compressed_size for c in columns))
    sample = sample_s3(client, "s3://data/t", rows=100, max_objects=4, max_bytes=max_bytes)
    assert len(sample.frames[0]) == 100 and footer_length < 64 * 1024
    assert sample.bytes_read == sum(end - start for start, end in requested) < len(data)
    assert ("Yes" in set(sample.frames[0]["default"])) == (len(expected) > 1)
    stubber.assert_no_pending_responses()


# ------------------------------------------------------------------------------------------------ start --dry-run


def test_start_dry_run_only_reads_and_prints_the_inferred_parameters(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pipeline.cli import main as llpipe
    from pipeline.definition.build import build_definition
    from pipeline.definition.config import PipelineConfig

    config = PipelineConfig(region="eu-west-1", role_arn="arn:aws:iam::123456789012:role/R", bucket="bkt")
    definition = build_definition(config).definition_json
    clients = {
        name: boto3.client(name, region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x")
        for name in ("sagemaker", "s3")
    }

    class Session:
        def client(self, name: str) -> Any:
            return clients[name]

    monkeypatch.setattr("pipeline.sagemaker.aws.session", lambda config: Session())
    text = default_table(300).to_csv(index=False).encode()
    with Stubber(clients["sagemaker"]) as sagemaker, Stubber(clients["s3"]) as s3:
        sagemaker.add_response(
            "describe_pipeline",
            {"PipelineArn": "arn:aws:sagemaker:eu-west-1:123456789012:pipeline/p", "PipelineDefinition": definition},
            {"PipelineName": config.pipeline_name},
        )
        s3.add_response(
            "list_objects_v2",
            {"Contents": [{"Key": "raw/default.csv", "Size": len(text)}], "IsTruncated": False},
            {"Bucket": "bkt", "Prefix": "raw/"},
        )
        s3.add_response(
            "get_object",
            {"Body": body(text)},
            {"Bucket": "bkt", "Key": "raw/default.csv", "Range": f"bytes=0-{len(text) - 1}"},
        )
        # the definition read once serves the inference and the request: no second DescribePipeline
        listing = [{"Key": "raw/default.csv", "Size": len(text), "ETag": '"e1"'}]
        s3.add_response(  # the DataVersion fingerprint lists the whole input
            "list_objects_v2", {"Contents": listing, "IsTruncated": False}, {"Bucket": "bkt", "Prefix": "raw/"}
        )
        code = llpipe(
            ["start", "--dry-run", "--region", "eu-west-1", "--role-arn", config.role_arn, "--bucket", "bkt",
             "--param", "InputDataUrl=s3://bkt/raw/", "--param", "LabelColumn=default",
             "--param", "MissingValues=drop"]
        )  # fmt: skip
        # no PutObject and no StartPipelineExecution was queued: the Stubber would have refused them
        sagemaker.assert_no_pending_responses()
        s3.assert_no_pending_responses()
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "categorical columns (text values in the sample): student" in captured.err
    request = json.loads(captured.out)  # stdout: the StartPipelineExecution request it would send
    parameters = {item["Name"]: item["Value"] for item in request["PipelineParameters"]}
    schema_url = parameters.pop("SchemaUrl")
    assert schema_url.startswith("s3://bkt/linear-learner-pipeline/schemas/") and schema_url in captured.err
    assert parameters.pop("DataVersion")
    assert parameters == {
        "InputDataUrl": "s3://bkt/raw/",
        "LabelColumn": "default",
        "MissingValues": "drop",
        "CategoricalColumns": "student",
        "LabelValues": "No,Yes",
    }
    assert "nothing was uploaded or started" in captured.err


# ------------------------------------------------------------------------------------------------ Preprocess hosts


def preprocess_hosts(tmp_path: Path, name: str, parts: list[pd.DataFrame], hosts: int, *extra: str) -> list[Path]:
    """Preprocess ``parts`` (one CSV each) on ``hosts`` hosts, files dealt in order; returns the output dirs."""
    names = [f"part-{index}.csv" for index in range(len(parts))]
    host_names = [f"algo-{index + 1}" for index in range(hosts)]
    outputs = []
    for index, host in enumerate(host_names):
        folder = tmp_path / name / host
        (folder / "in").mkdir(parents=True)
        for file_index in range(index, len(parts), hosts):
            parts[file_index].to_csv(folder / "in" / names[file_index], index=False)
        config = folder / "resourceconfig.json"
        config.write_text(json.dumps({"current_host": host, "hosts": host_names}))
        code = main(["--input-dir", str(folder / "in"), "--output-dir", str(folder / "out"), "--resource-config",
                     str(config), "--label-column", "default", "--predictor-type", "binary_classifier",
                     "--missing", "drop", *extra])  # fmt: skip
        if code != 0:
            raise AssertionError(f"{host} failed")
        outputs.append(folder / "out")
    return outputs


def rows_of(outputs: list[Path]) -> list[tuple[float, ...]]:
    rows = []
    for output in outputs:
        for path in sorted(output.glob("*/*.pbr")):
            with open(path, "rb") as handle:
                features, labels = read(handle)
            rows.extend(map(tuple, np.column_stack([features, labels]).tolist()))
    return sorted(rows)


def test_column_order_differing_between_files_gives_the_aligned_result(tmp_path: Path) -> None:
    """Issue 11, case 1: before, each host took its own first file's order (AUC 0.86 instead of 0.99, exit 0)."""
    frame = default_table(600)
    parts = [frame.iloc[index::4] for index in range(4)]
    shuffled = [part[list(reversed(part.columns))] if index % 2 else part for index, part in enumerate(parts)]
    schema = tmp_path / "schema.json"
    sample = sample_of(tmp_path, {f"p{index}.csv": part for index, part in enumerate(shuffled)})
    schema.write_bytes(decide(sample, BINARY, set()).body)
    args = ["--schema", str(schema)]
    aligned = rows_of(preprocess_hosts(tmp_path, "aligned", parts, 2, *args))
    assert rows_of(preprocess_hosts(tmp_path, "shuffled", shuffled, 2, *args)) == aligned
    # without a schema the sorted-name rule gives every host one order too
    options = ["--categorical-columns", "student", "--label-values", "No,Yes"]
    by_rule = rows_of(preprocess_hosts(tmp_path, "rule-a", parts, 2, *options))
    assert rows_of(preprocess_hosts(tmp_path, "rule-b", shuffled, 2, *options)) == by_rule
    parts = [json.loads(path.read_text()) for path in sorted((tmp_path / "aligned").glob("*/out/summary/*.json"))]
    summary = merge_summaries(parts)
    assert summary["feature_names"][:3] == ["student=No", "student=Yes", "student=(other)"]
    assert summary["label_values"] == ["No", "Yes"] and summary["unseen_values"] == {}


def test_a_file_with_other_column_names_fails_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 11, case 1b: `f4` in one file, `g4` in another passed silently."""
    frame = default_table(200)
    parts = [frame.iloc[:100], frame.iloc[100:].rename(columns={"income": "g4"})]
    schema = tmp_path / "schema.json"
    schema.write_bytes(decide(sample_of(tmp_path, {"p0.csv": parts[0]}), BINARY, set()).body)
    with pytest.raises(AssertionError, match="algo-2 failed"):
        preprocess_hosts(tmp_path, "renamed", parts, 2, "--schema", str(schema))
    error = capsys.readouterr().err
    assert "part-1.csv: columns differ from the layout every host uses (the schema): missing ['income'], " in error
    assert "unexpected ['g4']" in error


def test_the_client_hashes_categories_into_the_buckets_preprocess_uses() -> None:
    """One hash function, the container library's: the client's collision check and Preprocess's feature hashing."""
    import hashlib

    from containerlib import encoding
    from containerlib.stable_hash import stable_hash64

    # Preprocess and the serving featurizer hash through containerlib/encoding.py's encode_features
    assert encoding.stable_hash64 is stable_hash64
    expected = int.from_bytes(hashlib.blake2b("city=Zürich".encode(), digest_size=8).digest(), "little")
    assert stable_hash64("city=Zürich") == expected  # blake2b-64 of the UTF-8 text, little-endian


def test_a_first_row_group_over_the_byte_budget_is_refused_with_the_fix(s3: Any) -> None:
    client, stubber = s3
    data = io.BytesIO()
    default_table(20000).to_parquet(data, index=False)  # one row group of ~20,000 rows
    data = data.getvalue()
    stubber.add_response(
        "list_objects_v2", {"Contents": [{"Key": "t.pq", "Size": len(data)}]}, {"Bucket": "data", "Prefix": "t"}
    )
    tail = max(len(data) - 64 * 1024, 0)
    stubber.add_response(
        "get_object",
        {"Body": body(data[tail:])},
        {"Bucket": "data", "Key": "t.pq", "Range": f"bytes={tail}-{len(data) - 1}"},
    )
    with pytest.raises(SchemaError, match=r"t\.pq: sampling a row group needs more than 70000 bytes; raise"):
        sample_s3(client, "s3://data/t", rows=10, max_bytes=70_000)
