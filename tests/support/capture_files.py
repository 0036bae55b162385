"""Data-capture files as SageMaker writes them, for tests (until ``llpipe serve`` writes real ones).

The layout and the record follow the documented samples exactly (notes: DG ``model-monitor-data-capture-endpoint.md``,
the XGBoost and Linear Learner capture records of aws/amazon-sagemaker-examples): one JSON line per request, keys in
the order ``captureData``, ``eventMetadata``, ``eventVersion``, compact separators, ``data`` the payload as a string,
``encoding`` CSV or JSON, ``inferenceTime`` in UTC to the second, ``eventVersion`` "0"; under
``<prefix>/<endpoint>/<variant>/yyyy/mm/dd/hh/<MM-SS-mmm>-<uuid>.jsonl``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

ENCODINGS = {"text/csv": "CSV", "application/json": "JSON", "application/jsonlines": "JSON"}


@dataclass(frozen=True)
class Captured:
    """One request and its response."""

    time: datetime  # UTC
    content_type: str
    data: str
    output: str = '{"predictions": [{"score": 0.5, "predicted_label": 1}]}'
    output_type: str = "application/json"
    model_package_arn: str | None = None  # llpipe serve's eventMetadata.modelPackageArn, when given


def record(item: Captured, event_id: str) -> str:
    """One capture line."""
    document = {
        "captureData": {
            "endpointInput": {
                "observedContentType": item.content_type,
                "mode": "INPUT",
                "data": item.data,
                "encoding": ENCODINGS.get(item.content_type.split(";")[0], "BASE64"),
            },
            "endpointOutput": {
                "observedContentType": item.output_type,
                "mode": "OUTPUT",
                "data": item.output,
                "encoding": ENCODINGS.get(item.output_type.split(";")[0], "BASE64"),
            },
        },
        "eventMetadata": {"eventId": event_id, "inferenceTime": item.time.strftime("%Y-%m-%dT%H:%M:%SZ")},
        "eventVersion": "0",
    }
    if item.model_package_arn is not None:
        document["eventMetadata"]["modelPackageArn"] = item.model_package_arn
    return json.dumps(document, separators=(",", ":"))


def write_capture(prefix: Path, endpoint: str, variant: str, items: Sequence[Captured]) -> list[Path]:
    """The items written into one file per hour (named by the first item's minute, second and millisecond)."""
    by_hour: dict[datetime, list[Captured]] = {}
    for item in items:
        by_hour.setdefault(item.time.replace(minute=0, second=0, microsecond=0), []).append(item)
    written = []
    for hour, group in sorted(by_hour.items()):
        first = group[0].time
        folder = prefix / endpoint / variant / hour.strftime("%Y/%m/%d/%H")
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{first:%M-%S}-{first.microsecond // 1000:03d}-{uuid.uuid4()}.jsonl"
        lines = [record(item, str(uuid.uuid4())) for item in group]
        (folder / name).write_text("\n".join(lines) + "\n")
        written.append(folder / name)
    return written
