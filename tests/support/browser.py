"""A real headless browser for tests: Chromium (or Chrome) with a fresh profile and nothing reaching the network but
the page, as the docs check and the MLflow UI checks drive it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def chromium_path() -> str | None:
    """The first browser of :data:`CHROMIUM_NAMES` on PATH, None without one."""
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def require_chromium(what: str) -> str:
    """The browser; without one a skip (a failure on CI, where .ci/run installs it) saying what is not checked."""
    found = chromium_path()
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed: .ci/run installs it on CI (apt-get install -y chromium)")
        pytest.skip(f"no chromium on PATH (apt-get install -y chromium): {what}")
    return found


# Every host name but the pages' own resolves to nothing at once. Without it chromium asks the system's name server
# for the theme's web fonts (fonts.googleapis.com) and its own services, and where there is no network each lookup
# waits for the resolver's time-out: the docs' every-page check spent most of its 30 s so.
OFFLINE_HOSTS = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"


def headless(chromium: str, profile: Path, *arguments: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """One headless chromium invocation with a fresh profile and nothing reaching the network but the page (served
    on 127.0.0.1)."""
    return subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            OFFLINE_HOSTS,
            *arguments,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
