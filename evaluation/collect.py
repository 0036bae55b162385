"""The test records' scores gathered chunk by chunk in bounded memory: kept in compact arrays up to
``MAX_EXACT_RECORDS`` (the report is then exact, as it always was), past that replayed into a fixed-size sketch
(``evaluation/sketch.py``) and dropped, so memory stops growing with the test split.

Per record below the cap: the label (float32, as RecordIO stores it), the score (float64, binary and regression
only: a multiclass report needs only the predicted class) and the predicted label (int8, or int32 past 127
classes): 13 B, 13 MB at the cap. Building the exact report then takes about 130 B per record for a moment (the
float64 copies the metrics use, the sort behind AUC and the curves, the bootstrap's weights), about 130 MB at the cap
(``benchmarks/evaluate_memory.py``: a binary Evaluate with the baseline peaked at 154 MB on 300,000 records, 217 MB
on 900,000, and 170 MB on 3 and 12 million, past the cap). The sketch's own arrays are fixed: about 9 MB for a
binary classifier with 30 bootstrap rounds (``sketch.HISTOGRAM_BINS``), rounds x classes² for a multiclass one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from containerlib.names import MULTICLASS_CLASSIFIER, REGRESSOR
from containerlib.predictions import PredictionsError, Scored, ScoredChunk
from evaluation.sketch import new_sketch

MAX_EXACT_RECORDS = 1_000_000


@dataclass(frozen=True)
class Collected:
    """What a report is built from: every record (``scored``), or past the cap the ``sketch`` of them."""

    scored: Scored | None
    sketch: Any  # ClassifierSketch or RegressionSketch when the records were too many to keep, else None
    item_count: int
    file_count: int
    score_kind: str
    classes: int  # 2 for binary, k for multiclass, 0 for regression
    exact_records_cap: int = MAX_EXACT_RECORDS  # past this many records the sketch was used


class Collector:
    """Takes :class:`ScoredChunk` s in record order; :meth:`finish` gives the :class:`Collected` records."""

    def __init__(
        self, predictor_type: str, kind: str, rounds: int, seed: int, max_exact: int = MAX_EXACT_RECORDS
    ) -> None:
        self.predictor_type, self.kind, self.rounds, self.seed = predictor_type, kind, rounds, seed
        self.max_exact = max_exact
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] = []
        self.count = 0
        self.classes = 0 if predictor_type == REGRESSOR else 2
        self.sketch: Any = None

    def add(self, chunk: ScoredChunk) -> None:
        labels, scores, predicted = chunk.labels, chunk.scores, chunk.predicted_labels
        if not len(labels):
            return
        if self.predictor_type == MULTICLASS_CLASSIFIER:
            self.classes = max(self.classes, scores.shape[1])
            scores = np.empty(0)  # the probabilities are not needed past the predicted class
        label_type = np.int8 if self.classes <= 127 else np.int32
        part = (
            np.asarray(labels, dtype=np.float32),
            np.asarray(scores, dtype=np.float64),
            None if predicted is None else np.asarray(predicted).astype(label_type),
        )
        if self.sketch is None and self.count + len(labels) > self.max_exact:
            self.sketch = new_sketch(self.predictor_type, self.classes, self.kind, self.rounds, self.seed)
            for stored in self.parts:
                self._sketch_add(*stored)
            self.parts = []
        if self.sketch is not None:
            self._sketch_add(*part)
        else:
            self.parts.append(part)
        self.count += len(labels)

    def _sketch_add(self, labels: np.ndarray, scores: np.ndarray, predicted: np.ndarray | None) -> None:
        if self.predictor_type == REGRESSOR:
            self.sketch.add(labels, scores)
        else:
            self.sketch.add(labels, scores, predicted)

    def finish(self, file_count: int) -> Collected:
        """The records gathered: exact (a :class:`Scored`) below the cap, else the sketch."""
        if self.sketch is not None:
            return Collected(None, self.sketch, self.count, file_count, self.kind, self.classes, self.max_exact)
        if not self.parts:
            raise PredictionsError("the test shards hold no records")
        parts, self.parts = self.parts, []
        labels = np.concatenate([part[0] for part in parts]).astype(np.float64)
        if self.predictor_type == MULTICLASS_CLASSIFIER:
            # the report reads only the class count from the scores: a view of that shape, no memory per record
            scores = np.broadcast_to(np.float64(np.nan), (len(labels), self.classes))
        else:
            scores = np.concatenate([part[1] for part in parts])
        predicted = None
        if self.predictor_type != REGRESSOR:
            predicted = np.concatenate([part[2] for part in parts]).astype(np.int64)  # type: ignore[misc]
        del parts
        scored = Scored(labels, scores, predicted, file_count, self.kind)
        return Collected(scored, None, self.count, file_count, self.kind, self.classes, self.max_exact)


def collect(
    chunks: Iterable[ScoredChunk],
    predictor_type: str,
    kind: str,
    file_count: int,
    rounds: int,
    seed: int,
    max_exact: int = MAX_EXACT_RECORDS,
) -> Collected:
    """Every chunk through a :class:`Collector`."""
    collector = Collector(predictor_type, kind, rounds, seed, max_exact)
    for chunk in chunks:
        collector.add(chunk)
    return collector.finish(file_count)
