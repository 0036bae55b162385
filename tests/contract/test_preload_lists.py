"""A fork server's preload list names only modules its job imports anyway (``pipeline.core.forkserver``): a module
the job would not import would count in every instance's memory, measured against its instance type, and cost its
import for nothing. Each list is checked against what a fresh interpreter of the job's own environment holds in
``sys.modules`` after importing the job's entry module (and, for Preprocess, reading a CSV file as every Preprocess
does through ``read_chunks``)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pipeline.linear_learner.launcher import TRAINING_PRELOAD
from pipeline.local.environments import JobEnvironment
from pipeline.local.jobs.processing import PROCESSING_PRELOAD

REPOSITORY = Path(__file__).resolve().parents[2]
ENTRY_MODULES = {  # the processing entry scripts by the name the preload table knows them
    "preprocess.py": "preprocessing.preprocess",
    "evaluate.py": "evaluation.evaluate",
    "analyze.py": "dataquality.analyze",
}
READ_A_CSV = """
from pathlib import Path
from containerlib.tables.chunks import read_chunks
from containerlib.tables.header import read_header
path = Path({path!r})
header = read_header(path)
list(read_chunks(path, header, header, ["name"], ["x"], 10))
"""


def imported(python: Path, entry_module: str, then: str = "") -> set[str]:
    """``sys.modules`` of a fresh ``python`` after importing ``entry_module`` from the repository, and ``then``."""
    program = f"import json, sys\nsys.path.insert(0, {str(REPOSITORY)!r})\nimport {entry_module}\n"
    program += textwrap.dedent(then) + "\nprint(json.dumps(sorted(sys.modules)))\n"
    output = subprocess.run(
        [str(python), "-c", program], capture_output=True, text=True, check=True, cwd=REPOSITORY
    ).stdout
    return set(json.loads(output.splitlines()[-1]))


def test_every_processing_entry_has_a_module_to_check_its_list_against():
    assert set(PROCESSING_PRELOAD) == set(ENTRY_MODULES)


@pytest.mark.parametrize("entry", sorted(ENTRY_MODULES))
def test_a_processing_jobs_preload_list_is_what_it_imports(
    image_environment: JobEnvironment, entry: str, tmp_path: Path
):
    then = ""
    if entry == "preprocess.py":
        data = tmp_path / "data.csv"
        data.write_text("x,name\n1.5,a\n2.5,b\n")
        then = READ_A_CSV.format(path=str(data))
    modules = imported(image_environment.python, ENTRY_MODULES[entry], then)
    assert not set(PROCESSING_PRELOAD[entry]) - modules, f"{entry} would not import these"


def test_the_training_preload_list_is_what_train_imports():
    # train's run() imports the trainer on every training job (lazily: ``--help`` needs no numpy)
    modules = imported(Path(sys.executable), "pipeline.linear_learner.train", "import pipeline.linear_learner.trainer")
    assert not set(TRAINING_PRELOAD) - modules
