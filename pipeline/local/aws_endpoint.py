"""A stand-in AWS endpoint for local jobs: the SageMaker registry calls and S3 reads a job makes through boto3.

A processing job on SageMaker can call AWS APIs with the job's role; a local job gets this endpoint instead, through
the standard ``AWS_ENDPOINT_URL`` (plus dummy credentials and the region), so the container code runs unchanged and
never learns which backend runs it. One HTTP server on 127.0.0.1 (an ephemeral port), started for the job and
stopped after it, answers from the local registry (SQLite) and the local S3 folder:

- SageMaker's JSON 1.1 protocol (``X-Amz-Target: SageMaker.<Operation>``): ListModelPackages, DescribeModelPackage;
- S3's REST protocol, path style (boto3 uses it for an IP address endpoint): GetObject, HeadObject, ListObjectsV2.

Anything else is answered with an error naming the operation. Every request is logged (operation and parameters), so
tests can assert exactly what a job asked for, and the log is kept in the step's folder.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit
from xml.sax.saxutils import escape

from pipeline.local.registry import LocalRegistry, ModelPackage, RegistryError
from pipeline.local.s3 import LocalS3

JSON_CONTENT_TYPE = "application/x-amz-json-1.1"
SAGEMAKER_TARGET_PREFIX = "SageMaker."
S3_NAMESPACE = "http://s3.amazonaws.com/doc/2006-03-01/"
DUMMY_ACCESS_KEY = "LOCALLLPIPEACCESSKEY"
DUMMY_SECRET_KEY = "local-llpipe-secret-key-not-a-real-credential"
MAX_LIST_RESULTS = 100
MAX_KEYS = 1000


class ServiceError(Exception):
    """An AWS error response: HTTP status, error code and message, as the service would send them."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass
