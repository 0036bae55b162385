"""The schema of a SageMaker execution, decided from the first objects under its InputDataUrl (reads only)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipeline.definition.config import PipelineConfig
from pipeline.definition.parameters import check_overrides
from pipeline.definition.schema import DEFAULT_SAMPLE_BYTES, DEFAULT_SAMPLE_OBJECTS, DEFAULT_SAMPLE_ROWS, sample_s3
from pipeline.definition.schema_inference import Inferred, infer
from pipeline.sagemaker import aws


def infer_from_s3(
    config: PipelineConfig,
    declared: Mapping[str, Mapping[str, Any]],
    given: Mapping[str, str],
    session: Any,
    rows: int = DEFAULT_SAMPLE_ROWS,
    objects: int = DEFAULT_SAMPLE_OBJECTS,
    max_bytes: int = DEFAULT_SAMPLE_BYTES,
) -> Inferred | None:
    """The schema for an execution of the pipeline as deployed (``declared``: its parameters, from DescribePipeline)
    with the overrides ``given``: ListObjectsV2 of InputDataUrl, then ranged GETs of its first objects. None when
    the user gave SchemaUrl or the deployed pipeline has no SchemaUrl parameter; ``NothingToSample`` when the
    prefix holds no data objects yet."""
    check_overrides(list(declared.values()), given)
    if "SchemaUrl" in given or "SchemaUrl" not in declared:
        return None
    values = {name: parameter.get("DefaultValue") for name, parameter in declared.items()}
    values.update(given)
    with aws.call(f"sampling the input of {config.pipeline_name}"):
        sample = sample_s3(session.client("s3"), str(values["InputDataUrl"]), rows, objects, max_bytes)
        return infer(sample, values, set(given), config.pipeline_prefix)
