"""A step's own MLflow run, logged from inside its processing job: the scikit-learn image has no MLflow, so this
speaks MLflow's REST API (``/api/2.0/mlflow/...``) with the standard library, signing each request with SigV4
through the image's botocore when the tracking URI is a SageMaker tracking server or App ARN (as the
``sagemaker-mlflow`` plugin does: its endpoint, its ARN header, service ``sagemaker-mlflow`` or ``sagemaker``).

Artifacts go where the run's ``artifact_uri`` says: an MLflow server's artifact proxy (``mlflow-artifacts:``, one
``PUT /api/2.0/mlflow-artifacts/artifacts/<path>`` per file, as MLflow's own client sends) or an S3 artifact root
(``s3://``, as SageMaker's managed MLflow has: one PutObject per file with the job role's credentials through the
image's boto3).

Logging is bounded and never fails the job: no retries, :data:`TIMEOUT_SECONDS` per request, and any failure (no
network: a job with network isolation, a store down, a request refused) is one warning line. Python 3.9, stdlib,
botocore for an ARN and boto3 for an S3 artifact root only."""

from __future__ import annotations

import json
import math
import mimetypes
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable

from containerlib.content_types import BINARY, JSON
from containerlib.s3_uri import SCHEME as S3_SCHEME
from containerlib.s3_uri import split_s3_uri

TIMEOUT_SECONDS = 5.0
MAX_PARAMS_PER_BATCH = 100
MAX_METRICS_PER_BATCH = 1000
ARTIFACTS_SCHEME = "mlflow-artifacts:"  # an artifact location served by the tracking server's proxy
ARTIFACTS_API = "/api/2.0/mlflow-artifacts/artifacts"
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
        return json.loads(self._send(method, url, data, self.headers, endpoint) or b"{}")

    def artifact_url(self, artifact_uri: str, relative: str) -> str:
        """Where the artifact proxy takes the file ``relative`` (a ``/``-separated path) of a run whose artifact URI
        is ``artifact_uri`` (``mlflow-artifacts:/<path>`` or ``mlflow-artifacts://<host:port>/<path>``), resolved as
        MLflow's client resolves it: the tracking server's scheme, the URI's host or else the server's."""
        parsed = urllib.parse.urlsplit(artifact_uri)
        server = urllib.parse.urlsplit(self.base)
        path = "/".join(urllib.parse.quote(part) for part in f"{parsed.path}/{relative}".split("/") if part)
        return f"{server.scheme}://{parsed.netloc or server.netloc}{server.path}{ARTIFACTS_API}/{path}"

    def put_artifact(self, artifact_uri: str, relative: str, data: bytes) -> None:
        """One file to the tracking server's artifact proxy (``PUT``), its type guessed from its name."""
        headers = {**self.headers, "Content-Type": content_type(relative)}
        self._send("PUT", self.artifact_url(artifact_uri, relative), data, headers, f"artifact {relative}")

    def _send(self, method: str, url: str, data: bytes | None, headers: Mapping[str, str], what: str) -> bytes:
        """One request (signed for an ARN); the answer's body."""
        sent = self._signed(method, url, data, headers) if self.signing else dict(headers)
        request = urllib.request.Request(url, data=data, headers=sent, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                return bytes(answer.read())
        except urllib.error.HTTPError as error:
            said = error.read()[:300].decode("utf-8", "replace")
            raise MlflowRestError(f"{method} {what} answered {error.code}: {said}") from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise MlflowRestError(f"{self.base} cannot be reached ({reason})") from None

    def _signed(
        self, method: str, url: str, data: bytes | None, headers: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """The headers with SigV4 added for the job role's credentials (botocore's default chain)."""
        import botocore.session
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        assert self.signing is not None
        service, region = self.signing
        credentials = botocore.session.get_session().get_credentials()
        if credentials is None:
            raise MlflowRestError("no AWS credentials to sign the MLflow requests with")
        request = AWSRequest(method=method, url=url, data=data, headers=dict(headers or self.headers))
        SigV4Auth(credentials, service, region).add_auth(request)
        return dict(request.headers.items())


def content_type(relative: str) -> str:
    """An artifact's type, guessed from its name as MLflow's client guesses it."""
    return mimetypes.guess_type(relative)[0] or BINARY


def upload_artifacts(client: MlflowRest, artifact_uri: str, files: Mapping[str, Path]) -> None:
    """``files`` (artifact path -> local file) into a run's artifact location: the tracking server's artifact proxy
    for ``mlflow-artifacts:``, S3 for ``s3://`` (one PutObject per file under the root's key, boto3's default
    credentials, region and endpoint); any other location is refused naming it."""
    if artifact_uri.startswith(ARTIFACTS_SCHEME):
        for relative, path in files.items():
            client.put_artifact(artifact_uri, relative, path.read_bytes())
    elif artifact_uri.startswith(S3_SCHEME):
        import boto3  # the image has it; imported only for an S3 artifact root
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, prefix = split_s3_uri(artifact_uri)
        timeouts = Config(connect_timeout=client.timeout, read_timeout=client.timeout, retries={"max_attempts": 1})
        s3 = boto3.session.Session().client("s3", config=timeouts)
        for relative, path in files.items():
            key = f"{prefix.rstrip('/')}/{relative}" if prefix.strip("/") else relative
            try:
                s3.put_object(Bucket=bucket, Key=key, Body=path.read_bytes(), ContentType=content_type(relative))
            except (BotoCoreError, ClientError) as error:
                raise MlflowRestError(f"PutObject s3://{bucket}/{key}: {error}") from None
    else:
        raise MlflowRestError(
            f"artifact location {artifact_uri}: a job uploads to a tracking server's artifact proxy "
            f"({ARTIFACTS_SCHEME}) or to S3 (s3://) only"
        )


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
    artifacts: Mapping[str, Path] | None = None,
) -> str | None:
    """A FINISHED run ``name`` nested under ``parent_run_id`` (in its experiment) with ``params``, the finite
    numbers of ``metrics``, ``tags`` and ``artifacts`` (artifact path -> local file, see :func:`upload_artifacts`);
    its id, or None and one warning line through ``on_warning``. Artifacts that cannot be uploaded leave the run
    logged without them, and that is the one warning line."""
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
        unsent = None
        if artifacts:
            try:
                upload_artifacts(client, created["run"]["info"]["artifact_uri"], artifacts)
            except (MlflowRestError, OSError, KeyError, ValueError, ImportError) as error:
                unsent = f"MLflow: {name}'s artifacts not uploaded to run {run_id}: {error}"
        client.call("POST", "runs/update", {"run_id": run_id, "status": "FINISHED", "end_time": now})
        if unsent:
            on_warning(unsent)
        return run_id
    except (MlflowRestError, KeyError, TypeError, ValueError, ImportError) as error:
        on_warning(f"MLflow: {name}'s run not logged to {tracking_uri}: {error}")
        return None
