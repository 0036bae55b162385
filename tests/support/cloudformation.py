"""CloudFormation templates read as the tests check them: YAML with the short-form tags (``!Ref``, ``!Sub``, ...)
kept as ``{tag: value}``, and the actions an IAM policy's statements grant."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def _construct(loader: Any, node: Any) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_mapping(node, deep=True)


def load_template(path: Path) -> dict[str, Any]:
    """The template at ``path``, each short-form tag as a one-key mapping (``!Ref X`` -> ``{"Ref": "X"}``)."""

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: {suffix: _construct(loader, node)})
    return yaml.load(path.read_text(), Loader=Loader)


def actions(statements: list[dict[str, Any]]) -> set[str]:
    """Every action the statements name (``Action`` as one string or a list)."""
    found: set[str] = set()
    for statement in statements:
        listed = statement["Action"]
        found.update([listed] if isinstance(listed, str) else listed)
    return found
