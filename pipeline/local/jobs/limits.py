"""A local job's limits from its request: the volume it asked for and its instance type's memory, scaled by
``LLPIPE_LIMIT_SCALE`` (``pipeline.core.instances``), with the parameters that set them (the parameter table)."""

from __future__ import annotations

from pipeline.core.instances import memory_bytes, volume_bytes
from pipeline.core.limits import Limits
from pipeline.definition.parameter_table import TABLE


def feeding(step: str, field: str) -> str:
    """The parameter that sets ``field`` of ``step``'s request, or the field's own name when none does."""
    for row in TABLE:
        if any(feed.step == step and feed.kind == "setting" and feed.target == field for feed in row.feeds):
            return row.name
    return f"{step}'s {field} (fixed in the definition)"


def job_limits(step: str, volume_gb: object, instance_type: object) -> Limits:
    """The limits of one instance of ``step``: ``volume_gb`` GB of storage, ``instance_type``'s memory."""
    volume = int(volume_gb) if isinstance(volume_gb, (int, float, str)) and str(volume_gb).isdigit() else None
    return Limits(
        step=step,
        volume_bytes=None if volume is None else volume_bytes(volume),
        volume_gb=volume,
        volume_parameter=feeding(step, "VolumeSizeInGB"),
        memory_bytes=memory_bytes(str(instance_type)),
        instance_type=str(instance_type),
        type_parameter=feeding(step, "InstanceType"),
    )
