"""A CodeBuild buildspec's commands run here as CodeBuild runs them: in ``sh -e``, with the buildspec's variables,
AWS at a local endpoint (moto) and this checkout's llpipe (what the build's ``pip install .`` gives it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

REPOSITORY = Path(__file__).resolve().parents[2]
PHASES = ("install", "pre_build", "build", "post_build")


def buildspec_commands(buildspec: Path) -> tuple[dict[str, str], list[str]]:
    """The buildspec's ``env.variables`` and its commands in phase order, less its ``pip install`` lines."""
    spec = yaml.safe_load(buildspec.read_text())
    commands = [
        command
        for phase in PHASES
        for command in spec["phases"].get(phase, {}).get("commands", [])
        if "pip install" not in command
    ]
    return {k: str(v) for k, v in spec["env"]["variables"].items()}, commands


def run_buildspec(
    buildspec: Path, cwd: Path, endpoint: str, region: str, **variables: str
) -> subprocess.CompletedProcess[str]:
    """The buildspec's commands in ``cwd`` (also the build's HOME), AWS at ``endpoint`` in ``region`` with test
    credentials and no config file; ``variables`` (the project's and a rule's) over the buildspec's own."""
    defaults, commands = buildspec_commands(buildspec)
    environment = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "PYTHONPATH": str(REPOSITORY),  # this checkout, as the build's `pip install .` makes it
        "HOME": str(cwd),
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_REGION": region,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_CONFIG_FILE": "/dev/null",
    }
    return subprocess.run(
        ["sh", "-e", "-c", "\n".join(commands) + "\n"],
        cwd=cwd,
        env={**defaults, **environment, **variables},
        capture_output=True,
        text=True,
        timeout=300,
    )
