"""Local runs of part of the built definition: the real steps with their own arguments, only fewer of them, for a
test whose proof lies in the steps it keeps (a Loss is proven by Train up to Evaluate's report, a column order by
Preprocess's output) and not in the ones it leaves out (a data-quality job, a registration: a few seconds each)."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path

from pipeline.local.runner import LocalRun
from pipeline.local.workdir import Workdir

# The steps that train a model, use it and score it, up to Evaluate's report: without the data-quality check of the
# input (Train waits for it) and the gate with its registration, for a test whose proof is in the model, its scores
# or the cache of these steps
UP_TO_THE_REPORT = ("Preprocess", "Train", "CreateModel", "Transform", "Evaluate")


def partial_run(built: LocalRun, workdir: Path, steps: Collection[str]) -> LocalRun:
    """``built``'s definition with only the top-level ``steps`` (each one of its steps), run in ``workdir``; a kept
    step's DependsOn on a step left out is dropped (Train waits for DataQuality)."""
    definition = json.loads(built.definition_json)
    names = [step["Name"] for step in definition["Steps"]]
    assert set(steps) <= set(names), f"not steps of the definition: {sorted(set(steps) - set(names))}"
    definition["Steps"] = [step for step in definition["Steps"] if step["Name"] in steps]
    for step in definition["Steps"]:
        kept = [name for name in step.get("DependsOn") or [] if name in steps]
        if kept:
            step["DependsOn"] = kept
        else:
            step.pop("DependsOn", None)
    return LocalRun(built.config, Workdir(workdir), json.dumps(definition), built.uploads)
