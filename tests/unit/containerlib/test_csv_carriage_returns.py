"""Carriage returns in CSV (issue 42's Tracebacks class: the pre-run scan's csv.reader raised ``_csv.Error``):
CR-only line endings and a bare CR inside an unquoted value are refused naming the file, the line and the way out;
CRLF endings and a CR inside a quoted value are CSV and read as such."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from containerlib.errors import TableError
from containerlib.tables.sample import csv_sample
from containerlib.tables.scan import count_rows
from pipeline.cli import main

ROWS = ["a,b,y", *(f"{index}.5,{index % 7},{index % 2}" for index in range(40))]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode())
    return path


@pytest.mark.parametrize("ending", ["\r", "\r\r"])
@pytest.mark.parametrize("trailing", [True, False])
def test_cr_only_line_endings_are_refused_naming_the_way_out(tmp_path: Path, ending: str, trailing: bool) -> None:
    path = write(tmp_path, "mac.csv", ending.join(ROWS) + (ending if trailing else ""))
    said = f"{path}: its lines end with a carriage return alone (CR, classic Mac OS line endings); save the file"
    with pytest.raises(TableError, match="^" + re.escape(said)):
        count_rows(path)
    with pytest.raises(TableError, match="classic Mac OS line endings"):
        csv_sample(path.read_bytes(), str(path), 10)


@pytest.mark.parametrize(("row", "line"), [(1, 2), (7, 8), (40, 41)])
def test_a_bare_cr_in_an_unquoted_value_names_its_line(tmp_path: Path, row: int, line: int) -> None:
    rows = list(ROWS)
    rows[row] = rows[row].replace(",", ",x\ry,", 1)
    path = write(tmp_path, "bare.csv", "\n".join(rows) + "\n")
    with pytest.raises(TableError, match=rf"bare\.csv: line {line} has a carriage return \(CR\) inside an unquoted"):
        count_rows(path)


@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_crlf_and_a_cr_inside_quotes_are_csv(tmp_path: Path, ending: str) -> None:
    rows = list(ROWS)
    rows[3] = '1.0,"x\ry",1'
    path = write(tmp_path, "ok.csv", ending.join(rows) + ending)
    assert count_rows(path) == len(ROWS) - 1
    header, frame = csv_sample(path.read_bytes(), "ok.csv", 100)
    assert header == ["a", "b", "y"] and frame["b"].iloc[2] == "x\ry"


def test_run_refuses_cr_only_data_before_anything_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "mac.csv", "\r".join(ROWS) + "\r")
    argv = ["run", "--data", str(path), "--label-column", "y", "--predictor-type", "binary_classifier"]
    code = main([*argv, "--workdir", str(tmp_path / "wd")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"llpipe run: {path}: its lines end with a carriage return alone")
    assert not (tmp_path / "wd" / "executions").exists() or not any((tmp_path / "wd" / "executions").iterdir())
