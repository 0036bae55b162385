"""Benchmark: the local Linear Learner training 32 parallel models vs scikit-learn's SGDClassifier training one.

Both train a logistic-loss binary classifier on the same dense float32 data (default 1,000,000 x 100) for the same
number of epochs, in this run. Prints records/s of each and the time ratio (goal: 32 models in <= 2x the time
scikit-learn takes for one). The Linear Learner side is the in-process trainer of one instance (no data reading),
with the default mini_batch_size 1000 and num_models 32.

    python benchmarks/linear_learner.py [--rows 1000000] [--features 100] [--epochs 3] [--instances 1 2]
        [--shards 4] [--pipe-shuffle]

``--pipe-shuffle`` also trains each launcher count with the train channel in Pipe mode under a ShuffleConfig (its
shards dealt afresh every epoch, ``pipeline/linear_learner/dealt.py``) and prints its job time over the fixed deal's.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def make_data(rows: int, features: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Linearly separable-ish binary data with label noise."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, features), dtype=np.float32)
    X *= rng.uniform(0.5, 5.0, features).astype(np.float32)  # uneven scales, so normalisation matters
    w = rng.standard_normal(features).astype(np.float32)
    logits = (X / X.std(axis=0)) @ w / np.sqrt(features) * 3.0
    y = (rng.random(rows) < 1.0 / (1.0 + np.exp(-logits))).astype(np.float32)
    return X, y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--num-models", type=int, default=32)
    parser.add_argument("--mini-batch-size", type=int, default=1000)
    parser.add_argument(
        "--instances",
        type=int,
        nargs="*",
        default=[],
        help="also train through the launcher with these instance counts (RecordIO shards, one "
        "process per instance) and print their combined train throughput",
    )
    parser.add_argument("--shards", type=int, default=0, help="train shards for --instances (default: the most count)")
    parser.add_argument(
        "--pipe-shuffle", action="store_true", help="--instances: also with the shards dealt afresh every epoch"
    )
    args = parser.parse_args()

    from sklearn.linear_model import SGDClassifier
    from sklearn.metrics import roc_auc_score

    from pipeline.linear_learner.collective import LocalCollective
    from pipeline.linear_learner.final_metrics import evaluate
    from pipeline.linear_learner.hyperparameters import parse_hyperparameters
    from pipeline.linear_learner.trainer import Dataset, fit

    X, y = make_data(args.rows, args.features)
    holdout = slice(0, 50_000)
    print(f"data: {args.rows:,} x {args.features} float32, {args.epochs} epochs")

    hp = parse_hyperparameters(
        {
            "predictor_type": "binary_classifier",
            "num_models": str(args.num_models),
            "epochs": str(args.epochs),
            "mini_batch_size": str(args.mini_batch_size),
            "early_stopping_patience": str(args.epochs + 1),
            "binary_classifier_model_selection_criteria": "loss_function",
        }
    )
    started = time.perf_counter()
    result = fit(hp, Dataset(X, y), None, LocalCollective(), lambda line: None)
    ll_seconds = time.perf_counter() - started
    assert result.model is not None
    ll_auc = dict((key, value) for _, key, value in evaluate(hp, result.model, Dataset(X[holdout], y[holdout])))
    ll_auc = ll_auc["roc_auc_score"]

    sgd = SGDClassifier(loss="log_loss", max_iter=args.epochs, tol=None, random_state=0)
    started = time.perf_counter()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter reached without convergence is the point here
        sgd.fit(X, y)
    sk_seconds = time.perf_counter() - started
    sk_auc = roc_auc_score(y[holdout], sgd.decision_function(X[holdout]))

    records = args.rows * args.epochs
    print(
        f"linear learner ({args.num_models} models): {ll_seconds:8.2f} s  {records / ll_seconds:14,.0f} records/s  "
        f"({records * args.num_models / ll_seconds:,.0f} model-records/s)  holdout AUC {ll_auc:.4f}"
    )
    print(
        f"scikit-learn SGDClassifier (1 model): {sk_seconds:8.2f} s  {records / sk_seconds:14,.0f} records/s  "
        f"holdout AUC {sk_auc:.4f}"
    )
    ratio = ll_seconds / sk_seconds
    print(
        f"time ratio (linear learner {args.num_models} models / sklearn 1 model): {ratio:.2f}x "
        f"(goal <= 2x: {'met' if ratio <= 2.0 else 'not met'})"
    )
    if args.instances:
        launcher_throughput(
            X,
            y,
            args,
            hp_strings={
                "predictor_type": "binary_classifier",
                "num_models": str(args.num_models),
                "epochs": str(args.epochs),
                "mini_batch_size": str(args.mini_batch_size),
                "early_stopping_patience": str(args.epochs + 1),
            },
        )


def launcher_throughput(X: np.ndarray, y: np.ndarray, args: argparse.Namespace, hp_strings: dict[str, str]) -> None:
    """Train through the launcher (real processes, RecordIO shards, parameter server) for each instance count."""
    import tempfile
    from pathlib import Path

    from containerlib.recordio import write_dense
    from pipeline.linear_learner.launcher import Channel, train

    with tempfile.TemporaryDirectory(prefix="ll-bench-") as folder:
        shards = []
        for index, rows in enumerate(np.array_split(np.arange(len(y)), max(args.shards, max(args.instances)))):
            path = Path(folder) / f"train-{index}.pbr"
            with path.open("wb") as stream:
                write_dense(stream, X[rows], y[rows])
            shards.append(path)
        modes = {"fixed deal": Channel(shards, "ShardedByS3Key")}
        if args.pipe_shuffle:
            modes["dealt every epoch"] = Channel(shards, "ShardedByS3Key", input_mode="Pipe", shuffle_seed=1)
        for count in args.instances:
            times = {}
            for mode, channel in modes.items():
                started = time.perf_counter()
                result = train(hp_strings, {"train": channel}, Path(folder) / f"out-{count}", instance_count=count)
                times[mode] = time.perf_counter() - started
                print(
                    f"launcher, {count} instance(s), {mode}: job {times[mode]:.2f} s (with process start and "
                    f"reading), last epoch {result.metrics['train:throughput']:,.0f} records/s over all instances"
                )
            if len(times) > 1:
                print(f"launcher, {count} instance(s): dealt every epoch / fixed deal: "
                      f"{times['dealt every epoch'] / times['fixed deal']:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
