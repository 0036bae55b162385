"""AWS variables of the environment checked before botocore reads them: its ValueError ("Invalid endpoint") came out
of ``llpipe start``, ``upsert`` and even the offline definition build as a traceback."""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlparse

from pipeline.core.errors import UsageError


def check_endpoint_variables(env: Mapping[str, str] = os.environ) -> None:
    """``AWS_ENDPOINT_URL`` and its per-service forms (``AWS_ENDPOINT_URL_S3``) must be http(s) URLs with a host."""
    for name, value in sorted(env.items()):
        if name == "AWS_ENDPOINT_URL" or name.startswith("AWS_ENDPOINT_URL_"):
            parsed = urlparse(value.strip())
            if parsed.scheme not in ("http", "https") or not parsed.hostname:
                raise UsageError(f"{name}={value}: not an endpoint URL; expected http(s)://host[:port], or unset it")
