"""A schema inferred from a sample: the decision, its content-addressed URI and the parameters that name it.

``llpipe run`` samples local files (``pipeline.local.runner``), ``llpipe start`` and ``llpipe schedule`` the objects
under ``InputDataUrl`` (``pipeline.sagemaker.schema_inference``); all three then pass ``SchemaUrl`` (and the short
decisions) as parameters. Nothing is inferred when the user gave ``SchemaUrl``, or with ``--no-infer``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.definition.schema import Sample, decide, schema_uri


@dataclass(frozen=True)
class Inferred:
    """A decided schema: its bytes, where it lives, the parameters to pass and what to tell the user."""

    uri: str
    body: bytes
    parameters: dict[str, str]  # SchemaUrl and the short decisions the user did not set
    notes: list[str]
    sample: dict[str, Any]


def infer(sample: Sample, values: Mapping[str, Any], given: set[str], pipeline_prefix: str) -> Inferred:
    """Decide from ``sample`` what the user did not set; the schema's URI is the hash of its bytes."""
    decision = decide(sample, values, given)
    uri = schema_uri(pipeline_prefix, decision.body)
    parameters = {**decision.parameters, "SchemaUrl": uri}
    return Inferred(uri, decision.body, parameters, decision.notes, decision.document["sample"])
