"""Handcrafted pipeline definitions for the interpreter's tests: processing steps whose test job writes a report,
and the definition around them (the interpreter's tests and the signal tests' child processes build them)."""

from __future__ import annotations

from typing import Any

PARAMETERS = [
    {"Name": "Threshold", "Type": "Float", "DefaultValue": 0.5},
    {"Name": "Instances", "Type": "Integer", "DefaultValue": 2},
    {"Name": "Bucket", "Type": "String", "DefaultValue": "bkt", "EnumValues": ["bkt", "other"]},
    {"Name": "Flag", "Type": "Boolean", "DefaultValue": False},
]


def processing(name: str, gate: Any = 0.9, depends_on: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    """A processing step whose test job writes ``report.json`` with ``gate.value``."""
    step = {
        "Name": name,
        "Type": "Processing",
        "Arguments": {
            "AppSpecification": {"ImageUri": "image", "ContainerArguments": extra.pop("arguments", [])},
            "Environment": {"GATE": gate},
            "ProcessingOutputConfig": {
                "Outputs": [
                    {
                        "OutputName": "report",
                        "S3Output": {
                            "S3Uri": {
                                "Std:Join": {
                                    "On": "/",
                                    "Values": [
                                        "s3://bkt/out",
                                        {"Get": "Execution.PipelineExecutionId"},
                                        name,
                                    ],
                                }
                            },
                            "LocalPath": "/opt/ml/processing/report",
                        },
                    }
                ]
            },
        },
        "PropertyFiles": [{"PropertyFileName": "Report", "OutputName": "report", "FilePath": "report.json"}],
    }
    if depends_on:
        step["DependsOn"] = depends_on
    step.update(extra)
    return step


def definition(*steps: dict[str, Any], parameters: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A definition of these steps, with PARAMETERS unless others are given."""
    return {
        "Version": "2020-12-01",
        "Parameters": PARAMETERS if parameters is None else parameters,
        "Steps": list(steps),
    }
