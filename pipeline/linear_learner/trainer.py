"""Training: scaler pass, ``num_models`` parallel linear models trained with one matrix product per mini-batch,
synchronous gradient aggregation across instances and early stopping; model selection and threshold calibration are
``selection.py``, the final metrics ``final_metrics.py``.

Several instances: every host trains on its own shard and, every step, the hosts' gradient sums (weighted by
their batch sizes) are added up and divided by the total record count, so N hosts with batch b behave like one host
with batch N * b. Uneven shards: a host whose shard is exhausted keeps joining each step with a zero gradient and
zero records until every host is done; the epoch ends when a step has no records anywhere.

All models share one parameter matrix ``P`` of shape (feature_dim + 1, num_models * K): rows are the feature weights
on the normalised scale plus the bias row, columns are model m's class k at ``m * K + k``. Dense data is centred
before the product, (X - mean) @ (W / scale): a column whose offset dwarfs its spread keeps its signal; sparse data
has the normalisation folded into the product, X @ (W / scale) - (mean / scale) @ W, so it stays sparse. The model
written is folded onto raw features in float64 (``selection.to_linear_model``), checked for what float32 scoring of
it loses.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import scipy.sparse as sp

from containerlib.linear_learner.model import LinearModel
from pipeline.linear_learner.hyperparameters import Hyperparameters
from pipeline.linear_learner.losses import (
    OBJECTIVE_NAMES,
    REGRESSION_DEGREE,
    LossParameters,
    binary_loss,
    regression_loss,
    softmax_loss,
)
from pipeline.linear_learner.selection import criteria_values, select_model, stops_on_binary_criteria
from pipeline.linear_learner.validation_losses import (
    evaluation_losses,
    sharded_evaluation_losses,
    validation_on_every_host,
)

SEED = 1234  # Linear Learner has no seed hyperparameter; a fixed seed makes runs reproducible
ADAM_EPSILON = 1e-8
# log10 ranges the parallel models' wd and l1 span when they are auto. wd acts like scikit-learn's 1 / (C * rows):
# the upper end reaches the strong regularisation a few thousand noisy rows need (C ~ 0.01 at 5,000 rows is 0.02)
AUTO_WD_RANGE = (-7.0, -1.0)
AUTO_L1_RANGE = (-7.0, -3.0)
# with learning_rate auto, the parallel models' rates cycle through these multiples of the base rate
AUTO_LR_STEPS = (1.0, 0.3)
# fewer updates per epoch than this (a few thousand rows at batch 1000 is four) and mini-batches shrink, so small
# tables get enough optimiser steps for early stopping and the learning-rate schedule to mean something
MIN_UPDATES_PER_EPOCH = 20
# with lr_scheduler_step and lr_scheduler_factor auto, a model's learning rate is multiplied by this after every
# epoch in which its validation loss (train loss without validation) did not improve by early_stopping_tolerance
AUTO_PLATEAU_FACTOR = 0.5


class Collective(Protocol):
    """What the trainer needs from the instance group (see ``collective.py``)."""

    rank: int
    size: int

    def allreduce(self, vector: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class Dataset:
    """A channel's records in memory: features (dense float32 ndarray or scipy CSR) and labels (float32)."""

    features: np.ndarray | sp.csr_matrix
    labels: np.ndarray

    @property
    def rows(self) -> int:
        return int(self.features.shape[0])

    @property
    def dim(self) -> int:
        return int(self.features.shape[1])

    def blocks(self, rng: np.random.Generator | None = None) -> Iterator[Dataset]:
        """In memory the whole channel is one block, in its order."""
        yield self

    def for_epoch(self, epoch: int) -> Dataset:
        """The same records every epoch."""
        return self

    def head(self, count: int) -> Dataset:
        return Dataset(self.features[:count], self.labels[:count])

    def label_histogram(self, classes: int) -> np.ndarray:
        return np.bincount(self.labels.astype(np.int64), minlength=classes)[:classes].astype(np.float64)


