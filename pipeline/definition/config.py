"""Pipeline configuration: AWS region, role, bucket, names, images and security options.

Precedence, highest first: command-line flags (``overrides``), environment variables, a config file, defaults.
The defaults need no AWS account at all, so local runs and ``llpipe definition`` work anywhere:
region ``us-east-1``, the placeholder role ``arn:aws:iam::111122223333:role/llpipe-local`` (111122223333 is the
account id AWS documentation reserves for examples) and bucket ``llpipe-local``. Deploy with real values.

Environment variables read (the ones CodeBuild and SageMaker Projects set):
``AWS_REGION`` / ``AWS_DEFAULT_REGION`` -> region, ``SAGEMAKER_PIPELINE_ROLE_ARN`` -> role_arn,
``ARTIFACT_BUCKET`` -> bucket, ``SAGEMAKER_PROJECT_NAME`` / ``SAGEMAKER_PROJECT_ID`` -> project tags and, when both are
set, the pipeline and model package group names ``<project-name>-<project-id>`` (the Projects templates' convention);
``LLPIPE_KMS_KEY_ID`` -> kms_key_id (infra/pipeline.yaml passes its KmsKeyArn to CodeBuild so);
``LLPIPE_TUNING_MAX_JOBS``, ``LLPIPE_TUNING_MAX_PARALLEL_JOBS``, ``LLPIPE_TUNING_OBJECTIVE``, ``LLPIPE_TUNING_STRATEGY``
-> the tuning settings (``tuning_max_jobs`` > 0 builds a Tuning step in place of Train; see definition/tuning.py);
``MLFLOW_TRACKING_URI`` -> mlflow_tracking_uri, ``LLPIPE_MLFLOW_TRACKING`` (false: off) -> mlflow_tracking,
``LLPIPE_MLFLOW_ARN`` -> mlflow_arn, ``LLPIPE_MLFLOW_EXPERIMENT`` / ``MLFLOW_EXPERIMENT_NAME`` -> mlflow_experiment.

``llpipe deploy`` reads ``staging_instance_type`` / ``staging_instance_count``, ``prod_instance_type`` /
``prod_instance_count`` (each stage's endpoint instances) and ``data_capture_percentage`` (0 to 100; 0: no capture),
from the config file or its own flags.

Config file: JSON (``.json``) or TOML (``.toml``, Python >= 3.11), a flat table whose keys are the field names of
:class:`PipelineConfig`, e.g. ``{"bucket": "my-bucket", "subnets": ["subnet-0abc"], "tags": {"team": "ml"}}``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.errors import ARGUMENTS, ConfigError, opt
from pipeline.core.images import DEFAULT_PROCESSING_IMAGE
from pipeline.definition.tuning import (
    DEFAULT_OBJECTIVE,
    MAX_PARALLEL_TRAINING_JOBS,
    MAX_TRAINING_JOBS,
    OBJECTIVES,
    STRATEGIES,
)

DEFAULT_REGION = "us-east-1"
DEFAULT_ROLE_ARN = "arn:aws:iam::111122223333:role/llpipe-local"
DEFAULT_BUCKET = "llpipe-local"
DEFAULT_PIPELINE_NAME = "linear-learner-pipeline"
DEFAULT_MODEL_PACKAGE_GROUP = "linear-learner-models"

_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$")
_ROLE_ARN = re.compile(r"^arn:aws[a-z\-]*:iam::\d{12}:role/?[a-zA-Z_0-9+=,.@\-_/]+$")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")
_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,255}$")  # SageMaker pipeline / entity names
_SUBNET = re.compile(r"^subnet-[0-9a-z]+$")
_SECURITY_GROUP = re.compile(r"^sg-[0-9a-z]+$")
_VERSION = re.compile(r"^[0-9][0-9A-Za-z.\-]*$")
_INSTANCE_TYPE = re.compile(r"^ml\.[a-z0-9]+\.[a-z0-9]+$")
_MLFLOW_ARN = re.compile(
    r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]+:\d{12}:(mlflow-tracking-server|mlflow-app)/[A-Za-z0-9\-]+$"
)
_DEPLOY_COUNTS = ("staging_instance_count", "prod_instance_count", "data_capture_percentage")


@dataclass(frozen=True)
class PipelineConfig:
    """Everything the pipeline definition and the SageMaker commands depend on besides pipeline parameters."""

    region: str = DEFAULT_REGION
    role_arn: str = DEFAULT_ROLE_ARN
    bucket: str = DEFAULT_BUCKET
    pipeline_name: str = DEFAULT_PIPELINE_NAME
    model_package_group: str = DEFAULT_MODEL_PACKAGE_GROUP
    base_job_prefix: str = "llpipe"
    sklearn_image_version: str = DEFAULT_PROCESSING_IMAGE.version  # pipeline.core.images: its Python and libraries
    linear_learner_image_version: str = "1"
    kms_key_id: str | None = None
    subnets: tuple[str, ...] = ()
    security_group_ids: tuple[str, ...] = ()
    enable_network_isolation: bool = False
    encrypt_inter_container_traffic: bool = True
    tags: tuple[tuple[str, str], ...] = ()
    project_name: str | None = None
    project_id: str | None = None
    tuning_max_jobs: int = 0  # 0: train once with the parameters; N > 0: a Tuning step of N training jobs
    tuning_max_parallel_jobs: int = 2
    tuning_objective: str = DEFAULT_OBJECTIVE
    tuning_strategy: str = "Bayesian"
    # llpipe deploy: each stage's endpoint instances, and the share of requests its data capture keeps (0: none)
    staging_instance_type: str = "ml.m5.large"
    staging_instance_count: int = 1
    prod_instance_type: str = "ml.m5.large"
    prod_instance_count: int = 2  # two instances: SageMaker spreads them over Availability Zones
    data_capture_percentage: int = 20  # the SDK's DataCaptureConfig default
    # MLflow (pipeline.api.tracking): local runs log to mlflow_tracking_uri (default sqlite:///<workdir>/mlflow.db)
    # unless mlflow_tracking is off; on SageMaker the tracking server or App ARN, and the experiment (default: the
    # pipeline's name) that each execution's run lands in
    mlflow_tracking: bool = True
    mlflow_tracking_uri: str | None = None
    mlflow_arn: str | None = None
    mlflow_experiment: str | None = None

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def experiment_name(self) -> str:
        """The MLflow experiment executions land in: ``mlflow_experiment``, else the pipeline's name."""
        return self.mlflow_experiment or self.pipeline_name

    @property
    def pipeline_prefix(self) -> str:
        """``s3://<bucket>/<pipeline-name>``: everything this pipeline writes lives under it."""
        return f"s3://{self.bucket}/{self.pipeline_name}"

    @property
    def all_tags(self) -> list[dict[str, str]]:
        """Tags for the pipeline and its jobs: the configured ones plus the SageMaker Projects tags, sorted."""
        tags = dict(self.tags)
        if self.project_name:
            tags.setdefault("sagemaker:project-name", self.project_name)
        if self.project_id:
            tags.setdefault("sagemaker:project-id", self.project_id)
        return [{"Key": key, "Value": value} for key, value in sorted(tags.items())]


