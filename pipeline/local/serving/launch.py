"""A server for one registered version: the version resolved in the local registry (a version number,
``group/version``, an ARN, or ``latest-approved``), its inference pipeline loaded, capture set up under the
pipeline's ``datacapture/`` prefix in the local S3 folder; returned not yet started."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from containerlib.names import UNSEEN_CHOICES
from pipeline.core.errors import ServingError, opt
from pipeline.core.names import check_resource_name
from pipeline.local.monitor import DEFAULT_VARIANT, capture_prefix
from pipeline.local.s3 import LocalS3
from pipeline.local.serving.app import create_app
from pipeline.local.serving.capture import CaptureWriter
from pipeline.local.serving.model import load_served_model
from pipeline.local.serving.server import LocalServer

if TYPE_CHECKING:
    from pipeline.definition.config import PipelineConfig
    from pipeline.local.workdir import Workdir

LATEST_APPROVED = "latest-approved"
DEFAULT_ENDPOINT = "llpipe-local"


def find_package(workdir: Workdir, config: PipelineConfig, target: str | int | None) -> Any:
    """``target`` in the configured group: a version, ``group/version`` or ARN; None or latest-approved: the newest
    approved version."""
    from pipeline.local.registry import LocalRegistry, RegistryError

    registry = LocalRegistry(workdir.registry_db)
    group = config.model_package_group
    target = None if target is None else str(target)  # a version number may come as an int
    try:
        if target in (None, LATEST_APPROVED):
            package = registry.last_approved(group)
            if package is None:
                raise ServingError(
                    f"model package group {group} has no approved version: approve one (llpipe models approve N) "
                    f"or name a version ({opt('model_package', 'N')})"
                )
            return package
        return registry.describe(target if "/" in target or target.startswith("arn:") else f"{group}/{target}")
    except RegistryError as error:
        raise ServingError(str(error)) from None


def build_server(
    workdir: Workdir,
    config: PipelineConfig,
    target: str | int | None = None,
    *,
    port: int = 8080,
    host: str = "127.0.0.1",
    endpoint: str = DEFAULT_ENDPOINT,
    variant: str = DEFAULT_VARIANT,
    capture_percentage: float | None = 100.0,
    unseen_categories: str | None = None,
) -> LocalServer:
    """The server of ``target``'s inference pipeline as endpoint ``endpoint``; ``capture_percentage`` of requests
    captured (None or 0: no capture); ``unseen_categories``: a categorical value never seen in training scored as
    ``column=(other)`` (other) or answered 400 (refuse); None: the version's own setting (``UnseenCategories``).
    The API's :func:`pipeline.api.serving.local_server` is the one entry to it."""
    if capture_percentage is not None and not 0 <= capture_percentage <= 100:
        raise ServingError(f"the capture percentage must be within 0..100, got {capture_percentage}")
    check_resource_name(endpoint, "endpoint_name")
    check_resource_name(variant, "variant")
    if unseen_categories is not None and unseen_categories not in UNSEEN_CHOICES:
        raise ServingError(
            f"unseen categories must be one of {', '.join(UNSEEN_CHOICES)}, got {unseen_categories!r}",
            option="unseen_categories",
            value=unseen_categories,
        )
    package = find_package(workdir, config, target)
    s3 = LocalS3(workdir.s3)
    model = load_served_model(s3, package.containers, package.arn, unseen_categories)
    capture = None
    if capture_percentage:
        capture = CaptureWriter(
            s3.path(capture_prefix(config, endpoint, variant)), capture_percentage, package_arn=package.arn
        ).usable()
    return LocalServer(create_app(model, endpoint, variant, capture), endpoint, host, port, capture, model=model)
