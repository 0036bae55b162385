"""Every argument the commands share: the configuration flags, ``--param``, the schema inference bounds, counts.

The library (``pipeline.definition.config``, the API) takes plain values; turning flags into them happens here.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pipeline.core.errors import ConfigError, ParameterError
from pipeline.definition.config import (
    DEFAULT_BUCKET,
    DEFAULT_MODEL_PACKAGE_GROUP,
    DEFAULT_PIPELINE_NAME,
    DEFAULT_REGION,
    FIELDS,
    PipelineConfig,
    load_config,
)
from pipeline.definition.schema import DEFAULT_SAMPLE_BYTES, DEFAULT_SAMPLE_OBJECTS, DEFAULT_SAMPLE_ROWS
from pipeline.definition.tuning import DEFAULT_OBJECTIVE, STRATEGIES


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (counts, limits, sample sizes)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {value}")
    return value


def parse_overrides(pairs: Iterable[str]) -> dict[str, str]:
    """``--param`` values ``["A=1", "B=x=y"]`` -> ``{"A": "1", "B": "x=y"}``; an item without ``=`` or a repeated
    name is an error. The values are checked against the declared parameters later (``check_overrides``)."""
    overrides: dict[str, str] = {}
    for pair in pairs:
        name, separator, value = pair.partition("=")
        if not separator or not name.strip():
            raise ParameterError(f"--param expects Name=Value, got {pair!r}")
        if name.strip() in overrides:
            raise ParameterError(f"--param {name.strip()} given twice")
        overrides[name.strip()] = value
    return overrides


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """The configuration flags every SageMaker-facing command shares (flags beat environment and file)."""
    group = parser.add_argument_group("configuration (flags > environment > --config file > defaults)")
    group.add_argument("--config", type=Path, metavar="FILE", help="JSON or TOML file of settings")
    group.add_argument("--region", help=f"AWS region (env AWS_REGION; default {DEFAULT_REGION})")
    group.add_argument("--role-arn", help="pipeline execution role ARN (env SAGEMAKER_PIPELINE_ROLE_ARN)")
    group.add_argument("--bucket", help=f"S3 bucket for code and artifacts (env ARTIFACT_BUCKET; {DEFAULT_BUCKET})")
    group.add_argument("--pipeline-name", help=f"pipeline name (default {DEFAULT_PIPELINE_NAME})")
    group.add_argument("--model-package-group", help=f"model package group (default {DEFAULT_MODEL_PACKAGE_GROUP})")
    group.add_argument("--base-job-prefix", help="prefix of job names")
    group.add_argument("--kms-key-id", help="KMS key for job outputs and volumes (env LLPIPE_KMS_KEY_ID)")
    group.add_argument("--subnet", dest="subnets", action="append", metavar="SUBNET_ID", help="VPC subnet (repeat)")
    group.add_argument(
        "--security-group-id", dest="security_group_ids", action="append", metavar="SG_ID", help="VPC SG (repeat)"
    )
    group.add_argument(
        "--network-isolation",
        dest="enable_network_isolation",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="network isolation for the training job (default off)",
    )
    group.add_argument(
        "--encrypt-inter-container-traffic",
        dest="encrypt_inter_container_traffic",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="encrypt traffic between training instances (default on)",
    )
    group.add_argument("--tag", dest="tags", action="append", metavar="KEY=VALUE", help="resource tag (repeat)")
    tracking = parser.add_argument_group("MLflow tracking (a run per execution, a child run per step)")
    tracking.add_argument(
        "--tracking-uri",
        dest="mlflow_tracking_uri",
        metavar="URI",
        help="where local runs are logged (env MLFLOW_TRACKING_URI; default sqlite:///<workdir>/mlflow.db)",
    )
    tracking.add_argument(
        "--tracking",
        dest="mlflow_tracking",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="log executions to MLflow (default on; --no-tracking or LLPIPE_MLFLOW_TRACKING=false: off)",
    )
    tracking.add_argument(
        "--mlflow-arn", metavar="ARN", help="SageMaker MLflow tracking server or App ARN (env LLPIPE_MLFLOW_ARN)"
    )
    tracking.add_argument(
        "--mlflow-experiment", metavar="NAME", help="MLflow experiment of the executions (default: the pipeline name)"
    )
    tuning = parser.add_argument_group(
        "hyperparameter tuning (a build-time switch: a Tuning step trains the model, Train the untuned defaults)"
    )
    tuning.add_argument(
        "--tuning-max-jobs", type=int, metavar="N", help="tune with N training jobs (env LLPIPE_TUNING_MAX_JOBS; 0 off)"
    )
    tuning.add_argument("--tuning-max-parallel-jobs", type=int, metavar="N", help="training jobs at once (default 2)")
    tuning.add_argument(
        "--tuning-objective", metavar="METRIC", help=f"objective metric (default {DEFAULT_OBJECTIVE}, minimised)"
    )
    tuning.add_argument("--tuning-strategy", choices=STRATEGIES, help="search strategy (default Bayesian)")


def config_from_args(args: argparse.Namespace, env: Mapping[str, str] = os.environ) -> PipelineConfig:
    """Build the configuration from the flags :func:`add_config_arguments` declared."""
    overrides = {name: getattr(args, name, None) for name in FIELDS}
    if overrides.get("tags"):
        for tag in overrides["tags"]:
            if "=" not in tag:
                raise ConfigError(f"--tag {tag!r}: expected KEY=VALUE")
    return load_config(overrides, env=env, path=getattr(args, "config", None))


def add_inference_arguments(parser: argparse.ArgumentParser, s3: bool = False) -> None:
    """``--no-infer`` and the sample bounds (rows per file; for S3 input also objects and bytes per object)."""
    group = parser.add_argument_group("schema inference (feature order, text columns, label values)")
    group.add_argument("--no-infer", action="store_true", help="decide nothing before the run; no SchemaUrl passed")
    group.add_argument(
        "--sample-rows",
        type=positive_int,
        default=DEFAULT_SAMPLE_ROWS,
        metavar="N",
        help=f"rows read from the start of each sampled file ({DEFAULT_SAMPLE_ROWS})",
    )
    if s3:
        group.add_argument(
            "--sample-objects",
            type=positive_int,
            default=DEFAULT_SAMPLE_OBJECTS,
            metavar="N",
            help=f"objects under InputDataUrl sampled, the first in key order ({DEFAULT_SAMPLE_OBJECTS})",
        )
        group.add_argument(
            "--sample-bytes",
            type=positive_int,
            default=DEFAULT_SAMPLE_BYTES,
            metavar="N",
            help=f"bytes read from each sampled object at most ({DEFAULT_SAMPLE_BYTES})",
        )


def add_max_parallel_argument(parser: argparse.ArgumentParser) -> None:
    """``--max-parallel N``: ParallelismConfiguration of the execution (start and retry)."""
    parser.add_argument(
        "--max-parallel", type=positive_int, metavar="N", help="run at most N steps at once (ParallelismConfiguration)"
    )


class Once(argparse.Action):
    """An option that takes one value: given twice it is a usage error naming both values, where argparse would
    silently keep the last one (``--label-column a --label-column b`` trained on b; ``--data a --data b`` dropped a)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: Any = None):
        seen = getattr(namespace, f"_{self.dest}_given", None)
        if seen is not None:
            parser.error(
                f"{option} given twice ({seen} and {values}); it takes one value"
                + (": put the files in one folder and pass the folder" if self.dest == "data" else "")
            )
        setattr(namespace, f"_{self.dest}_given", values)
        setattr(namespace, self.dest, values)