FIELDS = {f.name: f for f in dataclasses.fields(PipelineConfig)}


def load_config(
    overrides: Mapping[str, Any] = {},  # noqa: B006 - read only
    env: Mapping[str, str] = os.environ,
    path: Path | None = None,
) -> PipelineConfig:
    """Merge defaults < config file < environment < overrides (None values ignored) into a validated config."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}

    def merge(layer: Mapping[str, Any], source: str) -> None:
        for key, value in layer.items():
            if value is None:
                continue
            if key not in FIELDS:
                raise ConfigError(f"{source}: unknown setting {key!r}; expected one of {', '.join(sorted(FIELDS))}")
            values[key] = value
            sources[key] = source

    if path is not None:
        merge(read_config_file(Path(path)), f"config file {path}")
    merge(_from_environment(env), "environment")
    merge(overrides, opt(ARGUMENTS))

    project_name, project_id = values.get("project_name"), values.get("project_id")
    if project_name and project_id:
        for key in ("pipeline_name", "model_package_group"):
            if key not in values:
                values[key] = f"{project_name}-{project_id}"
                sources[key] = "environment (SAGEMAKER_PROJECT_NAME-SAGEMAKER_PROJECT_ID)"

    coerced = {key: _coerce(key, value, sources[key]) for key, value in values.items()}
    try:
        return PipelineConfig(**coerced)
    except ConfigError as error:
        setting = str(error).split(":", 1)[0]
        raise ConfigError(f"{error.template} (from {sources.get(setting, 'defaults')})") from None


def read_config_file(path: Path) -> dict[str, Any]:
    """Read a JSON or TOML config file into a flat mapping, with an error naming the file when it is unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"config file {path}: cannot read it ({error.strerror})") from None
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"config file {path}: not UTF-8 text (byte 0x{error.object[error.start]:02x} at offset {error.start}); "
            "save it as UTF-8"
        ) from None
    suffix = path.suffix.lower()
    try:
        if suffix == ".json":
            data = json.loads(text)
        elif suffix == ".toml":
            try:
                import tomllib
            except ImportError:  # Python 3.10
                raise ConfigError(f"config file {path}: TOML needs Python >= 3.11; use a .json file") from None
            data = tomllib.loads(text)
        else:
            raise ConfigError(f"config file {path}: expected a .json or .toml file")
    except (json.JSONDecodeError, ValueError) as error:
        if isinstance(error, ConfigError):
            raise
        raise ConfigError(f"config file {path}: not valid {suffix[1:].upper()}: {error}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: expected a table of settings at the top level")
    return data


