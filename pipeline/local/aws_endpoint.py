"""A stand-in AWS endpoint for local jobs: the SageMaker registry calls and S3 reads a job makes through boto3.

A processing job on SageMaker can call AWS APIs with the job's role; a local job gets this endpoint instead, through
the standard ``AWS_ENDPOINT_URL`` (plus dummy credentials and the region), so the container code runs unchanged and
never learns which backend runs it. One HTTP server on 127.0.0.1 (an ephemeral port), started for the job and
stopped after it, answers from the local registry (SQLite) and the local S3 folder:

- SageMaker's JSON 1.1 protocol (``X-Amz-Target: SageMaker.<Operation>``): ListModelPackages, DescribeModelPackage;
- S3's REST protocol, path style (boto3 uses it for an IP address endpoint): GetObject, HeadObject, ListObjectsV2.

GetObject streams the file in blocks of ``SEND_BLOCK`` bytes (never the whole object in memory) and honours ``Range``
as S3 does: one range, ``bytes=a-b``, ``bytes=a-`` or ``bytes=-n``, is answered 206 with its Content-Range; a range
that starts at or past the end is 416 ``InvalidRange``; several ranges, or a header S3 cannot parse, are ignored (200,
the whole object). A client that closes the connection mid-body ends the transfer quietly and closes the file. The
ETag is opaque, as S3's is for multipart objects: a digest of the file's identity (inode, size, modification time),
not of its content, which would take a read of the whole file.

Anything else is answered with an error naming the operation. Every request is logged (operation and parameters,
``Range`` among them when given), so tests can assert exactly what a job asked for, and the log is kept in the step's
folder.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import os
import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any
from urllib.parse import parse_qs, unquote, urlsplit
from xml.sax.saxutils import escape

from pipeline.core.names import JSON
from pipeline.local.registry import LocalRegistry, ModelPackage, RegistryError
from pipeline.local.s3 import LocalS3

JSON_CONTENT_TYPE = "application/x-amz-json-1.1"
SAGEMAKER_TARGET_PREFIX = "SageMaker."
S3_NAMESPACE = "http://s3.amazonaws.com/doc/2006-03-01/"
DUMMY_ACCESS_KEY = "LOCALLLPIPEACCESSKEY"
DUMMY_SECRET_KEY = "local-llpipe-secret-key-not-a-real-credential"
MAX_LIST_RESULTS = 100
MAX_KEYS = 1000
SEND_BLOCK = 256 << 10  # bytes read from the file and written to the socket at a time
SINGLE_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


class ServiceError(Exception):
    """An AWS error response: HTTP status, error code and message, as the service would send them, plus any extra
    elements of S3's error XML and headers."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.details, self.headers = details or {}, headers or {}


@dataclass
class ObjectBody:
    """``length`` bytes of an open file from ``start``: a response body the handler sends in blocks, then closes."""

    file: IO[bytes]
    start: int
    length: int


