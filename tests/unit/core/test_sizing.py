"""pipeline.core.sizing: counts and volumes from the input's listing; small data keeps the defaults, a value given
wins, a given volume too small for the data is refused naming the parameter and the size needed."""

from __future__ import annotations

import pytest

from pipeline.core.errors import ParameterError
from pipeline.core.sizing import GB, InputData, plan_sizes, sized_parameters
from pipeline.definition.parameter_table import TABLE, Placeholders

DEFAULTS = {row.name: row.default_for(Placeholders()) for row in TABLE}


def listing(count: int, size: int, suffix: str = "csv") -> InputData:
    return InputData(tuple((f"part-{number:05d}.{suffix}", size) for number in range(count)))


def test_small_data_keeps_the_definitions_defaults() -> None:
    # the table's defaults: start sends none of them, the definition stays as it was for small data
    plan = plan_sizes(listing(4, 50 << 20), DEFAULTS)
    assert sized_parameters(plan, DEFAULTS, set()) == {
        "ProcessingInstanceCount": 2,
        "ProcessingVolumeSizeInGB": 30,
        "TrainingInstanceCount": 2,
        "TrainingVolumeSizeInGB": 30,
        "TransformInstanceCount": 1,
        "EvaluationVolumeSizeInGB": 30,
    }


def test_the_floors_are_the_definitions_defaults_not_a_copy() -> None:
    """A deployed definition whose defaults differ from today's table: the sizes never go below its own defaults;
    one that predates TrainingInputMode downloads the train channel (File mode) and is planned so."""
    deployed = {**DEFAULTS, "ProcessingInstanceCount": 3, "EvaluationVolumeSizeInGB": 45}
    sized = sized_parameters(plan_sizes(listing(4, 50 << 20), deployed), deployed, set())
    assert (sized["ProcessingInstanceCount"], sized["EvaluationVolumeSizeInGB"]) == (3, 45)
    older = {name: value for name, value in DEFAULTS.items() if name != "TrainingInputMode"}
    data = listing(8, 20 * GB)
    assert plan_sizes(data, older)["Train"] == plan_sizes(data, {**DEFAULTS, "TrainingInputMode": "File"})["Train"]


def test_counts_given_are_kept_and_the_volumes_follow_them() -> None:
    data = listing(100, 1 * GB)
    values = {**DEFAULTS, "ProcessingInstanceCount": 4}
    plan = plan_sizes(data, values, {"ProcessingInstanceCount"})
    assert plan["Preprocess"].instances == 4
    assert plan["Preprocess"].download_bytes == 25 * GB  # 100 objects dealt round-robin to 4 instances
    sized = sized_parameters(plan, values, {"ProcessingInstanceCount"})
    assert "ProcessingInstanceCount" not in sized
    # 25 GiB read, 2.5x written twice (spill) and a 2 GiB baseline sample: (25 + 125 + 2) x 1.25 + 1 MiB
    assert sized["ProcessingVolumeSizeInGB"] == 191
    # without the given count the data gets 10 instances of 10 GiB
    assert plan_sizes(data, DEFAULTS)["Preprocess"].instances == 10


def test_file_mode_downloads_the_train_shards_and_pipe_mode_does_not() -> None:
    data = listing(100, 1 * GB)
    pipe = plan_sizes(data, DEFAULTS)["Train"]
    file = plan_sizes(data, {**DEFAULTS, "TrainingInputMode": "File"})["Train"]
    assert file.download_bytes > pipe.download_bytes * 4  # train is 70% of the rows, validation 15%


def test_parquet_is_planned_larger_than_csv_unless_rows_and_features_are_known() -> None:
    csv = plan_sizes(listing(8, 1 * GB), DEFAULTS)["Evaluate"]
    parquet = plan_sizes(listing(8, 1 * GB, "parquet"), DEFAULTS)["Evaluate"]
    assert parquet.download_bytes == 4 * csv.download_bytes  # 10x against 2.5x
    # known rows and features: 4 bytes a value and 48 of framing a record, predictions 64 bytes each
    exact = InputData(listing(8, 1 * GB, "parquet").objects, rows=10_000_000, features=20)
    evaluate = plan_sizes(exact, DEFAULTS)["Evaluate"]
    assert evaluate.download_bytes == int(10_000_000 * 0.15 * (4 * 21 + 48) + 10_000_000 * 0.15 * 64)


def test_a_given_volume_too_small_is_refused_naming_the_size_needed() -> None:
    values = {**DEFAULTS, "TrainingInputMode": "File", "TrainingVolumeSizeInGB": 40}
    plan = plan_sizes(listing(400, 1 * GB), values, {"TrainingVolumeSizeInGB"})
    with pytest.raises(ParameterError) as raised:
        sized_parameters(plan, values, {"TrainingVolumeSizeInGB", "TrainingInputMode"})
    size = plan["Train"]
    assert str(raised.value) == (
        f"parameter TrainingVolumeSizeInGB=40 is too small for the data: each Train instance downloads up to "
        f"{size.download_bytes:,} bytes and writes up to 0; give at least TrainingVolumeSizeInGB={size.volume_gb} "
        "(or leave it out: it is sized from the data)"
    )
    # a given volume large enough is kept as given
    values["TrainingVolumeSizeInGB"] = size.volume_gb
    assert "TrainingVolumeSizeInGB" not in sized_parameters(plan, values, {"TrainingVolumeSizeInGB"})
