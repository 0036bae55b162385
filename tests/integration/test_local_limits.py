"""The local backend enforces what SageMaker would: a job whose files outgrow its volume, or whose processes outgrow
its instance type's memory, fails at that job naming the step, the limit, what it held and the parameter to raise.
``LLPIPE_VOLUME_SCALE`` / ``LLPIPE_MEMORY_SCALE`` scale the limits down so the bundled example shows them; with the
sizes planned from the data and instance types that hold the capacity plan's peaks, the same run passes under both
scaled limits at once (one run, ``passing``, that both tests read)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.settings import fast

from pipeline.definition.config import load_config
from pipeline.local.data import example_data
from pipeline.local.executions import ExecutionRecord
from pipeline.local.runner import LocalRun, build_local_run
from pipeline.local.workdir import Workdir

# one host a job: a limit is per instance, and the messages name whichever host ran out
FAST = fast(Epochs=2, ProcessingInstanceCount=1, TrainingInstanceCount=1)
SCALE = 0.00001  # a GB holds 10,737 bytes: the example's files fill some tens of them
# 192 GiB x 0.002 = 412 MB for Preprocess and DataQuality; 8 GiB x 0.002 = 17 MB for Train: less than a Python
# process with numpy takes
MEMORY_SCALE = 0.002
ROOMY = "ml.m5.12xlarge"
TYPES = ("ProcessingInstanceType", "TrainingInstanceType", "TransformInstanceType", "EvaluationInstanceType")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> LocalRun:
    return build_local_run(load_config(env={}), Workdir(tmp_path_factory.mktemp("unused")))


def local_run(built: LocalRun, folder: Path, **options: bool) -> LocalRun:
    return LocalRun(built.config, Workdir(folder), built.definition_json, built.uploads, **options)


@pytest.fixture(scope="module")
def passing(built: LocalRun, tmp_path_factory: pytest.TempPathFactory) -> ExecutionRecord:
    """The run each limit's test shows passing once given room, under both scaled limits at once: its volumes sized
    from the data (no volume parameter given) and every job on a type whose scaled memory holds the capacity plan's
    peak for its step. One run for both: each limit is enforced whatever the other's scale."""
    folder = tmp_path_factory.mktemp("passing")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LLPIPE_VOLUME_SCALE", str(SCALE))
        patch.setenv("LLPIPE_MEMORY_SCALE", str(MEMORY_SCALE))
        return local_run(built, folder).execute(example_data(Workdir(folder)), {**FAST, **dict.fromkeys(TYPES, ROOMY)})


def test_a_volume_too_small_fails_at_its_job_and_the_planned_sizes_pass(
    built: LocalRun, passing: ExecutionRecord, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLPIPE_VOLUME_SCALE", str(SCALE))
    # the values as given (no sizing): Preprocess's instances hold far more than 1 GB here
    run = local_run(built, tmp_path / "unsized", size_from_data=False)
    record = run.execute(example_data(Workdir(tmp_path / "unsized")), {**FAST, "ProcessingVolumeSizeInGB": "1"})
    assert record.status == "Failed"
    assert record.steps["Preprocess"].status == "Failed"
    assert re.fullmatch(
        r"Preprocess: algo-[12] ran out of space on its 1 GB storage volume \(10,737 bytes here\): its inputs and "
        r"outputs held [\d,]+ bytes; raise ProcessingVolumeSizeInGB",
        record.steps["Preprocess"].failure_reason or "",
    ), record.steps["Preprocess"].failure_reason

    # the same volume given to a sized run is refused before anything runs, naming the size needed
    from pipeline.core.errors import ParameterError

    sized = local_run(built, tmp_path / "sized")
    with pytest.raises(ParameterError, match=r"give at least ProcessingVolumeSizeInGB=\d+ \(or leave it out"):
        sized.prepare(example_data(Workdir(tmp_path / "sized")), {**FAST, "ProcessingVolumeSizeInGB": "1"})
    assert not (tmp_path / "sized" / "executions").exists() or not any((tmp_path / "sized" / "executions").iterdir())

    # sized from the data, the same run passes (``passing``: the volume parameters left out, at this scale)
    assert passing.status == "Succeeded", passing.failure_reason
    assert passing.parameters["ProcessingVolumeSizeInGB"] > 30  # the example needs more than the default, scaled
    assert passing.parameters["EvaluationVolumeSizeInGB"] > 30


def test_memory_past_the_instance_types_fails_at_its_job(
    built: LocalRun, passing: ExecutionRecord, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLPIPE_MEMORY_SCALE", str(MEMORY_SCALE))
    run = local_run(built, tmp_path)
    types = {"ProcessingInstanceType": "ml.m5.12xlarge", "TrainingInstanceType": "ml.m5.large"}
    record = run.execute(example_data(Workdir(tmp_path)), {**FAST, **types})
    assert (record.steps["Preprocess"].status, record.steps["Train"].status) == ("Succeeded", "Failed")
    assert re.fullmatch(
        r"Train: algo-[12] ran out of memory on its ml\.m5\.large \(17,179,869 bytes here\): its processes took "
        r"[\d,]+ bytes; choose a larger TrainingInstanceType",
        record.steps["Train"].failure_reason or "",
    ), record.steps["Train"].failure_reason

    # every job on a type whose memory, at this scale, holds the capacity plan's peak for its step: the same run
    # passes (``passing``; the plan chooses no types; its peak memory per step is what a type must hold)
    import pipeline
    from pipeline.core.instances import INSTANCES

    plan = pipeline.plan(example_data(Workdir(tmp_path / "plan")).base)
    scaled = INSTANCES[ROOMY][0] * 2**30 * MEMORY_SCALE
    assert all(step.peak_memory_bytes <= scaled for step in plan.steps), [s.peak_memory_bytes for s in plan.steps]
    assert {passing.parameters[name] for name in TYPES} == {ROOMY}
    assert passing.status == "Succeeded", passing.failure_reason