class AwsEndpoint:
    """The answers: the registry at ``registry_db`` and the local S3 folder; ``requests`` logs every call."""

    s3: LocalS3
    registry_db: Path
    requests: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def log(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(entry)

    # ------------------------------------------------------------------------------------------------ SageMaker

    def sagemaker(self, operation: str, parameters: dict[str, Any]) -> dict[str, Any]:
        self.log({"service": "sagemaker", "operation": operation, "parameters": parameters})
        handler = {
            "ListModelPackages": self.list_model_packages,
            "DescribeModelPackage": self.describe_model_package,
        }.get(operation)
        if handler is None:
            raise ServiceError(
                400, "UnknownOperationException", f"the local endpoint does not serve SageMaker.{operation}"
            )
        return handler(parameters)

    def list_model_packages(self, parameters: dict[str, Any]) -> dict[str, Any]:
        """Versions of a group, filtered by approval status, sorted as asked (default: CreationTime ascending)."""
        group = parameters.get("ModelPackageGroupName")
        if not group:
            raise ServiceError(400, "ValidationException", "the local endpoint lists packages of one group only")
        group = str(group).rsplit("/", 1)[-1] if str(group).startswith("arn:") else str(group)
        packages = LocalRegistry(self.registry_db).list_packages(group)
        status = parameters.get("ModelApprovalStatus")
        if status is not None:
            packages = [package for package in packages if package.approval_status == status]
        sort_by = parameters.get("SortBy", "CreationTime")
        if sort_by not in ("CreationTime", "Name"):
            raise ServiceError(400, "ValidationException", f"SortBy {sort_by!r} must be CreationTime or Name")
        order = parameters.get("SortOrder", "Ascending")
        if order not in ("Ascending", "Descending"):
            raise ServiceError(400, "ValidationException", f"SortOrder {order!r} must be Ascending or Descending")
        packages.sort(key=lambda package: (package.created_time, package.version), reverse=order == "Descending")
        limit = int(parameters.get("MaxResults", MAX_LIST_RESULTS))
        if not 1 <= limit <= MAX_LIST_RESULTS:
            raise ServiceError(400, "ValidationException", f"MaxResults {limit} must be between 1 and 100")
        start = int(parameters.get("NextToken") or 0)
        page = packages[start : start + limit]
        response: dict[str, Any] = {"ModelPackageSummaryList": [_summary(package) for package in page]}
        if start + limit < len(packages):
            response["NextToken"] = str(start + limit)
        return response

    def describe_model_package(self, parameters: dict[str, Any]) -> dict[str, Any]:
        name = parameters.get("ModelPackageName")
        if not name:
            raise ServiceError(400, "ValidationException", "ModelPackageName is required")
        try:
            package = LocalRegistry(self.registry_db).describe(str(name))
        except RegistryError:
            raise ServiceError(400, "ValidationException", f"ModelPackage {name} does not exist.") from None
        return _description(package)

    # ------------------------------------------------------------------------------------------------------- S3

    def s3_request(self, method: str, path: str, query: dict[str, list[str]]) -> tuple[int, dict[str, str], bytes]:
        bucket, _, key = unquote(path).lstrip("/").partition("/")
        if method == "GET" and not key and query.get("list-type") == ["2"]:
            prefix = (query.get("prefix") or [""])[0]
            self.log(
                {"service": "s3", "operation": "ListObjectsV2", "parameters": {"Bucket": bucket, "Prefix": prefix}}
            )
            return 200, {"Content-Type": "application/xml"}, self._list_objects(bucket, prefix, query)
        operation = {"GET": "GetObject", "HEAD": "HeadObject"}.get(method) if bucket and key else None
        self.log(
            {
                "service": "s3",
                "operation": operation or f"{method} {path}",
                "parameters": {"Bucket": bucket, "Key": key},
            }
        )
        if operation is None:
            raise ServiceError(501, "NotImplemented", f"the local endpoint does not serve S3 {method} {path}")
        try:
            local = self.s3.path(f"s3://{bucket}/{key}")
        except ValueError as error:
            raise ServiceError(400, "InvalidArgument", str(error)) from None
        if not local.is_file():
            raise ServiceError(404, "NoSuchKey", "The specified key does not exist.")
        body = local.read_bytes()
        headers = {
            "Content-Type": "application/octet-stream",
            "Content-Length": str(len(body)),
            "ETag": f'"{hashlib.md5(body).hexdigest()}"',  # noqa: S324 - S3's ETag of a single-part object
            "Last-Modified": email.utils.formatdate(local.stat().st_mtime, usegmt=True),
            "Accept-Ranges": "bytes",
        }
        return 200, headers, body if method == "GET" else b""

    def _list_objects(self, bucket: str, prefix: str, query: dict[str, list[str]]) -> bytes:
        keys = [uri.split("/", 3)[3] for uri in self.s3.list_objects(f"s3://{bucket}/{prefix}")]
        after = (query.get("continuation-token") or query.get("start-after") or [""])[0]
        keys = [key for key in keys if key > after]
        limit = int((query.get("max-keys") or [MAX_KEYS])[0])
        page, truncated = keys[:limit], len(keys) > limit
        contents = "".join(
            f"<Contents><Key>{escape(key)}</Key><Size>{self.s3.path(f's3://{bucket}/{key}').stat().st_size}</Size>"
            "<StorageClass>STANDARD</StorageClass></Contents>"
            for key in page
        )
        token = f"<NextContinuationToken>{escape(page[-1])}</NextContinuationToken>" if truncated else ""
        return (
            f'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="{S3_NAMESPACE}"><Name>{escape(bucket)}'
            f"</Name><Prefix>{escape(prefix)}</Prefix><KeyCount>{len(page)}</KeyCount><MaxKeys>{limit}</MaxKeys>"
            f"<IsTruncated>{str(truncated).lower()}</IsTruncated>{contents}{token}</ListBucketResult>"
        ).encode()


def _epoch(package_time: Any) -> float:
    return package_time.timestamp()


def _summary(package: ModelPackage) -> dict[str, Any]:
    """A ModelPackageSummary as SageMaker sends it (timestamps as epoch seconds, the JSON protocol's format)."""
    summary = {
        "ModelPackageName": package.group,
        "ModelPackageGroupName": package.group,
        "ModelPackageVersion": package.version,
        "ModelPackageArn": package.arn,
        "CreationTime": _epoch(package.created_time),
        "ModelPackageStatus": "Completed",
        "ModelApprovalStatus": package.approval_status,
    }
    if package.description:
        summary["ModelPackageDescription"] = package.description
    return summary


def _description(package: ModelPackage) -> dict[str, Any]:
    """DescribeModelPackage's response for a versioned package of the local registry."""
    description: dict[str, Any] = {
        "ModelPackageName": package.group,
        "ModelPackageGroupName": package.group,
        "ModelPackageVersion": package.version,
        "ModelPackageArn": package.arn,
        "CreationTime": _epoch(package.created_time),
        "LastModifiedTime": _epoch(package.last_modified_time),
        "InferenceSpecification": {
            "Containers": [dict(c) for c in package.containers]
            or [{"Image": package.image, "ModelDataUrl": package.model_data_url}],
            "SupportedTransformInstanceTypes": list(package.transform_instance_types),
            "SupportedRealtimeInferenceInstanceTypes": list(package.realtime_instance_types),
            "SupportedContentTypes": list(package.content_types),
            "SupportedResponseMIMETypes": list(package.response_types),
        },
        "ModelPackageStatus": "Completed",
        "ModelPackageStatusDetails": {"ValidationStatuses": []},
        "CertifyForMarketplace": False,
        "ModelApprovalStatus": package.approval_status,
    }
    if package.description:
        description["ModelPackageDescription"] = package.description
    if package.approval_description:
        description["ApprovalDescription"] = package.approval_description
    if package.source_execution:
        description["MetadataProperties"] = {"GeneratedBy": package.source_execution}
    metrics: dict[str, Any] = {}
    if package.metrics_report_uri:
        metrics["ModelQuality"] = _sources({"Statistics": package.metrics_report_uri})
    if package.data_quality:
        metrics["ModelDataQuality"] = _sources(package.data_quality)
    if metrics:
        description["ModelMetrics"] = metrics
    if package.drift_check_data_quality:
        description["DriftCheckBaselines"] = {"ModelDataQuality": _sources(package.drift_check_data_quality)}
    if package.customer_metadata:
        description["CustomerMetadataProperties"] = dict(package.customer_metadata)
    return description


def _sources(uris: Any) -> dict[str, Any]:
    return {kind: {"ContentType": "application/json", "S3Uri": uri} for kind, uri in uris.items()}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:  # noqa: N802 - the http.server naming
        target = self.headers.get("X-Amz-Target", "")
        if not target.startswith(SAGEMAKER_TARGET_PREFIX):
            self._send_json(400, {"__type": "UnknownOperationException", "message": f"unknown target {target!r}"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            parameters = json.loads(self.rfile.read(length) or b"{}")
            self._send_json(200, self.server.endpoint.sagemaker(target[len(SAGEMAKER_TARGET_PREFIX) :], parameters))
        except ServiceError as error:
            self._send_json(error.status, {"__type": error.code, "message": error.message})
        except Exception as error:  # a bug here must reach the job as a service error, not a hung connection
            self._send_json(500, {"__type": "InternalFailure", "message": f"{type(error).__name__}: {error}"})

    def do_GET(self) -> None:  # noqa: N802
        self._s3("GET")

    def do_HEAD(self) -> None:  # noqa: N802
        self._s3("HEAD")

    def _s3(self, method: str) -> None:
        url = urlsplit(self.path)
        try:
            status, headers, body = self.server.endpoint.s3_request(method, url.path, parse_qs(url.query))
        except ServiceError as error:
            body = (
                f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{error.code}</Code>'
                f"<Message>{escape(error.message)}</Message></Error>"
            ).encode()
            status, headers = error.status, {"Content-Type": "application/xml", "Content-Length": str(len(body))}
            if method == "HEAD":
                body = b""
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        self.send_header("x-amz-request-id", "local")
        self.end_headers()
        self.wfile.write(body)

    def _send_json(self, status: int, document: dict[str, Any]) -> None:
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", JSON_CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-amzn-RequestId", "local")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the requests are logged by the endpoint
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, endpoint: AwsEndpoint) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.endpoint = endpoint


@dataclass(frozen=True)
class RunningEndpoint:
    """A started endpoint: its URL and the environment variables that point boto3 at it."""

    url: str
    region: str
    endpoint: AwsEndpoint

    def environment(self) -> dict[str, str]:
        """What a job's process needs: the endpoint for every service, dummy credentials, the region."""
        return {
            "AWS_ENDPOINT_URL": self.url,
            "AWS_ACCESS_KEY_ID": DUMMY_ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": DUMMY_SECRET_KEY,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
        }


@contextmanager
def serve(s3: LocalS3, registry_db: Path, region: str) -> Iterator[RunningEndpoint]:
    """Run the endpoint on 127.0.0.1 on an ephemeral port for the duration of the block."""
    endpoint = AwsEndpoint(s3, Path(registry_db))
    server = _Server(endpoint)
    thread = threading.Thread(target=server.serve_forever, name="llpipe-aws-endpoint", daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield RunningEndpoint(f"http://{host}:{port}", region, endpoint)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