class Channel(Protocol):
    """Records the trainer reads block by block: a :class:`Dataset` in memory, or blocks on disk (``blocks.py``)."""

    @property
    def rows(self) -> int: ...

    @property
    def dim(self) -> int: ...

    def blocks(self, rng: np.random.Generator | None = None) -> Iterator[Dataset]:
        """Every record once, block by block; block order shuffled by ``rng`` when given, file order otherwise."""
        ...

    def head(self, count: int) -> Dataset:
        """The first ``count`` records in file order."""
        ...

    def for_epoch(self, epoch: int) -> Channel:
        """The records this host reads in ``epoch``: the same every epoch, except a Pipe-mode channel with a
        ShuffleConfig, whose objects are dealt afresh every epoch (``dealt.py``); epoch 0's before training."""
        ...

    def label_histogram(self, classes: int) -> np.ndarray:
        """Count of each label 0..classes-1 over the whole channel."""
        ...


@dataclass(frozen=True)
class Scaler:
    """Feature and label normalisation found by the scaler pass."""

    feature_mean: np.ndarray  # (d,) zeros when not unbiasing
    feature_scale: np.ndarray  # (d,) ones when not normalising
    label_mean: float = 0.0
    label_scale: float = 1.0
    constant: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # (d,) no spread in the sample


@dataclass(frozen=True)
class ModelSettings:
    """Per-model optimisation settings: model 0 uses the given values, the others neighbouring ones."""

    learning_rate: np.ndarray  # (M,)
    wd: np.ndarray
    l1: np.ndarray
    positive_weight: np.ndarray  # (M,) binary classifiers only; ones otherwise


@dataclass(frozen=True)
class FitResult:
    """The selected model (on algo-1 only; None elsewhere) and the final metrics keyed "<channel>:<name>"."""

    model: LinearModel | None
    metrics: dict[str, float]
    epochs: int
    epoch_times: tuple[EpochTime, ...] = ()


@dataclass(frozen=True)
class EpochTime:
    """One epoch on one host: its own records, wall time, and the part of it spent waiting for the other hosts."""

    epoch: int
    records: int
    seconds: float
    sync_seconds: float


Log = Callable[[str], None]


def model_settings(hp: Hyperparameters, positive_balance: float) -> ModelSettings:
    """Neighbouring settings around the given (or auto) learning rate, wd, l1 and positive weight.

    With learning_rate and wd auto, models 1.. form a grid: pairs of models share a wd of an even log grid over
    AUTO_WD_RANGE, one at the base learning rate and one at 0.3 times it (AUTO_LR_STEPS), so every strength is tried at
    a fast and at a careful rate (random pairs left the right strength at a rate that cannot converge)."""
    models = hp.num_models
    rng = np.random.default_rng(SEED)

    def around(name: str, base: float, auto_low: float, auto_high: float) -> np.ndarray:
        if name in hp.explicit:
            # within a factor of ~3 of the given value, drawn independently per setting; 0 stays 0
            values = base * 10.0 ** rng.uniform(-0.5, 0.5, models)
        else:
            values = 10.0 ** rng.uniform(auto_low, auto_high, models)
        values[0] = base
        return values

    learning_rate = around(
        "learning_rate", hp.learning_rate, math.log10(hp.learning_rate) - 1.0, math.log10(hp.learning_rate) + 0.3
    )
    wd = around("wd", hp.wd, *AUTO_WD_RANGE)
    rates = len(AUTO_LR_STEPS)
    if "learning_rate" not in hp.explicit and models > 2:
        learning_rate[1:] = hp.learning_rate * np.resize(AUTO_LR_STEPS, models - 1)
    if "wd" not in hp.explicit and models > 2:
        # an even log grid, not random draws, so the strongest and weakest strengths are always among the models
        strengths = 10.0 ** np.linspace(*AUTO_WD_RANGE, math.ceil((models - 1) / rates))
        wd[1:] = np.repeat(strengths, rates)[: models - 1]
    l1 = around("l1", hp.l1, *AUTO_L1_RANGE)
    if "l1" not in hp.explicit:
        l1[::2] = 0.0  # half of the auto models without l1
    weight = hp.positive_example_weight_mult
    if weight == "balanced":
        positive_weight = np.full(models, positive_balance)
    elif weight == "auto":
        positive_weight = np.where(np.arange(models) % 2 == 0, 1.0, positive_balance)
    else:
        positive_weight = np.full(models, float(weight))
    return ModelSettings(learning_rate, wd, l1, positive_weight)