Body = bytes | ObjectBody


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The first and last byte a ``Range`` header selects in an object of ``size`` bytes, as S3 reads it; None when
    the whole object is sent (no header, several ranges, or one S3 ignores: not ``bytes=a-b``/``a-``/``-n``, or
    ``b < a``); a ServiceError 416 InvalidRange when the range selects nothing (it starts at or past the end)."""
    if header is None:
        return None
    match = SINGLE_RANGE.fullmatch(header.strip())
    if match is None or match.group(1) == match.group(2) == "":
        return None
    first, last = match.group(1), match.group(2)
    if first and last and int(last) < int(first):
        return None
    if first:
        start, end = int(first), min(int(last), size - 1) if last else size - 1
    else:  # a suffix: the last n bytes, the whole object when it is shorter
        start, end = max(size - int(last), 0), size - 1 if int(last) else -1
    if start >= size or end < start:
        raise ServiceError(
            416,
            "InvalidRange",
            "The requested range is not satisfiable",
            {"RangeRequested": header, "ActualObjectSize": str(size)},
            {"Content-Range": f"bytes */{size}"},
        )
    return start, end


@dataclass
class AwsEndpoint:
    """The answers: the registry at ``registry_db`` and the local S3 folder; ``requests`` logs every call."""

    s3: LocalS3
    registry_db: Path
    requests: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _sent: threading.Condition = field(default_factory=threading.Condition, repr=False)
    _open_bodies: int = 0
    cut_short: int = 0  # object bodies the client stopped reading before their end (it closed the connection)

    def log(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(entry)

    def body_opened(self) -> None:
        with self._sent:
            self._open_bodies += 1

    def body_closed(self, whole: bool) -> None:
        with self._sent:
            self._open_bodies -= 1
            self.cut_short += not whole
            self._sent.notify_all()

    def wait_until_sent(self, timeout: float) -> bool:
        """Wait until no object body is being sent (its file closed); False if one still is after ``timeout``."""
        with self._sent:
            return self._sent.wait_for(lambda: self._open_bodies == 0, timeout)

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

    def s3_request(
        self, method: str, path: str, query: dict[str, list[str]], range_header: str | None = None
    ) -> tuple[int, dict[str, str], Body]:
        """S3's answer: status, headers, body (for GetObject an open file's slice: the caller sends and closes it)."""
        bucket, _, key = unquote(path).lstrip("/").partition("/")
        if method == "GET" and not key and query.get("list-type") == ["2"]:
            prefix = (query.get("prefix") or [""])[0]
            self.log(
                {"service": "s3", "operation": "ListObjectsV2", "parameters": {"Bucket": bucket, "Prefix": prefix}}
            )
            return 200, {"Content-Type": "application/xml"}, self._list_objects(bucket, prefix, query)
        operation = {"GET": "GetObject", "HEAD": "HeadObject"}.get(method) if bucket and key else None
        parameters = {"Bucket": bucket, "Key": key}
        if range_header is not None and operation is not None:
            parameters["Range"] = range_header
        self.log({"service": "s3", "operation": operation or f"{method} {path}", "parameters": parameters})
        if operation is None:
            raise ServiceError(501, "NotImplemented", f"the local endpoint does not serve S3 {method} {path}")
        try:
            local = self.s3.path(f"s3://{bucket}/{key}")
        except ValueError as error:
            raise ServiceError(400, "InvalidArgument", str(error)) from None
        try:
            file = local.open("rb")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise ServiceError(404, "NoSuchKey", "The specified key does not exist.") from None
        try:
            stat = os.fstat(file.fileno())  # the opened file's: a rename over it later does not change what is sent
            selected = byte_range(range_header, stat.st_size)
            start, end = selected or (0, stat.st_size - 1)
            identity = f"{stat.st_ino}-{stat.st_size}-{stat.st_mtime_ns}".encode()
            headers = {
                "Content-Type": "application/octet-stream",
                "Content-Length": str(end - start + 1),
                "ETag": f'"{hashlib.md5(identity).hexdigest()}"',  # noqa: S324 - an opaque tag, not a digest
                "Last-Modified": email.utils.formatdate(stat.st_mtime, usegmt=True),
                "Accept-Ranges": "bytes",
            }
            if selected is not None:
                headers["Content-Range"] = f"bytes {start}-{end}/{stat.st_size}"
        except BaseException:
            file.close()
            raise
        status = 200 if selected is None else 206
        if method == "HEAD":
            file.close()
            return status, headers, b""
        return status, headers, ObjectBody(file, start, end - start + 1)

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
    return {kind: {"ContentType": JSON, "S3Uri": uri} for kind, uri in uris.items()}


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # connections kept alive between requests, as S3's are

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
        endpoint = self.server.endpoint
        status, headers, body = self._s3_answer(method)
        whole = True
        if isinstance(body, ObjectBody):
            endpoint.body_opened()
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            if "Content-Length" not in headers:
                self.send_header("Content-Length", str(len(body) if isinstance(body, bytes) else body.length))
            self.send_header("x-amz-request-id", "local")
            self.end_headers()
            if isinstance(body, ObjectBody):
                self._send_file(body)
            else:
                self.wfile.write(body)
        except ConnectionError:  # the client closed the connection (reset, broken pipe): nothing left to answer
            self.close_connection, whole = True, False
        finally:
            if isinstance(body, ObjectBody):
                body.file.close()
                endpoint.body_closed(whole)

    def _s3_answer(self, method: str) -> tuple[int, dict[str, str], Body]:
        """The endpoint's answer to this S3 request; an error as S3's XML, a bug included (not a broken connection)."""
        url = urlsplit(self.path)
        try:
            return self.server.endpoint.s3_request(method, url.path, parse_qs(url.query), self.headers.get("Range"))
        except ServiceError as error:
            failure = error
        except Exception as error:
            failure = ServiceError(500, "InternalError", f"{type(error).__name__}: {error}")
        details = "".join(f"<{name}>{escape(value)}</{name}>" for name, value in failure.details.items())
        body = (
            f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{failure.code}</Code>'
            f"<Message>{escape(failure.message)}</Message>{details}<RequestId>local</RequestId></Error>"
        ).encode()
        headers = {"Content-Type": "application/xml", "Content-Length": str(len(body)), **failure.headers}
        return failure.status, headers, b"" if method == "HEAD" else body

    def _send_file(self, body: ObjectBody) -> None:
        """The body's bytes, ``SEND_BLOCK`` at a time; a file shorter than announced ends the connection, so the
        client sees a short body instead of waiting for bytes that never come."""
        body.file.seek(body.start)
        left = body.length
        while left:
            block = body.file.read(min(SEND_BLOCK, left))
            if not block:
                self.close_connection = True
                return
            self.wfile.write(block)
            left -= len(block)

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
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """End the connections still open (kept alive, their threads wait for a next request): server_close joins
        every connection's thread."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed by the client
                pass


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
        server.close_connections()
        server.server_close()
        thread.join()
