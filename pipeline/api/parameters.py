"""The pipeline parameters described for people: the table's rows with the value rule of each hyperparameter they
feed, for ``llpipe definition --params`` and the generated ``docs/reference/parameters.md``.

The table (``pipeline.definition.parameter_table``) and the hyperparameter rules (``pipeline.linear_learner``) are
wings of one floor that do not import each other; they meet here. Regenerate the reference with
``python -m pipeline.api.parameters > docs/reference/parameters.md``.
"""

from __future__ import annotations

from pipeline.definition.config import PipelineConfig
from pipeline.definition.parameter_table import described, markdown

__all__ = ["hyperparameter_rules", "parameter_reference", "parameter_rows"]

_NOT_A_VALUE = "\0"  # no hyperparameter takes it: every rule refuses it, saying what it allows


def hyperparameter_rules() -> dict[str, str]:
    """Each Linear Learner hyperparameter -> what it allows, as its own parser says when it refuses a value."""
    from pipeline.linear_learner.hyperparameters import SPECS

    rules: dict[str, str] = {}
    for name, (_default, parse) in SPECS.items():
        try:
            parse(_NOT_A_VALUE)
        except ValueError as refusal:
            rules[name] = str(refusal)
    return rules


def parameter_rows(config: PipelineConfig) -> list[dict[str, str]]:
    """Every declared parameter under ``config``: name, type, default, allowed, help and what it feeds."""
    return described(config, hyperparameter_rules())


def parameter_reference() -> str:
    """The Markdown reference of every parameter (``docs/reference/parameters.md``)."""
    return markdown(hyperparameter_rules())


if __name__ == "__main__":
    print(parameter_reference(), end="")
