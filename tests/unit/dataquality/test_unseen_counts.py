"""The monitor's count of rows answered with a value never seen in training, read from captured answers: JSON and
JSON Lines bodies, base64 or text, and answers without the field or that cannot be read counting nothing."""

from __future__ import annotations

import base64
import json
from datetime import datetime, timezone

from dataquality.capture import CaptureRecord, Payload, unseen_counts


def record(output: Payload | None) -> CaptureRecord:
    return CaptureRecord("capture.jsonl line 1", "id", datetime(2026, 12, 7, tzinfo=timezone.utc), None, output)


def test_rows_with_unseen_values_are_counted_per_column_from_every_answer_form() -> None:
    answer = {
        "predictions": [
            {"score": 0.2, "unseen_categories": {"plan": "gold", "region": "mars"}},
            {"score": 0.4},
            {"score": 0.9, "unseen_categories": {"plan": "legacy"}},
        ]
    }
    lines = "\n".join(json.dumps(item) for item in answer["predictions"]) + "\n"
    captured = [
        record(Payload("application/json", "OUTPUT", json.dumps(answer), "JSON")),
        record(Payload("application/jsonlines", "OUTPUT", base64.b64encode(lines.encode()).decode(), "BASE64")),
        record(Payload("application/json", "OUTPUT", "not json", "JSON")),  # unreadable: counts nothing
        record(Payload("text/csv", "OUTPUT", "0.2\n", "CSV")),  # not an llpipe answer
        record(None),
    ]
    assert unseen_counts(iter(captured)) == {"plan": 4, "region": 2}
