"""One processing step of a finished local run, run again as its job ran it, and its CPU per run measured.

python benchmarks/step_cpu.py [--workdir W] [--step Evaluate] [--code TREE] [--compare TREE] [--repeat N]
    [--keep DIR] [-- PREFIX ...]

The step's record (``<workdir>/executions/<newest>/steps/<step>/arguments.json``) gives the command, the inputs and
the outputs; the inputs are copied from the run's local S3 folder into a sandbox of one instance (``algo-1``), the
code bundle's files are taken from ``--code`` (so two trees can be compared on the same inputs) and compiled once as
the local backend does, and the job's AWS calls go to the local backend's stand-in endpoint over the run's S3 folder
and registry (a job with a ``ContainerEntrypoint``: not DataQuality's analyzer, whose command the local backend
makes). Each run's CPU is the child's user + system time (``getrusage``); the first run is a warm-up (the page
cache, the bundle's bytecode) and is not counted when there are more. ``--keep`` copies the outputs and log of
``--code``'s last run there, to compare two trees' outputs byte for byte. Without ``--workdir``, a new run of the
bundled example in a temporary folder (``EXAMPLE_RUN``); with ``--compare``, that tree's runs after ``--code``'s and
the ratio of their medians. After ``--``, a command the job's is appended to: e.g.
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


REPOSITORY = Path(__file__).resolve().parent.parent
EXAMPLE_RUN = [
    "--quiet",
    "--no-tracking",
    "--param",
    "Epochs=3",
    "--param",
    "NumModels=2",
    "--param",
    "MiniBatchSize=50",
]


def step_cpu(
    workdir: Path, step: str, code: Path, repeat: int, prefix: list[str], interpreter: bool, keep: Path | None
) -> list[float]:
    """The step's CPU-s of each of ``repeat`` runs on the run's recorded inputs with ``code``'s files."""
    execution = sorted((workdir / "executions").iterdir(), key=lambda path: path.stat().st_mtime)[-1]
    arguments = json.loads((execution / "steps" / step / "arguments.json").read_text())
    app = arguments["AppSpecification"]
    if "ContainerEntrypoint" not in app:
        raise SystemExit(f"{step}: no ContainerEntrypoint in its record (not a processing job's)")
    environments = ImageEnvironments.default()
    environment = environments.for_image_uri(app["ImageUri"])
    s3 = LocalS3(workdir / "s3")
    cpus = []
    with tempfile.TemporaryDirectory(prefix="step-cpu-") as folder:
        root = Path(folder) / "algo-1"
        for _ in range(repeat):
            shutil.rmtree(root, ignore_errors=True)
            prepare(arguments, s3, code, root, environment.python, environments.cache_dir)
            command = [remap(part, root) for part in app["ContainerEntrypoint"][1:] + app.get("ContainerArguments", [])]
            command = [*prefix, *([str(environment.python)] if interpreter else []), *command]
            with serve(s3, workdir / "registry.db", "us-east-1") as endpoint:
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
                raise SystemExit(f"{step} exited with {done.returncode}")
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if keep is not None:
            shutil.rmtree(keep, ignore_errors=True)
            for output in arguments.get("ProcessingOutputConfig", {}).get("Outputs", []):
                shutil.copytree(Path(remap(output["S3Output"]["LocalPath"], root)), keep / output["OutputName"])
            (keep / "log.txt").write_bytes(done.stdout)
    return sorted(cpus[1:] or cpus)  # the first run warms the page cache and the bundle's bytecode


def example_run(folder: Path) -> Path:
    """A finished local run of the bundled example in ``folder`` (this repository's code)."""
    variables = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    command = [sys.executable, "-m", "pipeline", "run", "--workdir", str(folder), *EXAMPLE_RUN]
    subprocess.run(command, check=True, env=variables, stdout=subprocess.DEVNULL)
    return folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, help="a finished local run's work dir (default: a new example run)")
    parser.add_argument("--step", default="Evaluate", help="a processing step of it, e.g. Evaluate, Preprocess")
    parser.add_argument("--code", type=Path, default=REPOSITORY, help="the tree whose code the step runs")
    parser.add_argument("--compare", type=Path, help="a tree to run in turn with --code (the baseline of the ratio)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="copy the last run's outputs and log here")
    parser.add_argument("--no-interpreter", action="store_true", help="the prefix brings its own interpreter")
    options, prefix = parser.parse_known_args()
    prefix = prefix[1:] if prefix[:1] == ["--"] else prefix
    with tempfile.TemporaryDirectory(prefix="step-cpu-run-") as folder:
        workdir = options.workdir or example_run(Path(folder) / "work")
        trees = [options.code] + ([options.compare] if options.compare else [])
        medians = {}
        for tree in trees:
            keep = options.keep if tree is options.code else None  # the outputs of --code's last run
            cpus = step_cpu(workdir, options.step, tree, options.repeat, prefix, not options.no_interpreter, keep)
            medians[tree] = cpus[len(cpus) // 2]
            print(
                f"{options.step} ({tree}): CPU s per run {', '.join(f'{cpu:.2f}' for cpu in cpus)}; "
                f"median {medians[tree]:.2f}; load {os.getloadavg()[0]:.2f}"
            )
        if options.compare:
            print(f"ratio {medians[options.compare] / medians[options.code]:.2f} ({options.compare} / {options.code})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
