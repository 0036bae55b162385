"""A local job's limits from its request: the volume it asked for and its instance type's memory, scaled by
``LLPIPE_LIMIT_SCALE`` (``pipeline.core.instances``), with the parameters that set them in the definition."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipeline.core.instances import memory_bytes, volume_bytes
from pipeline.core.limits import Limits


def named(source: Any, field: str) -> str:
    """The parameter the definition's value ``source`` reads (``{"Get": "Parameters.X"}``: ``X``), else the field."""
    if isinstance(source, Mapping) and str(source.get("Get", "")).startswith("Parameters."):
        return str(source["Get"]).removeprefix("Parameters.")
    return f"its {field} (fixed in the definition)"


def job_limits(step: str, resources: Mapping[str, Any], definition: Mapping[str, Any]) -> Limits:
    """The limits of one instance of ``step``: ``resources`` as resolved (VolumeSizeInGB, InstanceType) and as the
    ``definition`` writes them (the parameters named in a failure)."""
    volume = resources.get("VolumeSizeInGB")
    volume = int(volume) if isinstance(volume, (int, str)) and str(volume).isdigit() else None
    instance_type = str(resources.get("InstanceType", ""))
    return Limits(
        step=step,
        volume_bytes=None if volume is None else volume_bytes(volume),
        volume_gb=volume,
        volume_parameter=named(definition.get("VolumeSizeInGB"), "VolumeSizeInGB"),
        memory_bytes=memory_bytes(instance_type),
        instance_type=instance_type,
        type_parameter=named(definition.get("InstanceType"), "InstanceType"),
    )
