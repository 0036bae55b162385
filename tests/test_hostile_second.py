"""The second hostile try-out (issue 27): parameters out of range, instance counts the machine cannot hold, types
decided on purpose, tracebacks turned into clear errors. Each test failed before its fix (its docstring says how);
they run the real CLI, the real checks and the real container code on real files, kept tiny."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline import cli
from pipeline.core.errors import ParameterError, TrainingError
from pipeline.definition.parameters import check_overrides
from pipeline.linear_learner import launcher
from pipeline.local import preflight


def binary_csv(path: Path, rows: int = 200, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(rows, 3))
    frame = pd.DataFrame(features, columns=["a", "b", "c"])
    frame["label"] = (features[:, 0] > 0).astype(int)
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return binary_csv(tmp_path_factory.mktemp("data") / "data.csv")


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(argv)
    return code, capsys.readouterr().err


# ------------------------------------------------------------------------------- parameters, before the run


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        (["TrainingInstanceCount=0"], "TrainingInstanceCount=0: expected at least 1"),
        (["ProcessingInstanceCount=0"], "ProcessingInstanceCount=0: expected at least 1"),
        (["HashBuckets=0"], "HashBuckets=0: expected at least 1"),
        (["HashBuckets=524288"], "HashBuckets=524288: expected at least 1 and at most 65,536"),
        (["ValidationFraction=-0.1"], "ValidationFraction=-0.1: expected greater than 0 and less than 1"),
        (["ValidationFraction=0"], "ValidationFraction=0.0: expected greater than 0"),
        (["TestFraction=0"], "TestFraction=0.0: expected greater than 0"),
        (["ValidationFraction=nan"], "ValidationFraction=nan: expected"),
        (["ValidationFraction=0.6", "TestFraction=0.5"], "ValidationFraction=0.6 + TestFraction=0.5 = 1.1"),
        (["TestFraction=0.9"], "ValidationFraction=0.15 + TestFraction=0.9 = 1.05"),
        (["TrainingInstanceCount=1000"], "TrainingInstanceCount=1000: locally each training instance is a process"),
    ],
)
def test_parameters_out_of_range_are_refused_before_the_run_under_their_own_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: Path, params: list[str], expected: str
) -> None:
    """Before: TrainingInstanceCount=0 and HashBuckets=0 failed inside Preprocess under the script's flags
    (--train-shards, --hash-buckets); ValidationFraction=-0.1 ran; fractions summing over 1 said "about -1000 rows";
    TestFraction=0 / ValidationFraction=0 failed in Train ("channel test: no S3 objects"); TrainingInstanceCount=1000
    started a process per instance until the kernel killed llpipe. Now exit 2 naming the parameter, nothing run."""
    argv = ["run", "--workdir", str(tmp_path / "w"), "--data", str(data), "--label-column", "label"]
    argv += ["--predictor-type", "binary_classifier", "--quiet"]
    code, err = run_cli(argv + [item for p in params for item in ("--param", p)], capsys)
    assert code == 2, err
    assert expected in err and "Traceback" not in err and "--train-shards" not in err and "--hash-buckets" not in err
    assert not (tmp_path / "w" / "executions").exists()


def test_the_range_check_is_the_one_start_and_schedule_use() -> None:
    """The ranges live with the parameters' type checks (run, start, schedule), in words the Python API can show."""
    declared = [
        {"Name": "TrainingInstanceCount", "Type": "Integer", "DefaultValue": 2},
        {"Name": "ValidationFraction", "Type": "Float", "DefaultValue": 0.15},
        {"Name": "TestFraction", "Type": "Float", "DefaultValue": 0.15},
    ]
    assert check_overrides(declared, {"TestFraction": "0.5"}) == {"TestFraction": 0.5}
    with pytest.raises(ParameterError, match="parameter TrainingInstanceCount=-3: expected at least 1") as caught:
        check_overrides(declared, {"TrainingInstanceCount": "-3"})
    assert "--param" not in str(caught.value)


def test_instance_counts_fit_the_machine_s_memory() -> None:
    """Each local instance is a process of about 256 MiB: 1 GiB available holds 4 of either kind."""
    preflight._check_machine({"TrainingInstanceCount": 4, "ProcessingInstanceCount": 4}, memory=1 << 30)
    for name in preflight.INSTANCE_COUNTS:
        with pytest.raises(ParameterError, match=f"parameter {name}=5: .* 1.0 GiB is available: use at most 4 here"):
            preflight._check_machine({name: 5}, memory=1 << 30)


def test_more_instances_than_sharded_files_is_refused_before_any_instance_starts(tmp_path: Path) -> None:
    """Before: `linear-learner train --instance-count 5` on 2 shards started 5 instances, failed in one of them and
    left its blocks folder behind; now refused before anything starts."""
    files = [binary_csv(tmp_path / "data" / f"part-{part}.csv", rows=20, seed=part) for part in range(2)]
    channels = {"train": launcher.Channel(files=files, distribution="ShardedByS3Key", content_type="text/csv")}
    hyperparameters = {"predictor_type": "binary_classifier", "feature_dim": "3"}
    with pytest.raises(
        TrainingError,
        match=r"more instances \(5\) than shards \(2\) in channel 'train' .*: algo-3, algo-4, algo-5 would get no",
    ):
        launcher.train(hyperparameters, channels, tmp_path / "out", instance_count=5, work_dir=tmp_path / "work")
    assert not (tmp_path / "work").exists()
