"""Row ids: which input row each test record (and so each prediction) came from, written by Preprocess beside each
test shard and read back by Evaluate and the Python API, never a feature.

A test shard ``test/F`` has its ids in ``summary/F.ids.jsonl``, one JSON object per record in the shard's order:
``{"id": "<IdColumn value>"}`` when the pipeline has an id column, else ``{"file": "<input file>", "row": N}`` (the
1-based data row of that file, blank lines not counted, as in error messages). They stay out of the test folder,
which batch transform and Evaluate read whole, and out of the records, which Linear Learner reads unchanged.

Two runs scored on the same test rows have the same :class:`RowsFingerprint`: the row count and the sum (mod 2**64)
of each id's 64-bit hash, which does not depend on the order of the rows or of the shards.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from containerlib.errors import InputError
from containerlib.stable_hash import stable_hash64

IDS_SUFFIX = ".ids.jsonl"


class RowIdsError(InputError):
    """A test shard's ids file does not line up with its records: the message names the file and the shard."""


def ids_file(summary_dir: Path, shard_name: str) -> Path:
    """Where the ids of test shard ``shard_name`` (its name relative to the test folder) are."""
    return summary_dir / (shard_name + IDS_SUFFIX)


def row_ids(values: Sequence[str] | None, file: str | None = None, rows: Sequence[int] = ()) -> list[str]:
    """One JSON line per row: the id column's ``values`` when given, else ``file`` and each of its data ``rows``."""
    if values is not None:
        return [json.dumps({"id": value}) for value in values]
    name = json.dumps(file)
    return [f'{{"file": {name}, "row": {row}}}' for row in rows]


@dataclass(frozen=True)
class RowIds:
    """The ids of some rows, kept as their values (the id column's) or as ``file`` and its data ``rows`` (a numpy
    integer array), made JSON lines (:func:`row_ids`) only as they are written, in the order written: a chunk's
    row numbers become one string in one join rather than a string per row."""

    values: Sequence[str] | None = None
    file: str | None = None
    rows: Any = ()

    def __len__(self) -> int:
        return len(self.values) if self.values is not None else len(self.rows)

    def lines(self, order: Any) -> str:
        """The ids at positions ``order`` (a numpy integer array) as :func:`row_ids`' lines, each ending in a
        newline."""
        if not len(order):
            return ""
        if self.values is not None:
            values = self.values
            return "\n".join(row_ids([values[index] for index in order.tolist()])) + "\n"
        prefix = f'{{"file": {json.dumps(self.file)}, "row": '
        return prefix + ("}\n" + prefix).join(map(str, self.rows[order].tolist())) + "}\n"


@dataclass
class RowsFingerprint:
    """An order-independent fingerprint of a set of row ids: how many, and the sum of their hashes mod 2**64."""

    count: int = 0
    total: int = 0

    def add(self, line: str) -> None:
        """One id, as its JSON line (:func:`row_ids`; surrounding white space ignored)."""
        self.count += 1
        self.total = (self.total + stable_hash64(line.strip())) & 0xFFFFFFFFFFFFFFFF

    def as_dict(self) -> dict[str, object]:
        return {"count": self.count, "fingerprint": f"{self.total:016x}"}


class RowIdReader:
    """The ids of the test shards' records, read in step with them: :meth:`take` gives the next ids of a shard."""

    def __init__(self, summary_dir: Path) -> None:
        self.summary_dir = summary_dir
        self.shard = ""
        self.lines: TextIO | None = None

    def take(self, shard: str, count: int) -> list[str]:
        """The next ``count`` ids (JSON lines) of test shard ``shard``; an ids file that ends early is an error
        naming it (records and ids must stay aligned)."""
        if shard != self.shard:
            self.close()
            self.shard, self.lines = shard, open(ids_file(self.summary_dir, shard), encoding="utf-8")  # noqa: SIM115
        assert self.lines is not None
        taken = [line.rstrip("\n") for line in itertools.islice(self.lines, count)]
        if len(taken) < count:
            raise RowIdsError(
                f"{ids_file(self.summary_dir, shard)} ends after fewer ids than test shard {shard} has records: "
                "the ids and the test shards must come from the same Preprocess run"
            )
        return taken

    def close(self) -> None:
        if self.lines is not None:
            self.lines.close()
            self.lines = None


def has_ids(summary_dir: Path | None, shard_names: Sequence[str]) -> bool:
    """Whether every one of the test shards has its ids file (Preprocess before row ids wrote none)."""
    return summary_dir is not None and all(ids_file(summary_dir, name).is_file() for name in shard_names)
