"""What an instance type gives a job (memory), and the local backend's scale for every limit.

The memory of each type is EC2's (docs: /work/shared/reference/scale-and-tracking.md's table). The local backend
enforces a job's volume and its instance type's memory as SageMaker would; ``LLPIPE_LIMIT_SCALE`` (default 1) scales
both down so tests prove them on small data (at 0.0001 a 30 GB volume holds 3.2 MB and 16 GiB of memory is 1.7 MB);
``LLPIPE_VOLUME_SCALE`` or ``LLPIPE_MEMORY_SCALE`` scales one of them.
"""

from __future__ import annotations

import os

from pipeline.core.errors import UsageError

GIB = 1 << 30
LIMIT_SCALE_ENV = "LLPIPE_LIMIT_SCALE"
VOLUME_SCALE_ENV = "LLPIPE_VOLUME_SCALE"  # each overrides LLPIPE_LIMIT_SCALE for its limit
MEMORY_SCALE_ENV = "LLPIPE_MEMORY_SCALE"

# type -> (memory GiB, vCPUs), EC2's figures (/work/shared/reference/scale-and-tracking.md): the local limits and the
# capacity plan (pipeline.core.capacity) read this one table
INSTANCES: dict[str, tuple[int, int]] = {
    "ml.m5.large": (8, 2),
    "ml.m5.xlarge": (16, 4),
    "ml.m5.2xlarge": (32, 8),
    "ml.m5.4xlarge": (64, 16),
    "ml.m5.12xlarge": (192, 48),
    "ml.c5.xlarge": (8, 4),
    "ml.c5.2xlarge": (16, 8),
    "ml.c5.4xlarge": (32, 16),
    "ml.r5.xlarge": (32, 4),
    "ml.r5.2xlarge": (64, 8),
    "ml.m4.xlarge": (16, 4),
}
MEMORY_GIB = {instance_type: memory for instance_type, (memory, _) in INSTANCES.items()}


def limit_scale(variable: str = LIMIT_SCALE_ENV) -> float:
    """``LLPIPE_LIMIT_SCALE``: the share of a real volume's and a real instance's size a local job gets (default 1);
    ``LLPIPE_VOLUME_SCALE`` and ``LLPIPE_MEMORY_SCALE`` set one of the two (a job's files and its memory differ by
    orders of magnitude on small data, so a test proving one limit keeps the other)."""
    text = os.environ.get(variable, "").strip()
    if not text:
        return 1.0 if variable == LIMIT_SCALE_ENV else limit_scale()
    try:
        scale = float(text)
    except ValueError:
        raise UsageError(f"{variable}={text!r} is not a number; expected e.g. 0.0001 (or unset: 1)") from None
    if not 0 < scale <= 1:
        raise UsageError(f"{variable}={text!r}: expected a number greater than 0 and at most 1")
    return scale


def volume_bytes(volume_gb: int, scale: float | None = None) -> int:
    """The bytes a volume of ``volume_gb`` GB holds locally (GB counted as GiB, times the limit scale)."""
    return int(volume_gb * GIB * (limit_scale(VOLUME_SCALE_ENV) if scale is None else scale))


def memory_bytes(instance_type: str, scale: float | None = None) -> int | None:
    """The memory an instance of ``instance_type`` gives locally; None for a type this table does not know."""
    gib = MEMORY_GIB.get(instance_type)
    return None if gib is None else int(gib * GIB * (limit_scale(MEMORY_SCALE_ENV) if scale is None else scale))
