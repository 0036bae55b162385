"""Convert CSV (optionally gzipped) or Parquet files to RecordIO-protobuf shards for Linear Learner.

Every column except --label-column is a feature, in the first file's column order; every file must have the same
columns. Values must be numbers: an empty, NaN, infinite or non-numeric value is an error naming the file, the data
row (counted from 1 after the header, blank CSV lines not counted) and the column. Rows are dealt round-robin to
--shards files named part-00000.pbr, ... (features and label as float32; --sparse writes sparse records holding the
non-zero features). Shards are built under a temporary name and renamed into --output only when all input
converted, so a failure leaves nothing behind.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    """Inputs, label column, output folder, shard count, dense or sparse records."""
    parser.add_argument("inputs", nargs="+", type=Path, metavar="INPUT", help="CSV, .csv.gz or Parquet file, or folder")
    parser.add_argument("--label-column", required=True, metavar="NAME", help="the column holding the label")
    parser.add_argument("--output", required=True, type=Path, metavar="DIR", help="folder receiving the shards")
    parser.add_argument("--shards", type=int, default=1, metavar="N", help="number of shard files (default 1)")
    parser.add_argument("--sparse", action="store_true", help="write sparse records (non-zero features only)")
    parser.add_argument("--overwrite", action="store_true", help="replace shards already in the output folder")


def run(args: argparse.Namespace) -> int:
    """Convert and print what was written; bad input raises ``ConvertError`` (one line, exit code 1)."""
    from pipeline.api.convert import convert

    conversion = convert(args.inputs, args.label_column, args.output, args.shards, args.sparse, args.overwrite)
    print(conversion.describe())
    return 0
