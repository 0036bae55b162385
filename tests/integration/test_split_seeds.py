"""SplitSeed takes any 64-bit integer, negative ones too (SageMaker's Integer parameter does): Preprocess seeds its
generators with the seed's unsigned bits instead of failing with "unexpected ValueError"; a seed past 64 bits is
refused before anything runs (the parameter table's range) and by the job itself, naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from containerlib.recordio import read_file
from pipeline.core.errors import ParameterError
from pipeline.definition.parameters import check_ranges
from preprocessing.preprocess import main
from preprocessing.summary import load_summary

ROWS = "a,b,label\n" + "".join(f"{i},{(i * 7) % 13},{i % 2}\n" for i in range(60))
BINARY = ["--label-column", "label", "--predictor-type", "binary_classifier"]


def _preprocess(folder: Path, seed: int) -> tuple[int, Path]:
    (folder / "in").mkdir(parents=True, exist_ok=True)
    (folder / "in" / "rows.csv").write_text(ROWS)
    config = folder / "resourceconfig.json"
    config.write_text(json.dumps({"current_host": "algo-1", "hosts": ["algo-1"], "network_interface_name": "eth0"}))
    output = folder / f"out-{seed}"
    arguments = ["--input-dir", folder / "in", "--output-dir", output, "--resource-config", config, *BINARY]
    return main([*map(str, arguments), "--seed", str(seed), "--train-shards", "2"]), output


def _train_labels(output: Path) -> list[float]:
    labels = []
    for shard in sorted((output / "train").glob("*.pbr")):
        labels += [float(label) for label in read_file(shard)[1]]
    return labels


@pytest.mark.parametrize("seed", [-1, -12345, -(2**63), 2**63 - 1])
def test_any_64_bit_seed_splits_and_shuffles_reproducibly(tmp_path: Path, seed: int) -> None:
    code, first = _preprocess(tmp_path / "one", seed)
    assert code == 0
    code, again = _preprocess(tmp_path / "two", seed)
    assert code == 0
    assert load_summary(first / "summary")["rows"] == load_summary(again / "summary")["rows"]
    assert _train_labels(first) == _train_labels(again)
    assert sum(load_summary(first / "summary")["rows"].values()) == 60


@pytest.mark.parametrize("seed", [2**63, -(2**63) - 1, 10**20])
def test_a_seed_past_64_bits_is_refused_naming_it(
    tmp_path: Path, seed: int, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ParameterError, match=rf"SplitSeed={seed}: expected at least -9,223,372,036,854,775,808"):
        check_ranges({"SplitSeed": seed}, {})
    code, output = _preprocess(tmp_path, seed)
    error = capsys.readouterr().err
    assert code == 1 and "unexpected" not in error
    assert f"--seed (pipeline parameter SplitSeed) {seed} is outside a 64-bit integer's range" in error
    assert not output.exists()