def _from_environment(env: Mapping[str, str]) -> dict[str, Any]:
    """The settings CodeBuild / SageMaker Projects pass as environment variables (empty values ignored)."""
    names = {
        "region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
        "role_arn": ("SAGEMAKER_PIPELINE_ROLE_ARN",),
        "bucket": ("ARTIFACT_BUCKET",),
        "project_name": ("SAGEMAKER_PROJECT_NAME",),
        "project_id": ("SAGEMAKER_PROJECT_ID",),
        "kms_key_id": ("LLPIPE_KMS_KEY_ID",),
        "tuning_max_jobs": ("LLPIPE_TUNING_MAX_JOBS",),
        "tuning_max_parallel_jobs": ("LLPIPE_TUNING_MAX_PARALLEL_JOBS",),
        "tuning_objective": ("LLPIPE_TUNING_OBJECTIVE",),
        "tuning_strategy": ("LLPIPE_TUNING_STRATEGY",),
        "mlflow_tracking": ("LLPIPE_MLFLOW_TRACKING",),
        "mlflow_tracking_uri": ("MLFLOW_TRACKING_URI",),
        "mlflow_arn": ("LLPIPE_MLFLOW_ARN",),
        "mlflow_experiment": ("LLPIPE_MLFLOW_EXPERIMENT", "MLFLOW_EXPERIMENT_NAME"),
    }
    found: dict[str, Any] = {}
    for key, variables in names.items():
        for variable in variables:
            if env.get(variable):
                found[key] = env[variable]
                break
    return found


def _coerce(key: str, value: Any, source: str) -> Any:
    """Turn file/flag values into the field's type: lists -> tuples, tag mappings or KEY=VALUE -> pairs."""
    where = f"{key} (from {source})"
    if key in ("subnets", "security_group_ids"):
        if isinstance(value, str):
            value = [part for part in value.split(",") if part]
        if not isinstance(value, Iterable) or not all(isinstance(item, str) for item in value):
            raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
        return tuple(value)
    if key == "tags":
        return tuple(_tag_pairs(value, where))
    if key in ("enable_network_isolation", "encrypt_inter_container_traffic", "mlflow_tracking"):
        if isinstance(value, str) and value.lower() in ("true", "1", "yes", "false", "0", "no"):
            return value.lower() in ("true", "1", "yes")
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    if key in ("tuning_max_jobs", "tuning_max_parallel_jobs", *_DEPLOY_COUNTS):
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected a whole number, got {value!r}")
        return value
    if not isinstance(value, str):
        raise ConfigError(f"{where}: expected a string, got {value!r}")
    return value


def _tag_pairs(value: Any, where: str) -> list[tuple[str, str]]:
    """Tags given as a mapping, a list of KEY=VALUE strings or a list of {"Key", "Value"} objects."""
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, (list, tuple)):
        items = []
        for item in value:
            if isinstance(item, str) and "=" in item:
                items.append(tuple(item.split("=", 1)))
            elif isinstance(item, Mapping) and set(item) == {"Key", "Value"}:
                items.append((item["Key"], item["Value"]))
            elif isinstance(item, (list, tuple)) and len(item) == 2:
                items.append(tuple(item))
            else:
                raise ConfigError(f"{where}: expected KEY=VALUE tags, got {item!r}")
    else:
        raise ConfigError(f"{where}: expected a table of tags or a list of KEY=VALUE, got {value!r}")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in items):
        raise ConfigError(f"{where}: tag keys and values must be strings, got {items!r}")
    return sorted(items)


