"""The pipeline parameters the definition declares: the SDK objects of the rows of ``parameter_table.TABLE``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.definition.config import PipelineConfig
from pipeline.definition.parameter_table import TABLE


@dataclass(frozen=True)
class Parameters:
    """The declared SDK parameters by attribute (``params.epochs`` is ``Epochs``), in declaration order."""

    declared: dict[str, Any]

    @classmethod
    def create(cls, config: PipelineConfig) -> Parameters:
        """Declare every parameter of the table (SDK objects; call inside :func:`offline_sdk`)."""
        return cls({row.attribute: row.declare(config) for row in TABLE})

    def __getattr__(self, attribute: str) -> Any:
        declared = self.__dict__.get("declared", {})
        if attribute not in declared:
            raise AttributeError(f"no pipeline parameter {attribute!r}: the table declares {', '.join(declared)}")
        return declared[attribute]

    def all(self) -> list[Any]:
        """Every parameter, in declaration order (the order the definition lists them)."""
        return list(self.declared.values())
