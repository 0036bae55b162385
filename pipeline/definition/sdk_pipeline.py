"""SDK v3's ``Pipeline`` as :func:`pipeline.get_pipeline` hands it out: the same class but for a ``definition()``
that validates the SDK config once instead of on every lookup (the SDK re-runs jsonschema per lookup: ~8 s a build).
Imported only inside :func:`pipeline.definition.offline.offline_sdk`, where the SDK is."""

from __future__ import annotations

from sagemaker.mlops.workflow import Pipeline as SdkPipeline

from pipeline.definition.offline import memoised_config_validation


class Pipeline(SdkPipeline):
    """``sagemaker.mlops.workflow.Pipeline`` whose ``definition()`` (also called by ``create``/``update``/``upsert``)
    validates each distinct SDK config once."""

    def definition(self) -> str:
        with memoised_config_validation():
            return super().definition()