def refuse_local_execution(execution: str, command: str, workdir: Path | None = None) -> None:
    """``retry``/``stop`` act on SageMaker; an id of the local work dir's executions gets a word on what to do
    instead (once only "no AWS credentials")."""
    from pipeline.api._shared import DEFAULT_WORKDIR
    from pipeline.core.errors import UsageError

    folder = Path(workdir or DEFAULT_WORKDIR) / "executions" / execution
    if execution.startswith("arn:") or not (folder / "execution.json").is_file():
        return
    instead = _local_instead(command)
    raise UsageError(
        f"{execution} is a local execution (in {folder.parent.parent}); `llpipe {command}` acts on SageMaker "
        f"executions: {instead}"
    )


def _local_instead(command: str) -> str:
    return (
        "run it again with `llpipe run` (steps whose inputs did not change come from the cache)"
        if command == "retry"
        else "stop it with Ctrl-C, or SIGTERM to its `llpipe run` process"
    )


@contextmanager
def hint_local_execution(execution: str, command: str) -> Iterator[None]:
    """An id that is not of the default work dir may still be a local one (``llpipe run --workdir``): when the
    SageMaker call cannot even start for want of credentials, the error says what to do with a local execution
    (once it said only "no AWS credentials")."""
    from pipeline.core.errors import MissingCredentialsError

    try:
        yield
    except MissingCredentialsError as error:
        if execution.startswith("arn:"):
            raise
        raise MissingCredentialsError(
            f"{error.template}. `llpipe {command}` acts on SageMaker executions; if {execution} is a local one "
            f"(`llpipe run`), {_local_instead(command)}"
        ) from None


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0 to 65535 (0: any free one); anything else is a usage error naming it."""
    value = int(text) if text.isdigit() else -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port, 0 to 65535 (0: any free one), got {text!r}")
    return value
