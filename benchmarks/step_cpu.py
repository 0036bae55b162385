"""One processing step of a finished local run, run again as its job ran it, and its CPU per run measured.

python benchmarks/step_cpu.py --workdir W --step Evaluate --code TREE [--repeat N] [--keep DIR] [-- PREFIX ...]

The step's record (``<workdir>/executions/<newest>/steps/<step>/arguments.json``) gives the command, the inputs and
the outputs; the inputs are copied from the run's local S3 folder into a sandbox of one instance (``algo-1``), the
code bundle's files are taken from ``--code`` (so two trees can be compared on the same inputs) and compiled once as
the local backend does, and the job's AWS calls go to the local backend's stand-in endpoint over the run's S3 folder
and registry (a job with a ``ContainerEntrypoint``: not DataQuality's analyzer, whose command the local backend
makes). Each run's CPU is the child's user + system time (``getrusage``); the first run is a warm-up (the
page cache, the bundle's bytecode) and is not counted when there are more. ``--keep`` copies the last run's outputs
and log there (to compare two trees' outputs byte for byte). After ``--``, a command the job's is appended to: e.g.
``-- py-spy record -o out.svg --`` (the job's interpreter follows) or, with ``--no-interpreter``,
``-- PYTHON -m cProfile -o out.prof`` (the job's script and arguments follow).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from pipeline.core.names import EXIT_MESSAGE_FILE, RESOURCE_CONFIG
from pipeline.local.aws_endpoint import serve
from pipeline.local.environments import ImageEnvironments, clean_variables
from pipeline.local.jobs.bytecode import bytecode_for, place_bytecode
from pipeline.local.jobs.processing import CODE_INPUT, NO_AWS_FILES, remap, without_aws
from pipeline.local.s3 import LocalS3


def prepare(arguments: dict[str, Any], s3: LocalS3, code: Path, root: Path, python: Path, cache_dir: Path) -> None:
    """One instance's sandbox under ``root``: resource config, inputs (the code's files from ``code``), outputs."""
    Path(remap(RESOURCE_CONFIG, root)).parent.mkdir(parents=True, exist_ok=True)
    Path(remap(RESOURCE_CONFIG, root)).write_text(json.dumps({"current_host": "algo-1", "hosts": ["algo-1"]}))
    Path(remap(EXIT_MESSAGE_FILE, root)).parent.mkdir(parents=True, exist_ok=True)
    for item in arguments.get("ProcessingInputs", []):
        source, target = s3.path(item["S3Input"]["S3Uri"]), Path(remap(item["S3Input"]["LocalPath"], root))
        if item["InputName"] == CODE_INPUT:  # the bundle's layout, each entry's files from the tree
            target.mkdir(parents=True)
            for entry in source.iterdir():
                mine = code / entry.name
                if entry.is_dir():
                    shutil.copytree(mine, target / entry.name, ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    shutil.copy2(mine if mine.exists() else entry, target / entry.name)
            compiled = bytecode_for(python, target, cache_dir)
            if compiled is not None:
                place_bytecode(compiled, target)
        elif source.is_dir():
            shutil.copytree(source, target)
        else:
            target.mkdir(parents=True)
            shutil.copy2(source, target / source.name)
    for output in arguments.get("ProcessingOutputConfig", {}).get("Outputs", []):
        Path(remap(output["S3Output"]["LocalPath"], root)).mkdir(parents=True, exist_ok=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True, help="a finished local run's work dir")
    parser.add_argument("--step", required=True, help="a processing step of it, e.g. Evaluate, Preprocess")
    parser.add_argument("--code", type=Path, required=True, help="the tree whose code the step runs")
    parser.add_argument("--repeat", type=int, default=4)
    parser.add_argument("--keep", type=Path, help="copy the last run's outputs and log here")
    parser.add_argument("--no-interpreter", action="store_true", help="the prefix brings its own interpreter")
    arguments_, prefix = parser.parse_known_args()
    prefix = prefix[1:] if prefix[:1] == ["--"] else prefix
    execution = sorted((arguments_.workdir / "executions").iterdir(), key=lambda path: path.stat().st_mtime)[-1]
    arguments = json.loads((execution / "steps" / arguments_.step / "arguments.json").read_text())
    app = arguments["AppSpecification"]
    if "ContainerEntrypoint" not in app:
        raise SystemExit(f"{arguments_.step}: no ContainerEntrypoint in its record (not a processing job's)")
    environments = ImageEnvironments.default()
    environment = environments.for_image_uri(app["ImageUri"])
    s3 = LocalS3(arguments_.workdir / "s3")
    cpus = []
    with tempfile.TemporaryDirectory(prefix="step-cpu-") as folder:
        root = Path(folder) / "algo-1"
        for _ in range(arguments_.repeat):
            shutil.rmtree(root, ignore_errors=True)
            prepare(arguments, s3, arguments_.code, root, environment.python, environments.cache_dir)
            command = [remap(part, root) for part in app["ContainerEntrypoint"][1:] + app.get("ContainerArguments", [])]
            command = [*prefix, *([] if arguments_.no_interpreter else [str(environment.python)]), *command]
            with serve(s3, arguments_.workdir / "registry.db", "us-east-1") as endpoint:
                variables = {
                    **without_aws(clean_variables(os.environ)),
                    **environment.variables,
                    **{name: remap(str(value), root) for name, value in (arguments.get("Environment") or {}).items()},
                    **NO_AWS_FILES,
                    **endpoint.environment(),
                    "PYTHONUNBUFFERED": "1",
                    "PYTHONNOUSERSITE": "1",
                }
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                done = subprocess.run(
                    command, cwd=root, env=variables, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
                )
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if done.returncode:
                sys.stdout.buffer.write(done.stdout[-3000:])
                raise SystemExit(f"{arguments_.step} exited with {done.returncode}")
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if arguments_.keep is not None:
            shutil.rmtree(arguments_.keep, ignore_errors=True)
            for output in arguments.get("ProcessingOutputConfig", {}).get("Outputs", []):
                local = Path(remap(output["S3Output"]["LocalPath"], root))
                shutil.copytree(local, arguments_.keep / output["OutputName"])
            (arguments_.keep / "log.txt").write_bytes(done.stdout)
    counted = sorted(cpus[1:] or cpus)
    print(
        f"{arguments_.step} ({arguments_.code}): CPU s per run {', '.join(f'{cpu:.2f}' for cpu in counted)}; "
        f"median {counted[len(counted) // 2]:.2f}; load {os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