class Optimizer:
    """adam, sgd (with momentum) or rmsprop on the whole parameter matrix, with wd, proximal l1 and lr schedule."""

    def __init__(
        self,
        hp: Hyperparameters,
        settings: ModelSettings,
        shape: tuple[int, int],
        classes: int,
    ) -> None:
        self.kind = hp.optimizer
        self.hp = hp
        self.classes = classes
        # both auto: no step schedule; each model's rate halves when its loss stops improving (see plateau)
        self.automatic = hp.use_lr_scheduler and not {"lr_scheduler_step", "lr_scheduler_factor"} & hp.explicit
        rows, _ = shape
        row_lr = np.ones(rows, dtype=np.float32)
        row_lr[-1] = hp.bias_lr_mult if hp.use_bias else 0.0
        row_wd = np.ones(rows, dtype=np.float32)
        row_wd[-1] = hp.bias_wd_mult
        self.row_lr = row_lr[:, None]
        self.column_lr = np.repeat(settings.learning_rate, classes).astype(np.float32)
        self.wd = (row_wd[:, None] * np.repeat(settings.wd, classes)[None, :]).astype(np.float32)
        l1 = np.repeat(settings.l1, classes)[None, :] * np.ones((rows, 1))
        l1[-1] = 0.0
        self.l1 = l1.astype(np.float32)
        self.has_l1 = bool(np.any(self.l1 > 0))
        self.has_wd = bool(np.any(self.wd > 0))
        self.first = np.zeros(shape, dtype=np.float32)
        self.second = np.zeros(shape, dtype=np.float32) if self.kind in ("adam", "rmsprop") else None
        self.steps = 0
        self._update_lr()

    def _update_lr(self) -> None:
        self.lr = (self.row_lr * self.column_lr[None, :]).astype(np.float32)

    def step(self, params: np.ndarray, gradient: np.ndarray) -> None:
        """One update of ``params`` in place from the mean gradient."""
        hp = self.hp
        self.steps += 1
        if self.has_wd:
            gradient = gradient + self.wd * params
        if self.kind == "adam":
            self.first *= hp.beta_1
            self.first += (1.0 - hp.beta_1) * gradient
            self.second *= hp.beta_2
            self.second += (1.0 - hp.beta_2) * gradient * gradient
            correction = math.sqrt(1.0 - hp.beta_2**self.steps) / (1.0 - hp.beta_1**self.steps)
            params -= (self.lr * np.float32(correction)) * self.first / (np.sqrt(self.second) + ADAM_EPSILON)
        elif self.kind == "rmsprop":
            self.second *= 0.9
            self.second += 0.1 * gradient * gradient
            params -= self.lr * gradient / (np.sqrt(self.second) + ADAM_EPSILON)
        else:  # sgd
            if hp.momentum > 0:
                self.first *= hp.momentum
                self.first -= self.lr * gradient
                params += self.first
            else:
                params -= self.lr * gradient
        if self.has_l1:
            shrink = self.lr * self.l1
            np.copyto(params, np.sign(params) * np.maximum(np.abs(params) - shrink, 0.0))
        if hp.use_lr_scheduler and not self.automatic and self.steps % hp.lr_scheduler_step == 0:
            self._decay(np.ones(len(self.column_lr), dtype=bool), hp.lr_scheduler_factor)

    def plateau(self, stalled: np.ndarray) -> None:
        """The automatic schedule: multiply the rate of every model in ``stalled`` (M,) by AUTO_PLATEAU_FACTOR."""
        if self.automatic and np.any(stalled):
            self._decay(np.repeat(stalled, self.classes), AUTO_PLATEAU_FACTOR)

    def _decay(self, columns: np.ndarray, factor: float) -> None:
        decayed = np.maximum(self.column_lr * np.float32(factor), np.float32(self.hp.lr_scheduler_minimum_lr))
        self.column_lr = np.where(columns, decayed, self.column_lr).astype(np.float32)
        self._update_lr()


