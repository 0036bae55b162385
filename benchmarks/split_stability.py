"""How many rows change split when only the encoding changes (issue 40): Preprocess run twice on one table, with
``--hash-buckets 16`` and ``64`` (and once more with a text column read as categorical), by this checkout and by
another (``--code DIR``, e.g. the main branch's worktree, the baseline measured in the same run). Rows are told
apart by a unique numeric column that is also a feature (its value is in every record), so the test split's row set
can be compared whatever the encoding.

    python benchmarks/split_stability.py [--code DIR] [--rows N] [--python PATH]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]

RUN = """
import sys, json
from pathlib import Path
from preprocessing.preprocess import main
from containerlib.recordio import read
out = Path(sys.argv[1])
code = main(["--input-dir", sys.argv[2], "--output-dir", str(out), "--resource-config", str(out / "none.json"),
             "--label-column", "label", "--predictor-type", "binary_classifier", *sys.argv[3:]])
assert code == 0
names = json.loads((out / "summary" / "summary.json").read_text())["feature_names"]
rows = {}
for split in ("train", "validation", "test"):
    for shard in sorted((out / split).iterdir()):
        with shard.open("rb") as handle:
            features, _ = read(handle)
        rows.update({int(value): split for value in features[:, names.index("row_number")]})
print(json.dumps(rows))
"""


def write_table(folder: Path, rows: int) -> None:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(40)
    education = rng.choice(["HS", "College", "Masters", "PhD", "None"], rows)
    hours = rng.normal(40, 8, rows).round(1)
    frame = pd.DataFrame(
        {
            "row_number": np.arange(rows),
            "education": education,
            "region": rng.choice(["north", "south", "east", "west"], rows),
            "size": rng.integers(1, 6, rows),
            "hours": hours,
            "label": ((education == "PhD") + 0.05 * hours + rng.normal(size=rows) > 2.5).astype(int),
        }
    )
    folder.mkdir(parents=True)
    frame.to_csv(folder / "table.csv", index=False)


def splits(python: str, code: Path, data: Path, out: Path, *arguments: str) -> dict[str, str]:
    result = subprocess.run(
        [python, "-c", RUN, str(out), str(data), *arguments], env={"PYTHONPATH": str(code)}, cwd=code,
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if result.returncode:
        raise SystemExit(result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=Path, help="another checkout to measure as the baseline")
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write_table(root / "data", args.rows)
        common = ["--categorical-columns", "education,region", "--missing", "zero"]
        print(f"Preprocess on {args.rows} rows; rows whose split differs from the run with --hash-buckets 16")
        for name, code in (("this checkout", REPOSITORY), ("baseline --code", args.code)):
            if code is None:
                continue
            first = splits(args.python, code, root / "data", root / f"{name}-16", *common, "--hash-buckets", "16")
            for label, extra in (
                ("--hash-buckets 64", [*common, "--hash-buckets", "64"]),
                ("size also categorical", ["--categorical-columns", "education,region,size", "--missing", "zero"]),
            ):
                other = splits(args.python, code, root / "data", root / f"{name}-{label}", *extra)
                moved = sum(first[row] != other[row] for row in first)
                tests = {row for row, split in first.items() if split == "test"}
                kept = sum(other[row] == "test" for row in tests)
                print(f"  {name:16s} {label:22s}: {moved:5d} of {len(first)} rows moved; {kept} of {len(tests)} "
                      "test rows stayed in test")  # fmt: skip


if __name__ == "__main__":
    main()
