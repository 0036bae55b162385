"""Evaluate's predictions file: every test record's prediction with the id of its input row, and the fingerprint of
the test split's rows that tells whether two reports were scored on the same rows.

``predictions.jsonl`` (beside ``evaluation.json``): one JSON object per test record, in the test shards' order:
the row id (``id``, or ``file`` and ``row``: :mod:`containerlib.row_ids`), ``label`` (as Linear Learner saw it: a
class index, or the value), ``score`` (a list of class probabilities for multiclass) and ``predicted_label``
(classifiers). Written as the records stream through Evaluate, under a temporary name renamed when complete.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from containerlib.names import REGRESSOR
from containerlib.predictions import ScoredChunk
from containerlib.row_ids import RowIdReader, RowsFingerprint

PREDICTIONS_FILE = "predictions.jsonl"
TEST_ROWS = "test_rows"  # the report's section: {"count", "fingerprint", "ids"}


class PredictionsWithIds:
    """Writes each chunk's predictions with their row ids while Evaluate reads them, fingerprinting the ids."""

    def __init__(self, summary_dir: Path, output_dir: Path, predictor_type: str) -> None:
        self.ids = RowIdReader(summary_dir)
        self.predictor_type = predictor_type
        self.fingerprint = RowsFingerprint()
        self.kinds: set[str] = set()
        output_dir.mkdir(parents=True, exist_ok=True)
        self.target = output_dir / PREDICTIONS_FILE
        handle, temporary = tempfile.mkstemp(dir=output_dir, prefix=f".{PREDICTIONS_FILE}.", suffix=".tmp")
        self.temporary = Path(temporary)
        self.out = os.fdopen(handle, "w", encoding="utf-8")

    def through(self, chunks: Iterator[ScoredChunk]) -> Iterator[ScoredChunk]:
        """The chunks unchanged, each written out with its ids first."""
        try:
            for chunk in chunks:
                self._write(chunk)
                yield chunk
        except BaseException:
            self.discard()
            raise

    def _write(self, chunk: ScoredChunk) -> None:
        ids = self.ids.take(chunk.shard, len(chunk.labels))
        classifier = self.predictor_type != REGRESSOR
        labels = chunk.labels.astype(int).tolist() if classifier else chunk.labels.tolist()
        scores = chunk.scores.tolist()
        predicted: Sequence[Any] = [None] * len(ids) if chunk.predicted_labels is None else chunk.predicted_labels
        lines = []
        for index, row_id in enumerate(ids):
            self.fingerprint.add(row_id)
            fields: dict[str, Any] = {"label": labels[index], "score": scores[index]}
            if classifier:
                fields["predicted_label"] = int(predicted[index])
            # the id's own JSON object, the prediction's fields appended to it
            lines.append(row_id.rstrip()[:-1] + ", " + json.dumps(fields)[1:])
        self.kinds.add("id" if ids and ids[0].startswith('{"id"') else "file and row")
        self.out.write("\n".join(lines) + "\n")

    def finish(self) -> dict[str, Any]:
        """Renames the complete file into place; returns the report's ``test_rows`` section."""
        self.ids.close()
        self.out.close()
        os.chmod(self.temporary, 0o644)
        os.replace(self.temporary, self.target)
        return {**self.fingerprint.as_dict(), "ids": " / ".join(sorted(self.kinds)), "file": PREDICTIONS_FILE}

    def discard(self) -> None:
        self.ids.close()
        self.out.close()
        self.temporary.unlink(missing_ok=True)