def fit_scaler(hp: Hyperparameters, train: Channel, collective: Collective) -> tuple[Scaler, np.ndarray]:
    """Mean/std of features (and label for regression) over ``num_point_for_scaler`` records shared by all hosts.

    Only those records are read. The variance is the mean squared deviation from the hosts' common mean, summed in
    float64 once that mean is known (two exchanges): ``E[x^2] - mean^2`` cancelled to noise for a column such as
    1e8 + N(0, 1), whose spread then decided nothing. Also returns the label histogram of the whole train channel
    (class counts; for binary [negatives, positives]).
    """
    d = train.dim
    take = min(train.rows, math.ceil(hp.num_point_for_scaler / collective.size))
    head = train.head(take)
    sample = head.features
    labels = head.labels.astype(np.float64)
    if sp.issparse(sample):
        sums = np.asarray(sample.sum(axis=0), dtype=np.float64).ravel()
    else:
        sums = sample.sum(axis=0, dtype=np.float64)
    classes = hp.num_classes if hp.predictor_type == "multiclass_classifier" else 2
    histogram = np.zeros(classes)
    if hp.predictor_type != "regressor":
        histogram = train.label_histogram(classes)
    total = collective.allreduce(np.concatenate([[take, d], sums, [labels.sum()], histogram]))
    count = total[0]
    if total[1] != d * collective.size:
        raise ValueError("the instances' train shards have different feature counts")
    mean = total[2 : 2 + d] / count
    label_mean = total[2 + d] / count
    deviations = collective.allreduce(
        np.concatenate([_squared_deviations(sample, mean), [((labels - label_mean) ** 2).sum()]])
    )
    variance = deviations[:d] / count
    scale = np.sqrt(variance)
    constant = ~(scale >= 1e-12)
    scale[constant] = 1.0
    auto_unbias = hp.use_bias and hp.normalize_data and not sp.issparse(sample)
    unbias = hp.unbias_data if hp.unbias_data is not None else auto_unbias
    feature_mean = mean if unbias else np.zeros(d)
    feature_scale = scale if hp.normalize_data else np.ones(d)
    label_std = math.sqrt(max(deviations[d] / count, 0.0))
    scaler = Scaler(
        feature_mean=feature_mean,
        feature_scale=feature_scale,
        label_mean=label_mean if hp.unbias_label else 0.0,
        label_scale=label_std if hp.normalize_label and label_std > 1e-12 else 1.0,
        constant=constant,
    )
    return scaler, total[3 + d :]


def _squared_deviations(sample, mean: np.ndarray) -> np.ndarray:
    """Per column, the sum over the rows of (x - mean)^2 in float64 (a sparse column's absent entries are 0)."""
    if not sp.issparse(sample):
        return ((np.asarray(sample, dtype=np.float64) - mean) ** 2).sum(axis=0)
    entries = sample.tocoo()
    deviations = np.asarray(entries.data, dtype=np.float64) - mean[entries.col]
    present = np.bincount(entries.col, minlength=mean.size)
    return np.bincount(entries.col, weights=deviations**2, minlength=mean.size) + (sample.shape[0] - present) * mean**2


