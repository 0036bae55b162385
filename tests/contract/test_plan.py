"""``llpipe plan`` and ``pipeline.plan``: every number follows from the documented figures (recomputed here from
their sources: the benchmarks' rates, the SIGMOD 2020 points, the price table), for a stated size, a local folder
and an S3 prefix listed through ListObjectsV2."""

from __future__ import annotations

import json
import math
from pathlib import Path

import boto3
import pandas as pd
import pytest
from botocore.stub import Stubber

import pipeline
from pipeline import cli
from pipeline.core import capacity
from pipeline.core.errors import UsageError

TB = 10**12
ROWS = 5 * 10**9
# the sources, restated: benchmarks/RESULTS.md (Preprocess: 1,000,000 CSV rows in 1.55 s; serve: 162,542 rows/s),
# the benchmark CSV's 421 bytes a row, the sizing's 2.5 RecordIO bytes a CSV byte (without a feature count), SIGMOD
# 2020 (30 GB: 10/20/40 hosts, 7.5/4/3 min)
PREPROCESS_RATE = 1_000_000 / 1.55
TRANSFORM_RATE = 162_542
CSV_TO_RECORDIO = 2.5
PRICE = {"ml.m5.xlarge": 0.23, "ml.m5.large": 0.115}
GIB = 2**30


def sigmod_fit() -> tuple[float, float]:
    """T(n) = a + b/n through (10, 450 s), (20, 240 s), (40, 180 s) by least squares, solved as normal equations."""
    points = [(1 / 10, 450.0), (1 / 20, 240.0), (1 / 40, 180.0)]
    n, sx, sy = len(points), sum(x for x, _ in points), sum(y for _, y in points)
    sxx, sxy = sum(x * x for x, _ in points), sum(x * y for x, y in points)
    b = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    return (sy - b * sx) / n, b


def volume(held: float) -> int:
    return math.ceil((held * 1.25 + 2**20) / GIB)  # the sizing's: 25% headroom and 1 MiB of small files, in GiB


def paying_past(train_bytes: float) -> int:
    """Efficiency (a + work) / (n a + work) >= 0.7 up to n = ((a + work) / 0.7 - work) / a (ml.m5.xlarge: 4 vCPUs)."""
    a, b = sigmod_fit()
    work = b * train_bytes / 30e9
    return min(1000, math.floor(((a + work) / 0.7 - work) / a))  # 1000: the plan's search bound


