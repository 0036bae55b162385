"""The validation losses early stopping and model selection read: every model's mean loss on a channel, block by
block in bounded memory, shared between hosts when each holds the same records (FullyReplicated) or summed over
their shares when each holds its own (ShardedByS3Key)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from pipeline.linear_learner.trainer import Channel, Collective, Objective, ParallelModels

EVALUATION_CHUNK = 8192  # records scored at once


def evaluation_losses(
    models: ParallelModels,
    objective: Objective,
    data: Channel,
    params: np.ndarray | None = None,
    collective: Collective | None = None,
) -> np.ndarray:
    """Mean loss of every model on ``data`` (raw label scale), block by block and in chunks to bound memory.

    With ``collective`` (every host holds the same ``data``: a FullyReplicated channel), host r scores chunks r,
    r + n, ... only and the hosts exchange each block's chunk sums, each host's zeros in the others' places; zeros add
    exactly, so each host then adds the chunks in order to bit for bit the total one host computes alone, in about
    1/n of the time instead of the other hosts waiting for algo-1 every epoch. One exchange a block (every host
    holds the same blocks), so what is held is one block's sums, not one row of sums per chunk of the channel."""
    rank, size = (collective.rank, collective.size) if collective is not None else (0, 1)
    total = np.zeros(models.hp.num_models)
    chunk = 0
    for block in data.blocks():
        labels = None
        parts: list[np.ndarray] = []
        for start in range(0, block.rows, EVALUATION_CHUNK):
            sums = np.zeros(models.hp.num_models)
            if chunk % size == rank:
                if labels is None:
                    labels = objective.prepare_labels(block.labels)
                end = min(start + EVALUATION_CHUNK, block.rows)
                # float64 scores select the exact (uncapped) loss formulas
                scores = models.score(block.features[start:end], params).astype(np.float64)
                sums, _ = objective(scores, labels[start:end])
            parts.append(sums)
            chunk += 1
        if collective is not None and size > 1 and parts:
            parts = list(collective.allreduce(np.concatenate(parts)).reshape(len(parts), -1))
        for sums in parts:
            total += sums
    return total / max(data.rows, 1) * objective.report_factor


def sharded_evaluation_losses(
    models: ParallelModels, objective: Objective, data: Channel | None, collective: Collective
) -> np.ndarray:
    """Mean loss of every model over all hosts' shares of a sharded validation channel (raw label scale): each
    host scores its own share and the hosts add up the loss sums and record counts, so early stopping and model
    selection see every validation record, not only the leader's share (with two hosts and 60 validation rows,
    30 rows picked the best of 32 models and the regressors lost 5-6% RMSE to a converged ridge regression)."""
    local = np.zeros(models.hp.num_models + 1)
    if data is not None and data.rows:
        local[:-1] = evaluation_losses(models, objective, data) / objective.report_factor * data.rows
        local[-1] = data.rows
    total = collective.allreduce(local)
    return total[:-1] / max(total[-1], 1.0) * objective.report_factor


def validation_on_every_host(validation: Channel | None, collective: Collective) -> bool:
    """Whether every host holds the same validation records (a FullyReplicated channel read by every host), so
    they can share its scoring; one exchange at the start, and every host reaches the same answer."""
    if collective.size == 1:
        return False
    rows = float(validation.rows) if validation is not None else 0.0
    has, total, squares = collective.allreduce(np.array([float(validation is not None), rows, rows * rows]))
    return bool(has == collective.size and collective.size * squares == total * total)