class ParallelModels:
    """The parameter matrix of all models and how to score a batch with it."""

    def __init__(self, hp: Hyperparameters, scaler: Scaler, dim: int) -> None:
        self.hp = hp
        self.classes = hp.num_classes if hp.predictor_type == "multiclass_classifier" else 1
        self.columns = hp.num_models * self.classes
        rng = np.random.default_rng(SEED)
        if hp.init_method == "uniform":
            weights = rng.uniform(-hp.init_scale, hp.init_scale, (dim, self.columns))
        else:
            weights = rng.normal(0.0, hp.init_sigma, (dim, self.columns))
        bias = np.full((1, self.columns), hp.init_bias if hp.use_bias else 0.0)
        # a column the scaler saw constant is all zeros once centred: its weight is never trained, so it starts at 0
        # rather than at a random value that folding onto raw features would multiply by the column's value
        if scaler.constant.size == dim:
            weights[scaler.constant & (scaler.feature_mean != 0)] = 0.0
        self.params = np.vstack([weights, bias]).astype(np.float32)
        self.inverse_scale = (1.0 / scaler.feature_scale).astype(np.float32)
        self.mean = scaler.feature_mean.astype(np.float32)
        self.centred = bool(np.any(self.mean))
        self.shift = (scaler.feature_mean / scaler.feature_scale).astype(np.float32)

    def _centred(self, features):
        """Dense features minus the scaler's mean, before any product: folded into the product instead, a column
        such as 1e8 + N(0, 1) left float32 rounding of 1e8-sized terms where its signal was; sparse ones as they
        are (a sparse channel has no mean shift unless ``unbias_data`` asks for it, then folded)."""
        if not self.centred or sp.issparse(features):
            return features
        return np.asarray(features, dtype=np.float32) - self.mean

    def score(self, features, params: np.ndarray | None = None) -> np.ndarray:
        """Every model's scores of a batch (float32), with ``params`` or the current parameters."""
        params = self.params if params is None else params
        weights = params[:-1] * self.inverse_scale[:, None]
        if self.centred and sp.issparse(features):
            return np.asarray(features @ weights, dtype=np.float32) + (params[-1] - self.shift @ params[:-1])
        return np.asarray(self._centred(features) @ weights, dtype=np.float32) + params[-1]

    def gradient(self, features, score_gradient: np.ndarray) -> np.ndarray:
        """Gradient of the summed loss with respect to ``params`` given d(loss)/d(scores)."""
        raw = self._centred(features).T @ score_gradient
        column_sums = score_gradient.sum(axis=0)
        weights_gradient = np.asarray(raw, dtype=np.float32) * self.inverse_scale[:, None]
        if self.centred and sp.issparse(features):
            weights_gradient -= np.outer(self.shift, column_sums)
        return np.vstack([weights_gradient, column_sums[None, :]])


