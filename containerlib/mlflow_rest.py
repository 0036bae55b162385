"""A step's own MLflow run, logged from inside its processing job: the scikit-learn image has no MLflow, so this
speaks MLflow's REST API (``/api/2.0/mlflow/...``) with the standard library, signing each request with SigV4
through the image's botocore when the tracking URI is a SageMaker tracking server or App ARN (as the
``sagemaker-mlflow`` plugin does: its endpoint, its ARN header, service ``sagemaker-mlflow`` or ``sagemaker``).

Logging is bounded and never fails the job: no retries, :data:`TIMEOUT_SECONDS` per request, and any failure (no
network: a job with network isolation, a store down, a request refused) is one warning line. Python 3.9, stdlib and
botocore only (botocore is imported for an ARN only)."""

from __future__ import annotations

import json
import math
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any, Callable

from containerlib.content_types import JSON

TIMEOUT_SECONDS = 5.0
MAX_PARAMS_PER_BATCH = 100
MAX_METRICS_PER_BATCH = 1000
# an ARN's resource type -> (its endpoint, the header naming it, the SigV4 service), as sagemaker-mlflow 0.5 sends
ARN_KINDS = {
    "mlflow-tracking-server": ("https://{region}.experiments.sagemaker.aws", "x-mlflow-sm-tracking-server-arn",
                               "sagemaker-mlflow"),
    "mlflow-app": ("https://mlflow.sagemaker.{region}.app.aws", "x-sm-mlflow-app-arn", "sagemaker"),
}  # fmt: skip


class MlflowRestError(Exception):
    """A request the tracking store refused or could not answer; the message says which and why."""


class MlflowRest:
    """MLflow's REST API at a tracking URI: ``http(s)://host:port`` or a SageMaker MLflow ARN."""

    def __init__(self, tracking_uri: str, timeout: float = TIMEOUT_SECONDS) -> None:
        self.timeout = timeout
        self.headers: dict[str, str] = {"Content-Type": JSON}
        self.signing: tuple[str, str] | None = None  # (service, region) for an ARN
        if tracking_uri.startswith(("http://", "https://")):
            self.base = tracking_uri.rstrip("/")
        elif tracking_uri.startswith("arn:"):
            parts = tracking_uri.split(":", 5)
            kind = parts[5].split("/", 1)[0] if len(parts) == 6 else ""
            if kind not in ARN_KINDS:
                raise MlflowRestError(f"{tracking_uri} is not an MLflow tracking server or App ARN")
            endpoint, header, service = ARN_KINDS[kind]
            self.base = endpoint.format(region=parts[3])
            self.headers[header] = tracking_uri
            self.signing = (service, parts[3])
        else:
            raise MlflowRestError(f"{tracking_uri}: a job logs over HTTP only (an http(s):// URI or an ARN)")

    def call(self, method: str, endpoint: str, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """One request to ``/api/2.0/mlflow/<endpoint>`` (GET: ``body`` as the query); its JSON answer."""
        url = f"{self.base}/api/2.0/mlflow/{endpoint}"
        data = None
        if method == "GET" and body:
            url += "?" + urllib.parse.urlencode(body)
        elif body is not None:
            data = json.dumps(body).encode()
        headers = self._signed(method, url, data) if self.signing else dict(self.headers)
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                return json.loads(answer.read() or b"{}")
        except urllib.error.HTTPError as error:
            said = error.read()[:300].decode("utf-8", "replace")
            raise MlflowRestError(f"{method} {endpoint} answered {error.code}: {said}") from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise MlflowRestError(f"{self.base} cannot be reached ({reason})") from None

    def _signed(self, method: str, url: str, data: bytes | None) -> dict[str, str]:
        """The headers with SigV4 added for the job role's credentials (botocore's default chain)."""
        import botocore.session
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        assert self.signing is not None
        service, region = self.signing
        credentials = botocore.session.get_session().get_credentials()
        if credentials is None:
            raise MlflowRestError("no AWS credentials to sign the MLflow requests with")
        request = AWSRequest(method=method, url=url, data=data, headers=dict(self.headers))
        SigV4Auth(credentials, service, region).add_auth(request)
        return dict(request.headers.items())


def _chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[start : start + size] for start in range(0, len(items), size)]


def log_child_run(
    tracking_uri: str,
    parent_run_id: str,
    name: str,
    params: Mapping[str, Any],
    metrics: Mapping[str, Any],
    tags: Mapping[str, str],
    on_warning: Callable[[str], None],
    timeout: float = TIMEOUT_SECONDS,
) -> str | None:
    """A FINISHED run ``name`` nested under ``parent_run_id`` (in its experiment) with ``params``, the finite
    numbers of ``metrics`` and ``tags``; its id, or None and one warning line through ``on_warning``."""
    try:
        client = MlflowRest(tracking_uri, timeout)
        parent = client.call("GET", "runs/get", {"run_id": parent_run_id})["run"]["info"]
        now = int(time.time() * 1000)
        all_tags = {**tags, "mlflow.parentRunId": parent_run_id}
        created = client.call(
            "POST",
            "runs/create",
            {
                "experiment_id": parent["experiment_id"],
                "run_name": name,
                "start_time": now,
                "tags": [{"key": key, "value": str(value)[:5000]} for key, value in all_tags.items()],
            },
        )
        run_id = created["run"]["info"]["run_id"]
        entries = [
            {"key": key, "value": float(value), "timestamp": now, "step": 0}
            for key, value in metrics.items()
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        ]
        items = [{"key": key, "value": str(value)[:6000]} for key, value in params.items()]
        for part in _chunks(items, MAX_PARAMS_PER_BATCH):
            client.call("POST", "runs/log-batch", {"run_id": run_id, "params": part})
        for part in _chunks(entries, MAX_METRICS_PER_BATCH):
            client.call("POST", "runs/log-batch", {"run_id": run_id, "metrics": part})
        client.call("POST", "runs/update", {"run_id": run_id, "status": "FINISHED", "end_time": now})
        return run_id
    except (MlflowRestError, KeyError, TypeError, ValueError, ImportError) as error:
        on_warning(f"MLflow: {name}'s run not logged to {tracking_uri}: {error}")
        return None
