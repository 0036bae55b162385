"""A user's module named like a container package (``./evaluation.py`` and a ``preprocessing/`` package in a notebook's
folder, first on ``sys.path``) does not replace the installed one: ``import pipeline`` loads the installed packages
and warns naming the user's, and a user's module already imported under such a name is refused with the way out.
Real interpreters, started in a folder holding the user's modules, as Jupyter and ``python -c`` start."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# the batch transform of two rows by a two-weight binary model, in the shadowed folder
TRANSFORM = textwrap.dedent(
    """
    import json
    from pathlib import Path

    import numpy as np

    import pipeline.linear_learner.inference as inference
    from pipeline.linear_learner.artifact import save_model

    import evaluation
    import preprocessing

    weights = np.array([[1.0], [-1.0]], dtype=np.float32)
    save_model(inference.LinearModel("binary_classifier", "logistic", weights, np.array([0.5], np.float32)),
               Path("model.tar.gz"))
    Path("rows.csv").write_text("1,0\\n0,1\\n")
    [out] = inference.transform_files(Path("model.tar.gz"), [Path("rows.csv")], Path("out"), "text/csv")
    print(json.dumps({"lines": out.read_text().splitlines(), "evaluation": evaluation.__file__,
                      "preprocessing": preprocessing.__file__}))
    """
)


def user_folder(tmp_path: Path) -> Path:
    """A notebook's folder holding its own evaluation.py and preprocessing package."""
    (tmp_path / "evaluation.py").write_text("def score(rows):\n    return 'the notebook author own evaluation'\n")
    (tmp_path / "preprocessing").mkdir()
    (tmp_path / "preprocessing" / "__init__.py").write_text("CLEANING = 'the notebook author own preprocessing'\n")
    return tmp_path


def python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -c code`` in ``cwd`` (first on sys.path), the worktree's packages after it on PYTHONPATH."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=environment, capture_output=True, text=True, timeout=120
    )


def test_the_installed_packages_load_and_run_in_a_folder_that_shadows_them(tmp_path: Path) -> None:
    folder = user_folder(tmp_path)
    shadowed = python("import evaluation, preprocessing; print(evaluation.__file__, preprocessing.__file__)", folder)
    assert shadowed.stdout.split() == [str(folder / "evaluation.py"), str(folder / "preprocessing" / "__init__.py")]

    done = python(TRANSFORM, folder)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["evaluation"] == str(ROOT / "evaluation" / "__init__.py")
    assert result["preprocessing"] == str(ROOT / "preprocessing" / "__init__.py")
    predictions = [json.loads(line) for line in result["lines"]]
    assert [p["predicted_label"] for p in predictions] == [1, 0]
    expected = [1 / (1 + math.exp(-1.5)), 1 / (1 + math.exp(0.5))]  # sigmoid(x . w + b), scored in float32
    assert [abs(p["score"] - score) < 1e-6 for p, score in zip(predictions, expected, strict=True)] == [True, True], (
        predictions
    )
    warned = [line for line in done.stderr.splitlines() if "ShadowedPackageWarning" in line]
    assert warned == [
        f"<string>:7: ShadowedPackageWarning: {folder / 'evaluation.py'} has the name of pipeline's container package "
        f"'evaluation' and comes first on sys.path: pipeline loaded its own ({ROOT / 'evaluation'}), so `import "
        "evaluation` gives pipeline's package; rename yours (any name but containerlib, dataquality, evaluation, "
        "preprocessing, serving)",
        f"<string>:7: ShadowedPackageWarning: {folder / 'preprocessing' / '__init__.py'} has the name of pipeline's "
        f"container package 'preprocessing' and comes first on sys.path: pipeline loaded its own "
        f"({ROOT / 'preprocessing'}), so `import preprocessing` gives pipeline's package; rename yours (any name but "
        "containerlib, dataquality, evaluation, preprocessing, serving)",
    ]


def test_a_shadowing_module_imported_before_pipeline_is_refused_naming_it(tmp_path: Path) -> None:
    folder = user_folder(tmp_path)
    refused = python("import evaluation\nimport pipeline.linear_learner.inference", folder)
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1] == (
        f"ImportError: {folder / 'evaluation.py'} was imported as 'evaluation', the name of the container package "
        f"pipeline needs ({ROOT / 'evaluation'}): rename yours (any name but containerlib, dataquality, evaluation, "
        "preprocessing, serving), then restart the interpreter"
    )


def test_nothing_is_loaded_early_where_nothing_shadows(tmp_path: Path) -> None:
    """Without a shadowing module, ``import pipeline`` imports no container package (it stays fast)."""
    code = "import sys, pipeline; print(sorted(set(sys.modules) & {'containerlib', 'dataquality', 'evaluation', "
    code += "'preprocessing', 'serving'}))"
    done = python(code, tmp_path)
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "[]", "")