def _validate(config: PipelineConfig) -> None:
    """Check every field against the rules AWS applies, so errors surface before any deploy."""

    def check(ok: bool, name: str, value: Any, expected: str) -> None:
        if not ok:
            raise ConfigError(f"{name}: {value!r} is not valid; expected {expected}")

    check(bool(_REGION.match(config.region)), "region", config.region, "an AWS region such as us-east-1")
    check(
        bool(_ROLE_ARN.match(config.role_arn)),
        "role_arn",
        config.role_arn,
        "a full IAM role ARN such as arn:aws:iam::123456789012:role/MyPipelineRole",
    )
    check(
        bool(_BUCKET.match(config.bucket)) and ".." not in config.bucket,
        "bucket",
        config.bucket,
        "an S3 bucket name: 3-63 lowercase letters, digits, dots or hyphens (no s3:// prefix)",
    )
    check(
        bool(_NAME.match(config.pipeline_name)),
        "pipeline_name",
        config.pipeline_name,
        "letters, digits and single hyphens, 1-256 characters",
    )
    check(
        bool(_NAME.match(config.model_package_group)) and len(config.model_package_group) <= 63,
        "model_package_group",
        config.model_package_group,
        "letters, digits and single hyphens, 1-63 characters",
    )
    check(
        bool(_NAME.match(config.base_job_prefix)) and len(config.base_job_prefix) <= 32,
        "base_job_prefix",
        config.base_job_prefix,
        "letters, digits and single hyphens, 1-32 characters",
    )
    for name in ("sklearn_image_version", "linear_learner_image_version"):
        value = getattr(config, name)
        check(bool(_VERSION.match(value)), name, value, "an image version such as 1.2-1")
    if config.kms_key_id is not None:
        check(
            bool(config.kms_key_id.strip()) and len(config.kms_key_id) <= 2048,
            "kms_key_id",
            config.kms_key_id,
            "a KMS key id, key ARN, alias name or alias ARN",
        )
    for subnet in config.subnets:
        check(bool(_SUBNET.match(subnet)), "subnets", subnet, "subnet ids such as subnet-0abc1234")
    for group in config.security_group_ids:
        check(bool(_SECURITY_GROUP.match(group)), "security_group_ids", group, "ids such as sg-0abc1234")
    check(
        bool(config.subnets) == bool(config.security_group_ids),
        "subnets",
        list(config.subnets),
        "subnets and security_group_ids given together (a VPC needs both) or neither",
    )
    check(len(config.subnets) <= 16, "subnets", list(config.subnets), "at most 16 subnets")
    check(len(config.security_group_ids) <= 5, "security_group_ids", list(config.security_group_ids), "at most 5")
    for key, value in config.tags:
        check(
            0 < len(key) <= 128 and not key.lower().startswith("aws:"),
            "tags",
            key,
            "tag keys of 1-128 characters, not starting with aws:",
        )
        check(len(value) <= 256, "tags", value, "tag values of at most 256 characters")
    check(len(config.all_tags) <= 50, "tags", len(config.all_tags), "at most 50 tags")
    check(
        0 <= config.tuning_max_jobs <= MAX_TRAINING_JOBS,
        "tuning_max_jobs",
        config.tuning_max_jobs,
        f"0 (no tuning) up to {MAX_TRAINING_JOBS} training jobs",
    )
    check(
        1 <= config.tuning_max_parallel_jobs <= MAX_PARALLEL_TRAINING_JOBS,
        "tuning_max_parallel_jobs",
        config.tuning_max_parallel_jobs,
        f"1 to {MAX_PARALLEL_TRAINING_JOBS} training jobs at once",
    )
    check(
        config.tuning_objective in OBJECTIVES,
        "tuning_objective",
        config.tuning_objective,
        f"a Linear Learner objective metric: {', '.join(OBJECTIVES)}",
    )
    check(config.tuning_strategy in STRATEGIES, "tuning_strategy", config.tuning_strategy, " or ".join(STRATEGIES))
    for stage in ("staging", "prod"):
        kind, count = getattr(config, f"{stage}_instance_type"), getattr(config, f"{stage}_instance_count")
        check(bool(_INSTANCE_TYPE.match(kind)), f"{stage}_instance_type", kind, "an instance type such as ml.m5.large")
        check(1 <= count <= 100, f"{stage}_instance_count", count, "1 to 100 instances")
    if config.mlflow_arn is not None:
        check(
            bool(_MLFLOW_ARN.match(config.mlflow_arn)),
            "mlflow_arn",
            config.mlflow_arn,
            "an MLflow tracking server or App ARN: arn:aws:sagemaker:REGION:ACCOUNT:mlflow-tracking-server/NAME or "
            "...:mlflow-app/ID",
        )
    if config.mlflow_experiment is not None:
        check(
            0 < len(config.mlflow_experiment) <= 256 and config.mlflow_experiment.strip() == config.mlflow_experiment,
            "mlflow_experiment",
            config.mlflow_experiment,
            "an experiment name of 1-256 characters without surrounding spaces",
        )
    percentage = config.data_capture_percentage
    check(0 <= percentage <= 100, "data_capture_percentage", percentage, "0 (no capture) to 100")
