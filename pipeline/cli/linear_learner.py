"""Train or batch-transform with the local Linear Learner (SageMaker's container contract, several instances).

llpipe linear-learner train --train DIR [--validation DIR] [--test DIR] --hyperparameters JSON_OR_FILE
                            --output DIR [--instance-count N] [--content-type TYPE]
llpipe linear-learner transform --model model.tar.gz --input DIR --output DIR [--content-type TYPE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
from pathlib import Path

from pipeline.cli.render import safe_console
from pipeline.core.errors import TrainingError, UsageError
from pipeline.core.names import TRAINING_CONTENT_TYPES


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the ``train`` and ``transform`` sub-commands."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    train = sub.add_parser("train", help="train a model (one process per instance)")
    train.add_argument("--train", type=Path, required=True, help="folder of train files (ShardedByS3Key)")
    train.add_argument("--validation", type=Path, help="folder of validation files (FullyReplicated)")
    train.add_argument("--test", type=Path, help="folder of test files (FullyReplicated)")
    train.add_argument(
        "--hyperparameters",
        required=True,
        help='a JSON object (e.g. \'{"predictor_type": "binary_classifier"}\') or a JSON file',
    )
    train.add_argument(
        "--output", type=Path, required=True, help="folder for model.tar.gz, metrics.json and training.json"
    )
    train.add_argument("--instance-count", type=int, default=1, help="number of instances (default 1)")
    train.add_argument("--content-type", choices=TRAINING_CONTENT_TYPES, default=TRAINING_CONTENT_TYPES[0])
    train.add_argument(
        "--train-distribution",
        choices=("ShardedByS3Key", "FullyReplicated"),
        default="ShardedByS3Key",
        help="how train files are divided between instances",
    )
    train.add_argument("--work-dir", type=Path, help="keep the instances' /opt/ml roots here (default: temporary)")
    output = train.add_mutually_exclusive_group()
    output.add_argument("--verbose", action="store_true", help="stream every instance's log lines")
    output.add_argument("--quiet", action="store_true", help="print only the summary (no progress bar)")
    transform = sub.add_parser("transform", help="batch transform files with a model.tar.gz")
    transform.add_argument("--model", type=Path, required=True, help="the model.tar.gz artifact")
    transform.add_argument("--input", type=Path, required=True, help="folder (or one file) to score")
    transform.add_argument("--output", type=Path, required=True, help="folder for the <file>.out jsonlines")
    transform.add_argument("--content-type", choices=TRAINING_CONTENT_TYPES, default=TRAINING_CONTENT_TYPES[0])


def _hyperparameters(text: str) -> dict[str, str]:
    path = Path(text)
    if not text.lstrip().startswith("{") and path.is_dir():
        raise ValueError(f"--hyperparameters {text}: a folder; expected a JSON object or a JSON file of one")
    source = path.read_text() if not text.lstrip().startswith("{") and path.is_file() else text
    try:
        value = json.loads(source)
    except json.JSONDecodeError as error:
        kind = f"the file {text} is not JSON" if source is not text else f"{text!r} is neither JSON nor a file"
        raise ValueError(f"--hyperparameters: {kind} ({error}); expected a JSON object or a JSON file of one") from None
    if not isinstance(value, dict):
        raise ValueError("--hyperparameters must be a JSON object of name -> value")
    return {str(k): str(v) for k, v in value.items()}


def run(args: argparse.Namespace) -> int:
    """Run the chosen action; user errors are one line on stderr and exit code 2 (training failures 1)."""
    from pipeline.api.linear_learner import channels, train_linear_learner, transform_linear_learner

    try:
        if args.action == "transform":
            outputs = transform_linear_learner(args.model, args.input, args.output, content_type=args.content_type)
            print(f"wrote {len(outputs)} prediction file(s) to {args.output}")
            return 0
        hyperparameters = _hyperparameters(args.hyperparameters)
        inputs = channels(args.train, args.validation, args.test, args.content_type, args.train_distribution)
        progress = None if (args.verbose or args.quiet) else EpochProgress(args.instance_count)
        if progress is not None:
            on_log = progress.update
        else:
            on_log = None if args.quiet else (lambda line: print(line, flush=True))
        with progress or contextlib.nullcontext():
            result = train_linear_learner(
                hyperparameters,
                inputs,
                args.output,
                instance_count=args.instance_count,
                work_dir=args.work_dir,
                on_log=on_log,
            )
    except TrainingError as error:
        raise TrainingError(f"training failed: {error}") from None
    except (ValueError, OSError) as error:
        raise UsageError(str(error)) from None
    _print_summary(result.model_path, result.metrics)
    return 0


class EpochProgress:
    """A rich progress bar over epochs, driven by algo-1's ``#progress_metric`` and ``#quality_metric`` lines."""

    def __init__(self, instances: int) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn("[bold]training[/] on {task.fields[instances]} instance(s)"),
            BarColumn(),
            TextColumn("{task.percentage:>5.1f} % of epochs"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[loss]}"),
            transient=False,
        )
        self._task = self._progress.add_task("train", total=100.0, instances=instances, loss="")

    def __enter__(self) -> EpochProgress:
        self._progress.start()
        return self

    def __exit__(self, exc_type: object, *exc_info: object) -> None:
        if exc_type is None:  # finished (possibly stopped early): show the bar complete
            self._progress.update(self._task, completed=100.0)
        self._progress.stop()

    def update(self, line: str) -> None:
        """Advance on a log line of algo-1; other lines are ignored."""
        if "#progress_metric: host=algo-1, completed " in line:
            percent = float(line.split("completed ")[1].split(" %")[0])
            self._progress.update(self._task, completed=percent)
        elif "#quality_metric: host=algo-1" in line and " validation " in line:
            self._progress.update(self._task, loss="validation loss " + line.rsplit("=", 1)[1][:8])


def _print_summary(model_path: Path, metrics: dict[str, float]) -> None:
    from rich.table import Table

    table = Table(title="Linear Learner final metrics")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in sorted(metrics.items()):
        table.add_row(name, f"{value:.6g}")
    console = safe_console()
    console.print(table)
    console.print(f"model: {model_path}")
