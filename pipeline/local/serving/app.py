"""The HTTP application (Starlette): SageMaker's container protocol (``GET /ping``, ``POST /invocations``) and the
runtime API's path (``POST /endpoints/<name>/invocations``, what ``boto3.client("sagemaker-runtime",
endpoint_url=...).invoke_endpoint`` calls). A request the model cannot answer gets its 4xx and a message naming
row and column (413 above the service's 6 MB payload limit, 415 for a content type it does not take); only a fault
of the server itself is a 500."""

from __future__ import annotations

import logging
from collections.abc import Callable

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from pipeline.core.names import JSON, REQUEST_TYPES
from pipeline.core.safe_text import RedactingFilter
from pipeline.local.serving.capture import INFERENCE_ID_HEADER, CaptureWriter, now
from pipeline.local.serving.model import ServedModel
from serving import RequestError
from serving.requests import MAX_PAYLOAD_BYTES

LOG = logging.getLogger("llpipe.serve")
LOG.addFilter(RedactingFilter())  # a traceback of the server's fault may quote a URL with credentials


def create_app(model: ServedModel, endpoint: str, variant: str, capture: CaptureWriter | None) -> Starlette:
    """The application serving ``model`` as endpoint ``endpoint`` (variant ``variant``), capturing into
    ``capture`` (None: no capture)."""

    async def ping(request: Request) -> Response:
        return Response(status_code=200)

    async def invocations(request: Request) -> Response:
        return await _invoke(request, _container_error)

    async def runtime_invocations(request: Request) -> Response:
        name = request.path_params["name"]
        if name != endpoint:
            return _runtime_error(400, f"Endpoint {name} not found (this server serves {endpoint}).", "ValidationError")
        response = await _invoke(request, _runtime_error)
        response.headers["x-Amzn-Invoked-Production-Variant"] = variant
        return response

    async def _invoke(request: Request, error: Callable[[int, str], Response]) -> Response:
        try:
            body = await _read_limited(request)
        except ClientDisconnect:  # the client left mid-body: nobody to answer, nothing the server did wrong
            LOG.info("a client disconnected before sending its whole request")
            return Response(status_code=400)
        if body is None:
            return error(413, f"the request body is above the {MAX_PAYLOAD_BYTES} byte limit of an endpoint")
        content_type = request.headers.get("content-type")
        if not content_type:
            return error(
                415,
                f"the request has no Content-Type ({', '.join(REQUEST_TYPES[:-1])} or {REQUEST_TYPES[-1]})",
            )
        accept = request.headers.get("accept") or JSON
        try:
            output, output_type = await run_in_threadpool(model.invoke, body, content_type, accept)
        except RequestError as problem:
            return error(problem.status, str(problem))
        except (RecursionError, OverflowError) as problem:  # the request's shape or numbers, wherever caught late
            return error(400, f"the request cannot be featurized: {type(problem).__name__}: {problem}")
        except Exception:  # a fault of the server, not of the request: logged with its traceback
            LOG.exception("invocation failed")
            return error(500, "the model failed on this request (a fault of the server; see its log)")
        if capture is not None and capture.sampled():
            inference_id = request.headers.get(INFERENCE_ID_HEADER)  # InvokeEndpoint's InferenceId
            await run_in_threadpool(capture.capture, body, content_type, output, output_type, now(), inference_id)
        return Response(output, media_type=output_type)

    return Starlette(
        routes=[
            Route("/ping", ping, methods=["GET"]),
            Route("/invocations", invocations, methods=["POST"]),
            Route("/endpoints/{name}/invocations", runtime_invocations, methods=["POST"]),
        ]
    )


async def _read_limited(request: Request) -> bytes | None:
    """The body, or None when it is above the payload limit: then the rest is read and dropped (never held), so
    the client, still sending, gets the 413 rather than a broken connection."""
    declared = request.headers.get("content-length")
    too_large = bool(declared and declared.isdigit() and int(declared) > MAX_PAYLOAD_BYTES)
    parts: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        too_large = too_large or size > MAX_PAYLOAD_BYTES
        if not too_large:
            parts.append(chunk)
    return None if too_large else b"".join(parts)


def _container_error(status: int, message: str) -> Response:
    return JSONResponse({"message": message}, status_code=status)


def _runtime_error(status: int, message: str, kind: str = "ModelError") -> Response:
    """As the runtime API answers: the error type in ``x-amzn-ErrorType`` (botocore's error code), the message in
    the body, with the container's status and message as the service reports them for a ModelError."""
    body = {"message": message, "OriginalStatusCode": status, "OriginalMessage": message}
    return JSONResponse(body, status_code=status, headers={"x-amzn-ErrorType": kind})
