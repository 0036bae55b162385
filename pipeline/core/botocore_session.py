"""A botocore session whose service models come from one loader per process: botocore parses a service's model JSON
once per loader (SageMaker's is megabytes: ~0.3 s of CPU), and a new session brings a new loader, so every
``start()``/``get_execution()`` of a notebook, and every definition build, parsed it again."""

from __future__ import annotations

import functools
from typing import Any


@functools.lru_cache(maxsize=1)
def _shared_loader() -> Any:
    """botocore's data loader, made once: it caches what it has parsed, which never changes within a process."""
    import botocore.loaders

    return botocore.loaders.create_loader()


def new_botocore_session() -> Any:
    """A new botocore session (its own credentials, config and event hooks) sharing the parsed service models."""
    import botocore.session

    core = botocore.session.get_session()
    core.register_component("data_loader", _shared_loader())
    return core
