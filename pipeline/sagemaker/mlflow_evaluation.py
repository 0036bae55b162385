"""Evaluate's report in a forwarded execution's MLflow run, as a local run's Evaluate child holds it: the report's
metrics and decision, ``evaluation.json`` and the plots drawn from it as artifacts. The report is read from the step's
S3 output (DescribeProcessingJob of the step's job, or of the job a cache hit reused; GetObject); the plots are drawn
where llpipe runs (the processing image has no matplotlib) by a renderer the caller hands in, as a backend does not
import the API that draws them (:func:`pipeline.api.plots.render_plots`)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from containerlib.s3_uri import split_s3_uri
from pipeline.core.names import EVALUATE, REPORT_NAME
from pipeline.core.tracking import RunWriter, decision_fields, report_metrics
from pipeline.sagemaker import aws

PlotRenderer = Callable[[Path, Path], list[Path]]  # (evaluation.json, a folder) -> the PNGs drawn into it
OUTPUT_NAME = "evaluation"  # Evaluate's processing output holding the report


@dataclass(frozen=True)
class Evaluation:
    """An execution's report and where it is in S3."""

    uri: str
    report: dict[str, Any]


def read_evaluation(session: Any, steps: list[dict[str, Any]]) -> Evaluation | None:
    """The report of the execution's Evaluate step once it succeeded, else None (and no request)."""
    step = next((item for item in steps if item["StepName"] == EVALUATE), None)
    arn = ((step or {}).get("Metadata") or {}).get("ProcessingJob", {}).get("Arn")
    if step is None or step.get("StepStatus") != "Succeeded" or not arn:
        return None
    name = arn.rsplit("/", 1)[-1]
    with aws.call(f"DescribeProcessingJob {name}"):
        described = session.client("sagemaker").describe_processing_job(ProcessingJobName=name)
    outputs = (described.get("ProcessingOutputConfig") or {}).get("Outputs", [])
    output = next((item for item in outputs if item.get("OutputName") == OUTPUT_NAME), None)
    if output is None:
        return None
    uri = output["S3Output"]["S3Uri"].rstrip("/") + "/" + REPORT_NAME
    bucket, key = split_s3_uri(uri)
    with aws.call(f"GetObject {uri}"):
        body = session.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
    return Evaluation(uri, json.loads(body))


def log_evaluation(
    writer: RunWriter,
    run_id: str,
    evaluation: Evaluation,
    new_params: Callable[[str, Mapping[str, str]], Mapping[str, str]],
    plots: PlotRenderer | None,
) -> None:
    """The report's metrics, the decision's params (those the run has not yet: ``new_params``) and tags, the report's
    S3 URI (``llpipe.report``); ``evaluation.json`` and, with a renderer, ``plots/*.png`` as artifacts."""
    params, tags = decision_fields(evaluation.report)
    tags["llpipe.report"] = evaluation.uri
    writer.batch(run_id, new_params(run_id, params), report_metrics(evaluation.report), tags)
    with tempfile.TemporaryDirectory(prefix="llpipe-evaluation-") as folder:
        path = Path(folder) / REPORT_NAME
        path.write_text(json.dumps(evaluation.report))
        writer.client.log_artifact(run_id, str(path))
        for plot in plots(path, Path(folder) / "plots") if plots else []:
            writer.client.log_artifact(run_id, str(plot), "plots")
