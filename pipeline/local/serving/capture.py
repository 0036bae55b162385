"""Data capture as SageMaker writes it: each sampled request and its response as one JSON line (``captureData``
``endpointInput``/``endpointOutput`` with ``observedContentType``, ``mode``, ``data``, ``encoding``; ``eventMetadata``
with ``eventId``, ``inferenceId`` when the caller sent an InferenceId, and ``inferenceTime``; ``eventVersion``) in
files under ``<prefix>/<endpoint>/<variant>/yyyy/mm/dd/hh/`` named ``<MM-SS-mmm>-<uuid>.jsonl`` by their first
record, one file per hour of this server's traffic.

Two keys are llpipe's own: ``eventMetadata.modelPackageArn``, the model package version that answered, and
``eventMetadata.samplingPercentage``, the percentage of requests this capture keeps. SageMaker's records carry neither
(there the endpoint config names the variant's model and its sampling); locally one endpoint name serves version
after version, so each record says which one served it and ``llpipe monitor`` checks it against that version's
baseline, saying when its figures are from a sample. ``dataquality/capture.py`` (``llpipe monitor``) reads them."""

from __future__ import annotations

import base64
import json
import logging
import random
import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO

from dataquality.capture import MODEL_PACKAGE_KEY, SAMPLING_KEY
from pipeline.core.names import CSV, JSON, JSONLINES, media_type

LOG = logging.getLogger("llpipe.serve")
INFERENCE_ID_HEADER = "x-amzn-sagemaker-inference-id"  # what boto3 sends for InvokeEndpoint's InferenceId
# as SageMaker's capture configured by llpipe (CaptureContentTypeHeader): anything else is captured base64-encoded
ENCODINGS = {CSV: "CSV", JSON: "JSON", JSONLINES: "JSON"}


@dataclass
class CaptureWriter:
    """Appends captured requests of one endpoint variant; thread-safe; each line is flushed as written, so a
    reader (the monitor) sees every answered request."""

    folder: Path  # <capture prefix>/<endpoint>/<variant>
    sampling_percentage: float = 100.0
    package_arn: str | None = None  # the served version, recorded as eventMetadata.modelPackageArn
    rng: random.Random = field(default_factory=random.Random)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _hour: datetime | None = field(default=None, init=False)
    _file: IO[str] | None = field(default=None, init=False)
    failed: bool = field(default=False, init=False)  # a write failed: capture stopped, said once on the log

    def usable(self) -> CaptureWriter | None:
        """This writer if its folder can be written (checked once, at start-up, with a probe file), else None
        after a warning on the serving log: a read-only or full work dir serves without capture instead of
        answering every request 500."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            probe = self.folder / f".probe-{uuid.uuid4()}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as error:
            LOG.warning(
                "data capture off: cannot write capture files under %s (%s); requests are answered, not captured",
                self.folder,
                error.strerror or error,
            )
            return None
        return self

    def sampled(self) -> bool:
        return self.sampling_percentage >= 100 or self.rng.random() * 100 < self.sampling_percentage

    def capture(
        self,
        body: bytes,
        content_type: str,
        output: bytes,
        output_type: str,
        at: datetime,
        inference_id: str | None = None,
    ) -> None:
        """Write one request and its response (``at``: when it was answered, UTC; ``inference_id``: the caller's
        InferenceId, recorded as ``eventMetadata.inferenceId`` as the service does)."""
        metadata = {"eventId": str(uuid.uuid4())}
        if inference_id:
            metadata["inferenceId"] = inference_id
        metadata["inferenceTime"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
        if self.package_arn:
            metadata[MODEL_PACKAGE_KEY] = self.package_arn
        metadata[SAMPLING_KEY] = self.sampling_percentage
        line = json.dumps(
            {
                "captureData": {
                    "endpointInput": _payload(body, content_type, "INPUT"),
                    "endpointOutput": _payload(output, output_type, "OUTPUT"),
                },
                "eventMetadata": metadata,
                "eventVersion": "0",
            },
            separators=(",", ":"),
        )
        with self._lock:
            if self.failed:
                return
            try:
                self._open(at).write(line + "\n")
                self._file.flush()
            except OSError as error:  # the disk filled, the folder went away: the answer stands, capture stops
                self.failed = True
                LOG.warning("data capture stopped: cannot write under %s (%s)", self.folder, error.strerror or error)

    def _open(self, at: datetime) -> IO[str]:
        hour = at.replace(minute=0, second=0, microsecond=0)
        if self._file is None or hour != self._hour:
            self.close_file()
            folder = self.folder / hour.strftime("%Y/%m/%d/%H")
            folder.mkdir(parents=True, exist_ok=True)
            name = f"{at:%M-%S}-{at.microsecond // 1000:03d}-{uuid.uuid4()}.jsonl"
            self._file, self._hour = open(folder / name, "a", encoding="utf-8"), hour  # noqa: SIM115 - kept open
        return self._file

    def close_file(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def close(self) -> None:
        with self._lock:
            self.close_file()


def _payload(data: bytes, content_type: str, mode: str) -> dict[str, str]:
    encoding = ENCODINGS.get(media_type(content_type))
    text = data.decode("utf-8") if encoding else base64.b64encode(data).decode("ascii")
    return {"observedContentType": content_type, "mode": mode, "data": text, "encoding": encoding or "BASE64"}


def now() -> datetime:
    return datetime.now(timezone.utc)