class Objective:
    """The training loss for all models on a batch; returns per-model loss sums and the score gradient."""

    def __init__(self, hp: Hyperparameters, scaler: Scaler, settings: ModelSettings, class_weights: np.ndarray | None):
        self.hp = hp
        self.scaler = scaler
        scale = scaler.label_scale
        self.params = LossParameters(
            hp.loss,
            margin=hp.margin,
            insensitivity=hp.loss_insensitivity / scale,
            quantile=hp.quantile,
            huber_delta=hp.huber_delta / scale,
        )
        self.positive_weight = settings.positive_weight.astype(np.float32)
        self.weighted = bool(np.any(self.positive_weight != 1.0))
        self.class_weights = class_weights
        # losses are computed on the normalised label scale; this factor reports them on the raw scale
        self.report_factor = scale ** REGRESSION_DEGREE[hp.loss] if hp.predictor_type == "regressor" else 1.0
        self.name = OBJECTIVE_NAMES[hp.loss] + "_objective"

    def prepare_labels(self, labels: np.ndarray) -> np.ndarray:
        """Labels as the loss wants them: class ids, or a (n, 1) column (normalised for regression)."""
        if self.hp.predictor_type == "multiclass_classifier":
            return labels.astype(np.int64)
        column = labels.astype(np.float32)[:, None]
        if self.hp.predictor_type == "regressor":
            column = (column - np.float32(self.scaler.label_mean)) / np.float32(self.scaler.label_scale)
        return column

    def __call__(self, scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        predictor = self.hp.predictor_type
        if predictor == "binary_classifier":
            weights = 1.0 + (self.positive_weight[None, :] - 1.0) * labels if self.weighted else None
            return binary_loss(self.params, scores, labels, weights)
        if predictor == "multiclass_classifier":
            weights = self.class_weights[labels] if self.class_weights is not None else None
            return softmax_loss(scores, labels, self.hp.num_classes, weights)
        return regression_loss(self.params, scores, labels)


def _batches(
    data: Channel, batch_size: int, prepare: Callable[[np.ndarray], np.ndarray], rng: np.random.Generator | None = None
):
    """Mini-batches of ``batch_size`` records over the blocks (the last may be smaller); a batch spans two blocks
    only after a block whose size is not a multiple of the batch size, so every epoch has the same batches count."""
    carry = None
    for block in data.blocks(rng):
        features, labels = block.features, prepare(block.labels)
        if carry is not None:
            stack = sp.vstack if sp.issparse(features) else np.concatenate
            features, labels = stack([carry[0], features]), np.concatenate([carry[1], labels])
            carry = None
        rows = features.shape[0]
        whole = rows - rows % batch_size
        for start in range(0, whole, batch_size):
            yield features[start : start + batch_size], labels[start : start + batch_size]
        if whole < rows:
            carry = (features[whole:], labels[whole:])
    if carry is not None:
        yield carry


def fit(
    hp: Hyperparameters,
    train: Channel,
    validation: Channel | None,
    collective: Collective,
    log: Log,
    host: str = "algo-1",
    sharded_validation: bool = False,
) -> FitResult:
    """Train ``hp.num_models`` models on this host's shard with gradients summed over all hosts every step.

    ``sharded_validation``: every host holds its own share of the validation channel (ShardedByS3Key), and early
    stopping and model selection use the losses of all the shares together, as on one FullyReplicated channel.

    BLAS runs single-threaded: the per-batch products are small, and threads only add synchronisation cost
    (several times slower on a busy machine); parallelism comes from instances.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        return _fit(hp, train, validation, collective, log, host, sharded_validation)


def _fit(
    hp: Hyperparameters,
    train: Channel,
    validation: Channel | None,
    collective: Collective,
    log: Log,
    host: str,
    sharded_validation: bool = False,
) -> FitResult:
    scaler, histogram = fit_scaler(hp, train, collective)
    dim = train.dim
    positive_balance = histogram[0] / histogram[1] if hp.predictor_type == "binary_classifier" and histogram[1] else 1.0
    class_weights = None
    if hp.predictor_type == "multiclass_classifier" and hp.balance_multiclass_weights:
        present = np.maximum(histogram, 1.0)
        class_weights = (histogram.sum() / (hp.num_classes * present)).astype(np.float32)
    settings = model_settings(hp, positive_balance)
    total_rows = float(collective.allreduce(np.array([float(train.rows)]))[0])
    batch_size = effective_batch_size(hp.mini_batch_size, total_rows, collective.size)
    if batch_size < hp.mini_batch_size:
        log(
            f"{host}: {int(total_rows)} train records at mini_batch_size {hp.mini_batch_size} make fewer than "
            f"{MIN_UPDATES_PER_EPOCH} updates an epoch: training with mini-batches of {batch_size} per host"
        )
    shared_validation = validation_on_every_host(validation, collective)
    sharded_validation = sharded_validation and collective.size > 1
    if sharded_validation:
        shared_validation = False  # equal-sized shares are not the same records
    models = ParallelModels(hp, scaler, dim)
    objective = Objective(hp, scaler, settings, class_weights)
    optimizer = Optimizer(hp, settings, models.params.shape, models.classes)
    leader = collective.rank == 0
    best_params = models.params.copy()
    best_loss = np.full(hp.num_models, np.inf)
    stopping = EarlyStopping(hp.early_stopping_patience, hp.early_stopping_tolerance)
    last_epoch_loss = np.full(hp.num_models, np.nan)
    epochs_run = 0
    throughput = 0.0
    epoch_times: list[EpochTime] = []
    for epoch in range(hp.epochs):
        started = time.perf_counter()
        waited = _waited(collective)
        block_order = np.random.default_rng([SEED, collective.rank, epoch])
        loss_sums, records, local_records = _train_epoch(
            hp, models, objective, optimizer, train.for_epoch(epoch), block_order, collective, batch_size
        )
        elapsed = max(time.perf_counter() - started, 1e-9)
        sync = _waited(collective) - waited
        epoch_times.append(EpochTime(epoch, int(local_records), elapsed, sync))
        throughput = records / elapsed  # all hosts together
        epochs_run = epoch + 1
        last_epoch_loss = loss_sums / max(records, 1.0) * objective.report_factor
        log(f"#quality_metric: host={host}, epoch={epoch}, train {objective.name} <loss>={np.min(last_epoch_loss)}")
        log(f"#throughput_metric: host={host}, train throughput={local_records / elapsed:.2f} records/second")
        log(
            f"#scaling_metric: host={host}, epoch={epoch}, records={local_records}, seconds={elapsed:.4f}, "
            f"sync_seconds={sync:.4f}"
        )
        log(f"#progress_metric: host={host}, completed {100.0 * epochs_run / hp.epochs:.1f} % of epochs")
        shared_losses = None
        if shared_validation:  # every host scores its share of the validation chunks
            shared_losses = evaluation_losses(models, objective, validation, collective=collective)
        elif sharded_validation:  # every host scores its own share of the validation channel
            shared_losses = sharded_evaluation_losses(models, objective, validation, collective)
        stop = 0.0
        stalled = np.zeros(hp.num_models, dtype=bool)
        if leader:
            if validation is not None or shared_losses is not None:
                losses = (
                    shared_losses if shared_losses is not None else evaluation_losses(models, objective, validation)
                )
                log(f"#quality_metric: host={host}, epoch={epoch}, validation {objective.name} <loss>={np.min(losses)}")
            else:
                losses = last_epoch_loss
            losses = np.where(np.isfinite(losses), losses, np.inf)  # a diverged model never becomes the best
            # the early-stopping rule per model: a relative improvement of at most the tolerance is none
            stalled = np.isfinite(best_loss) & (best_loss - losses <= hp.early_stopping_tolerance * np.abs(best_loss))
            improved = np.repeat(losses < best_loss, models.classes)
            best_loss = np.minimum(losses, best_loss)
            best_params[:, improved] = models.params[:, improved]
            criteria, metric = objective.name, float(np.min(losses))
            if validation is not None and stops_on_binary_criteria(hp):
                # the documented rule: with a selection criterion given, early stopping follows it (higher is
                # better, so it is tracked negated)
                values = criteria_values(hp, models, models.params, validation)[1]
                criteria, metric = hp.selection_criteria, -float(np.max(values))
            log(f"#early_stopping_criteria_metric: host={host}, epoch={epoch}, criteria={criteria}, value={metric}")
            if stopping.should_stop(metric):
                log(f"Early stop condition met. Stopping training at epoch {epoch}.")
                stop = 1.0
        if collective.size > 1:  # algo-1 decides; everyone learns it in the same round
            decided = collective.allreduce(np.concatenate([[stop], stalled.astype(np.float64)]))
            stop, stalled = float(decided[0]), decided[1:]
        if stop:
            break
        if leader and optimizer.automatic and np.any(stalled):
            log(f"{host}: epoch {epoch}: learning rate halved for {int(np.sum(stalled))} model(s) whose loss stalled")
        optimizer.plateau(stalled > 0)
    if not leader:
        return FitResult(model=None, metrics={}, epochs=epochs_run, epoch_times=tuple(epoch_times))
    selection_data = validation if validation is not None else train
    model, index = select_model(hp, models, best_params, best_loss, selection_data, scaler)
    log(
        f"Selected model #{index} (learning_rate={settings.learning_rate[index]:.6g}, wd={settings.wd[index]:.6g}, "
        f"l1={settings.l1[index]:.6g}, positive_example_weight_mult={settings.positive_weight[index]:.6g})"
    )
    metrics = {"train:objective_loss": float(last_epoch_loss[index]), "train:throughput": throughput}
    return FitResult(model=model, metrics=metrics, epochs=epochs_run, epoch_times=tuple(epoch_times))


def _waited(collective: Collective) -> float:
    """Seconds the collective has waited for the other hosts so far (0 for one that does not count them)."""
    return float(getattr(collective, "wait_seconds", 0.0))


def effective_batch_size(mini_batch_size: int, total_rows: float, hosts: int) -> int:
    """Each host's mini-batch: ``mini_batch_size``, made smaller when the epoch would have fewer than
    ``MIN_UPDATES_PER_EPOCH`` synchronised updates (never below one record)."""
    per_host = total_rows / max(hosts, 1)
    return int(max(1, min(mini_batch_size, math.ceil(per_host / MIN_UPDATES_PER_EPOCH))))


class EarlyStopping:
    """Stop after ``patience`` epochs whose relative improvement of the metric (lower is better) is <= tolerance."""

    def __init__(self, patience: int, tolerance: float) -> None:
        self.patience = patience
        self.tolerance = tolerance
        self.best = math.inf
        self.epochs_without_improvement = 0

    def should_stop(self, metric: float) -> bool:
        """Record this epoch's metric; True when training should stop."""
        if math.isfinite(self.best) and (self.best - metric) / max(abs(self.best), 1e-12) <= self.tolerance:
            self.epochs_without_improvement += 1
        else:
            self.epochs_without_improvement = 0
        self.best = min(self.best, metric)
        return self.epochs_without_improvement >= self.patience


def _train_epoch(
    hp: Hyperparameters,
    models: ParallelModels,
    objective: Objective,
    optimizer: Optimizer,
    train: Channel,
    block_order: np.random.Generator,
    collective: Collective,
    batch_size: int,
) -> tuple[np.ndarray, float, int]:
    """One pass over this host's shard, one synchronised update per step; (loss sums, records, local records).

    Every host takes ceil(shard records / batch size) steps whatever its block order; a host that is done joins
    the remaining steps of the others with zero records, so all hosts take the same number of synchronised steps."""
    size = models.params.size
    loss_sums = np.zeros(hp.num_models)
    records_total = 0.0
    local_records = 0
    batches = _batches(train, batch_size, objective.prepare_labels, block_order)
    while True:
        batch = next(batches, None)
        if batch is None:
            # this shard is exhausted: contribute zero-weight gradients until every shard is
            vector = np.zeros(size + hp.num_models + 1)
        else:
            features, labels = batch
            batch_losses, score_gradient = objective(models.score(features), labels)
            gradient = models.gradient(features, score_gradient)
            vector = np.concatenate([gradient.ravel(), batch_losses, [features.shape[0]]])
            local_records += features.shape[0]
        total = collective.allreduce(vector)
        records = total[-1]
        if records == 0:
            return loss_sums, records_total, local_records
        records_total += records
        loss_sums += total[size : size + hp.num_models]
        mean_gradient = (total[:size] / records).astype(np.float32).reshape(models.params.shape)
        optimizer.step(models.params, mean_gradient)
