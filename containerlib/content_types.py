"""The content types of what crosses containers, defined once: training channels, batch transform, the inference
pipeline's requests and responses, and the traffic Model Monitor reads back from data capture.

Every module (container code and ``pipeline``) names a content type with these constants and reads a header with
:func:`media_type`, so the server and the monitor cannot disagree on what a header means
(tests/contract/test_content_types.py checks no other module spells one). JSON Lines has several spellings in the
wild; all of them are JSON Lines here.
"""

from __future__ import annotations

CSV = "text/csv"
JSON = "application/json"
JSONLINES = "application/jsonlines"
RECORDIO = "application/x-recordio-protobuf"
BINARY = "application/octet-stream"  # a file of no known type (an MLflow artifact uploaded from a job)
ANY = "*/*"  # an Accept header that takes any type: the default response type answers it

# other spellings of JSON Lines that clients send (ndjson, jsonl); read as JSONLINES
JSONLINES_ALIASES = ("application/jsonl", "application/x-jsonlines", "application/x-ndjson")

TRAINING_CONTENT_TYPES = (RECORDIO, CSV)  # what Linear Learner reads (training channels, batch transform input)
RAW_ROW_TYPES = (CSV, JSON, JSONLINES)  # what carries raw rows: the featurizer encodes them, the monitor checks them
REQUEST_TYPES = (*RAW_ROW_TYPES, RECORDIO)  # what the inference pipeline takes (RecordIO: rows already encoded)
RESPONSE_TYPES = (JSON, JSONLINES)  # what Linear Learner and the labels container answer in
DEFAULT_RESPONSE_TYPE = JSON  # the answer to no Accept header, or */*
JSON_TEXT_TYPES = (JSON, JSONLINES, *JSONLINES_ALIASES)  # every spelling of JSON text: data capture keeps it as text


def media_type(content_type: str) -> str:
    """The media type of a header: parameters dropped, lower case, JSON Lines' aliases as :data:`JSONLINES`
    (``Text/CSV; charset=utf-8`` -> ``text/csv``, ``application/x-ndjson`` -> ``application/jsonlines``)."""
    kind = content_type.split(";")[0].strip().lower()
    return JSONLINES if kind in JSONLINES_ALIASES else kind


def response_type(accept: str | None) -> str | None:
    """The response type an Accept header asks for (:data:`DEFAULT_RESPONSE_TYPE` for none or ``*/*``), or None
    when it asks for a type that is not one of :data:`RESPONSE_TYPES`."""
    kind = media_type(accept or DEFAULT_RESPONSE_TYPE)
    if kind == ANY:
        return DEFAULT_RESPONSE_TYPE
    return kind if kind in RESPONSE_TYPES else None
