"""Which processing instance this is: SageMaker's ``/opt/ml/config/resourceconfig.json``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from containerlib.errors import InputError

RESOURCE_CONFIG = "/opt/ml/config/resourceconfig.json"  # where SageMaker writes it in a processing container
SINGLE_HOST = "algo-1"  # the host a job is without a resource config (run outside a job, one instance)


@dataclass(frozen=True)
class Host:
    """Which processing instance this is: its name and 0-based index among ``count`` instances."""

    name: str
    index: int
    hosts: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.hosts)


def read_resource_config(path: Path) -> Host:
    """This host from SageMaker's resourceconfig.json (``current_host``, ``hosts``); absent file = one host algo-1."""
    if not path.exists():
        return Host(SINGLE_HOST, 0, (SINGLE_HOST,))
    try:
        config = json.loads(path.read_text())
        name, hosts = config["current_host"], tuple(config["hosts"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise InputError(f"{path}: not a resource config with current_host and hosts ({error})") from error
    if name not in hosts:
        raise InputError(f"{path}: current_host {name!r} is not among hosts {list(hosts)}")
    if len(set(hosts)) != len(hosts):
        raise InputError(f"{path}: duplicate host names in {list(hosts)}")
    return Host(name, hosts.index(name), hosts)


def current_host_name(path: Path) -> str | None:
    """The ``current_host`` of a resource config, or None when it cannot be read (for a message about a failure,
    which must not fail itself)."""
    try:
        return str(json.loads(path.read_text())["current_host"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
