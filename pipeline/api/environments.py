"""The processing images' local environments as ``llpipe env`` shows and builds them (local/environments.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipeline.core.images import PROCESSING_IMAGES

__all__ = ["processing_environments"]


def processing_environments(
    image: str | None = None,
    build: bool = False,
    on_progress: Callable[[str, str], None] | None = None,
    on_error: Callable[[str, str], None] | None = None,
) -> list[dict[str, Any]]:
    """Each processing image's environment (``image``: only the one with that key), built first with ``build``:
    ``image``, ``python``, ``pins``, ``location``, ``built``, and when built its ``environment`` (image, Python,
    libraries, exact). ``on_progress(image key, text)`` sees a build's steps, ``on_error(image key, reason)`` why
    one failed (its entry is then not built)."""
    from pipeline.local.environments import EnvironmentBuildError, ImageEnvironments

    environments = ImageEnvironments.default()
    entries = []
    for item in PROCESSING_IMAGES:
        if image not in (None, item.key):
            continue
        entry: dict[str, Any] = {"image": item.key, "python": item.python, "pins": dict(item.pins)}
        entry["location"] = str(environments.folder(item))
        if build:
            try:
                report = (lambda text, key=item.key: on_progress(key, text)) if on_progress else (lambda text: None)
                built = environments.ensure(item, report)
            except EnvironmentBuildError as error:
                if on_error is not None:
                    on_error(item.key, str(error))
                entries.append({**entry, "built": False})
                continue
        else:
            built = environments.cached(item)
        entry["built"] = built is not None
        if built is not None:
            entry["environment"] = built.to_json()
        entries.append(entry)
    return entries