def test_a_stated_terabyte_gives_each_step_the_numbers_its_figures_imply() -> None:
    """A stated size is planned as objects of 512 MiB (1,863 for 1 TB); the counts, bytes and volumes are the
    definition's sizing rules (docs/guides/very-large-data.md) worked by hand, the times and costs the figures'."""
    plan = pipeline.plan(bytes="1TB", rows="5e9")
    a, b = sigmod_fit()
    recordio = TB * CSV_TO_RECORDIO
    train_bytes = recordio * 0.7
    paying = paying_past(train_bytes)
    assert plan.max_paying_instances == paying == 1000  # the search bound

    preprocess, trained, transform, evaluate = plan.steps
    assert [s.step for s in plan.steps] == ["Preprocess", "Train", "Transform", "Evaluate"]
    # Preprocess: one host per 10 GiB (94); 1,863 objects dealt by key: the busiest reads 20 of them
    objects = math.ceil(TB / 2**29)
    sizes = [TB // objects + (index < TB % objects) for index in range(objects)]
    busiest = max(sum(sizes[index::94]) for index in range(94))
    assert (preprocess.instance_type, preprocess.instance_count) == ("ml.m5.xlarge", 94)
    assert preprocess.download_bytes == busiest
    # its RecordIO (2.5x its bytes without a feature count) written twice (the spill), plus its share of the
    # data-quality sample (10,000 of the 5e9 rows, twice its bytes' share)
    written = int(2 * busiest * CSV_TO_RECORDIO + 2 * busiest * 10_000 / ROWS)
    assert preprocess.write_bytes == written
    assert preprocess.volume_gb == volume(busiest + written) == 75
    assert preprocess.seconds == pytest.approx(ROWS / 94 / PREPROCESS_RATE)
    assert preprocess.cost_usd == pytest.approx(94 * preprocess.seconds / 3600 * PRICE["ml.m5.xlarge"])
    assert preprocess.memory_fits
    # Train: one per 50 GiB of train RecordIO, capped at 20; Pipe mode: a host downloads only validation shards
    assert (trained.instance_type, trained.instance_count) == ("ml.m5.xlarge", 20)
    assert trained.volume_gb == 30  # the default holds it
    assert trained.seconds == pytest.approx(a + b * train_bytes / 30e9 / 20)
    assert trained.cost_usd == pytest.approx(20 * trained.seconds / 3600 * PRICE["ml.m5.xlarge"])
    # Transform: one per 20 GiB of test RecordIO (at most one per Preprocess host); Evaluate downloads the test
    # split and 64 bytes a prediction
    assert (transform.instance_count, transform.instance_type) == (
        math.ceil(recordio * 0.15 / (20 * GIB)),
        "ml.m5.large",
    )
    assert transform.seconds == pytest.approx(ROWS * 0.15 / transform.instance_count / TRANSFORM_RATE)
    assert evaluate.download_bytes == int(recordio * 0.15 + ROWS * 0.15 * 64)
    assert evaluate.volume_gb == volume(evaluate.download_bytes)
    assert evaluate.seconds == pytest.approx(ROWS * 0.15 / TRANSFORM_RATE)
    assert plan.cost_usd == pytest.approx(sum(s.cost_usd for s in plan.steps))

    one, *_, last = plan.training_curve
    work = b * train_bytes / 30e9
    assert (one.instances, one.efficiency) == (1, 1.0) and one.seconds == pytest.approx(a + work)
    assert last.instances == paying and last.efficiency == pytest.approx((a + work) / (paying * a + work))


def test_a_given_training_count_is_kept_and_named_when_it_no_longer_pays() -> None:
    plan = pipeline.plan(bytes="3GB", rows=7_125_890, training_instances=40)
    train = plan.step("Train")
    paying = paying_past(3e9 * CSV_TO_RECORDIO * 0.7)
    assert train.instance_count == 40 and plan.max_paying_instances == paying == 5
    assert f"past {paying} instances efficiency falls below 70%: more instances stop paying" in train.notes
    assert [point.instances for point in plan.training_curve] == [1, 2, 4, 8, 16, 32, 40]


def test_the_published_points_are_what_the_fit_reproduces() -> None:
    """The SIGMOD 2020 task itself (30 GB trained on ml.m4.xlarge): the fit is within 0.35 minutes of each point."""
    for hosts, seconds in capacity.SIGMOD_POINTS:
        assert abs(capacity.training_seconds(30e9, hosts, "ml.m4.xlarge") - seconds) < 21, hosts
    assert capacity.sigmod_fit() == pytest.approx(sigmod_fit())


def test_the_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["plan", "--bytes", "1TB", "--rows", "5e9", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert sorted(data) == ["cost_usd", "figures", "input", "seconds", "steps", "training"]
    assert data["input"] == {
        "bytes": TB,
        "rows": ROWS,
        "files": None,
        "source": "a stated size",
        "rows_estimated": False,
    }
    step_keys = [
        "step", "kind", "instance_type", "instance_count", "volume_gb", "download_bytes", "write_bytes",
        "peak_memory_bytes", "instance_memory_bytes", "seconds", "cost_usd", "notes", "memory_fits",
    ]  # fmt: skip
    assert all(list(step) == step_keys for step in data["steps"])
    assert [step["kind"] for step in data["steps"]] == ["ProcessingJob", "TrainingJob", "TransformJob", "ProcessingJob"]
    training = data["training"]
    assert sorted(training) == ["curve", "efficiency_floor", "max_paying_instances", "model"]
    assert training["max_paying_instances"] == 1000 and training["efficiency_floor"] == 0.7
    assert sorted(training["curve"][0]) == ["cost_usd", "efficiency", "instances", "seconds", "speedup"]
    assert "SIGMOD 2020" in training["model"]["source"]
    sources = {figure["name"]: figure["source"] for figure in data["figures"]}
    assert "benchmarks/RESULTS.md, Preprocess" in sources["preprocess_rows_per_second"]
    assert "benchmarks/RESULTS.md, llpipe serve" in sources["transform_rows_per_second"]
    measured = "benchmarks/RESULTS.md, The merged branches on the quiet machine"  # a section of RESULTS.md
    assert sources["memory:Preprocess"].startswith(measured) and "prices" in sources
    assert "pipeline/core/sizing.py" in sources["csv_to_recordio"]
    assert all(set(figure) == {"name", "value", "unit", "source"} for figure in data["figures"])


def test_a_local_folder_is_measured_file_by_file(tmp_path: Path) -> None:
    """CSV rows are lines after the header (a last line without its newline counts), Parquet rows its metadata."""
    folder = tmp_path / "input"
    (folder / "part").mkdir(parents=True)
    (folder / "a.csv").write_text("x,label\n1,0\n2,1\n3,0\n")
    (folder / "part" / "b.csv").write_text("x,label\n4,1\n5,0")
    pd.DataFrame({"x": range(7), "label": [0, 1] * 3 + [0]}).to_parquet(folder / "c.parquet")
    (folder / ".hidden").write_text("ignored\n")
    plan = pipeline.plan(folder)
    files = [folder / "a.csv", folder / "part" / "b.csv", folder / "c.parquet"]
    assert plan.input.bytes == sum(f.stat().st_size for f in files) and plan.input.files == 3
    assert plan.input.rows == 3 + 2 + 7 and not plan.input.rows_estimated
    assert plan.input.source == f"local {folder}"
    assert plan.step("Preprocess").seconds == pytest.approx(12 / 2 / PREPROCESS_RATE)
    assert pipeline.plan(folder, rows=1000).input.rows == 1000
    frame = plan.frame()
    assert list(frame.index) == ["Preprocess", "Train", "Transform", "Evaluate"]
    assert frame.loc["Train", "instance_count"] == 2  # the definition's default: small data wants no more


def test_an_s3_prefix_is_listed_page_by_page() -> None:
    """ListObjectsV2 with the bucket and prefix, then the continuation token; folder markers are not objects."""
    s3 = boto3.client("s3", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
    stubber = Stubber(s3)
    stubber.add_response(
        "list_objects_v2",
        {
            "IsTruncated": True,
            "NextContinuationToken": "page-2",
            "Contents": [{"Key": "raw/2026/", "Size": 0}, {"Key": "raw/2026/a.csv", "Size": 600 * 10**9}],
        },
        {"Bucket": "data", "Prefix": "raw/2026/"},
    )
    stubber.add_response(
        "list_objects_v2",
        {"IsTruncated": False, "Contents": [{"Key": "raw/2026/b.csv", "Size": 400 * 10**9}]},
        {"Bucket": "data", "Prefix": "raw/2026/", "ContinuationToken": "page-2"},
    )
    with stubber:
        plan = pipeline.plan("s3://data/raw/2026/", s3=s3)
    stubber.assert_no_pending_responses()
    assert (plan.input.bytes, plan.input.files, plan.input.source) == (TB, 2, "s3://data/raw/2026/")
    assert plan.input.rows == round(TB / 421) and plan.input.rows_estimated
    assert "capped at 2: ShardedByS3Key gives each host whole objects (2)" in plan.step("Preprocess").notes[0]

    empty = Stubber(s3)
    empty.add_response("list_objects_v2", {"IsTruncated": False}, {"Bucket": "data", "Prefix": "none/"})
    with empty, pytest.raises(UsageError, match=r"^s3://data/none/: no objects under the prefix to plan for$"):
        pipeline.plan("s3://data/none/", s3=s3)


def test_the_cli_prints_the_plan_within_80_columns(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["plan", "--bytes", "1TB", "--rows", "5e9"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert lines[0] == "Capacity plan for a stated size: 1.00 TB, 5,000,000,000 rows"
    assert lines[2].split() == ["step", "instances", "volume", "down", "write", "memory", "time", "cost"]
    rows = {line.split()[0]: line for line in lines[4:9]}
    assert rows["Preprocess"].split()[:6] == ["Preprocess", "94", "x", "m5.xlarge", "75", "GB"]
    assert rows["Train"].split()[:6] == ["Train", "20", "x", "m5.xlarge", "30", "GB"]
    assert (
        rows["Evaluate"].split()[:6] == ["Evaluate", "1", "x", "m5.large", "493", "GB"] and "!" not in rows["Evaluate"]
    )
    assert "More training instances stop paying past 1,000: efficiency falls below 70%." in lines


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["plan"], "plan needs an input: a local folder, an s3:// prefix, or --bytes (and --rows)"),
        (["plan", "--bytes", "lots"], "--bytes 'lots': expected a size such as 1TB, 500GB, 64GiB or 2.5e9"),
        (["plan", "--bytes", "1TB", "--rows", "many"], "--rows 'many': expected a number of rows such as 5e9"),
        (
            ["plan", "--bytes", "1TB", "--instance-type", "Train=ml.x9.huge"],
            "no memory and vCPU figures for instance type 'ml.x9.huge'",
        ),
        (["plan", "--bytes", "1TB", "--price", "ml.m5.large"], "--price 'ml.m5.large': expected TYPE=USD"),
        (["plan", "--bytes", "1TB", "--training-instances", "0"], "--training-instances 0: expected at least 1"),
    ],
)
def test_bad_requests_are_refused_naming_the_flag(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(argv) == 2
    assert capsys.readouterr().err.startswith(f"llpipe plan: {message}")


def test_prices_and_types_can_be_given() -> None:
    plan = pipeline.plan(
        bytes="100GB", rows=10**8, instance_types={"Train": "ml.m5.2xlarge"}, prices={"ml.m5.2xlarge": 1.0}
    )
    train = plan.step("Train")
    assert train.instance_type == "ml.m5.2xlarge" and train.instance_memory_bytes == 32 * 2**30
    assert train.cost_usd == pytest.approx(train.instance_count * train.seconds / 3600)
    a, b = sigmod_fit()
    assert train.seconds == pytest.approx(a + b * (100e9 * CSV_TO_RECORDIO * 0.7 / 30e9) * 4 / 8 / train.instance_count)
