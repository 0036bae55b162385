"""An execution on SageMaker in the same shape as a local one (:class:`pipeline.api.execution.Execution`), filled from
the service: status from DescribePipelineExecution, parameters from ListPipelineParametersForExecution, steps from
ListPipelineExecutionSteps, the report from the Evaluate job's output in S3 (DescribeProcessingJob names it), the
model from DescribeTrainingJob, predictions from the Transform job's input and output prefixes.

Nothing is read until asked for; a finished execution's answers are kept (they cannot change any more).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from containerlib.s3_uri import split_s3_uri
from pipeline.api.execution import Execution, NoResultsError, predictions_frame, seconds_between, steps_frame
from pipeline.core.names import (
    DATA_QUALITY,
    EVALUATE,
    QUALITY_GATE,
    REGISTER,
    REGRESSOR,
    REPORT_NAME,
    TRAIN,
    TRANSFORM,
    StepStatus,
)
from pipeline.sagemaker import aws
from pipeline.sagemaker.inspect import JOB_KINDS, execution_arn, execution_parameters
from pipeline.sagemaker.wait import TERMINAL_STATUSES, execution_steps

if TYPE_CHECKING:
    import pandas as pd

    from pipeline.core.tracking import MlflowRun
    from pipeline.definition.config import PipelineConfig

__all__ = ["SageMakerExecution"]

# ListPipelineExecutionSteps' Metadata key -> the step type of the definition
STEP_TYPES = {
    "ProcessingJob": "Processing",
    "TrainingJob": "Training",
    "TransformJob": "Transform",
    "QualityCheck": "QualityCheck",
    "Model": "Model",
    "RegisterModel": "RegisterModel",
    "Condition": "Condition",
    "Fail": "Fail",
}


class SageMakerExecution(Execution):
    """One execution of the deployed pipeline, by ARN."""

    backend = "sagemaker"

    def __init__(self, config: PipelineConfig, arn: str, session: Any = None) -> None:
        self.config = config
        self.arn = arn
        self.session = session or aws.session(config)
        self.sagemaker = self.session.client("sagemaker")
        self._described: dict[str, Any] | None = None
        self._steps: list[dict[str, Any]] | None = None
        self._report: dict[str, Any] | None = None
        self._definition: dict[str, Any] | None = None
        self._mlflow_run: MlflowRun | None = None

    @classmethod
    def find(cls, config: PipelineConfig, execution: str, session: Any = None) -> SageMakerExecution:
        """By ARN, or by the id at its end (an execution of the configured pipeline)."""
        session = session or aws.session(config)
        return cls(config, execution_arn(config, execution, session), session)

    @property
    def finished(self) -> bool:
        return self._described is not None and self._described["PipelineExecutionStatus"] in TERMINAL_STATUSES

    def refresh(self) -> SageMakerExecution:
        """Read the status again (DescribePipelineExecution); steps and report are read again when next asked."""
        with aws.call(f"DescribePipelineExecution {self.arn}"):
            self._described = self.sagemaker.describe_pipeline_execution(PipelineExecutionArn=self.arn)
        self._steps = None
        return self

    def _description(self) -> dict[str, Any]:
        if self._described is None or not self.finished:
            self.refresh()
        assert self._described is not None
        return self._described

    def wait(self, poll_seconds: float = 30.0, progress: bool | str = "auto") -> SageMakerExecution:
        """Poll until Succeeded, Failed or Stopped; in Jupyter a live step table (``progress``, as ``run_local``).
        With MLflow configured (``mlflow_arn`` or ``mlflow_tracking_uri``, tracking on) the finished execution is
        forwarded to it (:func:`pipeline.sagemaker.mlflow_metrics.forward_finished`): ``mlflow_run`` names the run,
        and a store that cannot be reached is one warning line on stderr."""
        import time

        from pipeline.api.notebook import in_notebook

        show = progress is True or (progress == "auto" and in_notebook())
        handle = None
        while True:
            self.refresh()
            if show:
                handle = self._show_steps(handle)
            if self.finished:
                self._forward_to_mlflow()
                return self
            time.sleep(poll_seconds)

    def _forward_to_mlflow(self) -> None:
        from pipeline.api.plots import render_plots
        from pipeline.sagemaker.mlflow_metrics import forward_finished

        def warn(message: str) -> None:
            print(f"Warning: {message}", file=sys.stderr, flush=True)

        forwarded = forward_finished(self.config, self.arn, self.session, warn, plots=render_plots)
        self._mlflow_run = forwarded or self._mlflow_run

    @property
    def mlflow_run(self) -> MlflowRun | None:
        """The execution's MLflow run (id, experiment, store, URL): the one ``wait()`` forwarded it as, else the
        parent run of the store tagged with its ARN (:func:`pipeline.sagemaker.mlflow_metrics.find_run`).
        None when tracking is off, no MLflow is configured (``mlflow_arn`` or ``mlflow_tracking_uri``: nothing is
        asked otherwise), it was not forwarded, or the store cannot be reached."""
        if self._mlflow_run is not None:
            return self._mlflow_run
        from pipeline.sagemaker.mlflow_metrics import find_run, forwarding_uri

        if forwarding_uri(self.config) is None:
            return None

        try:
            self._mlflow_run = find_run(self.config, self.arn, self._description(), self.config.mlflow_tracking_uri)
        except Exception:  # noqa: BLE001 - a link to show, never a reason for a view of the execution to fail
            return None
        return self._mlflow_run

    def _show_steps(self, handle: Any) -> Any:
        """One poll's view: in Jupyter the step table (a display updated in place), elsewhere one line on stderr."""
        from pipeline.api.html import steps_html
        from pipeline.api.notebook import in_notebook

        assert self._described is not None
        status, steps = self._described["PipelineExecutionStatus"], self.steps
        if not in_notebook():
            progress = ", ".join(f"{row.step} {row.status}" for row in steps.itertuples())
            print(f"{self.id}: {status}" + (f" ({progress})" if progress else ""), file=sys.stderr, flush=True)
            return None
        from IPython.display import HTML, display

        text = steps_html(f"Execution {self.id}: {status}", steps)
        if handle is None:
            return display(HTML(text), display_id=True)
        handle.update(HTML(text))
        return handle

    @property
    def id(self) -> str:
        return self.arn.rsplit("/", 1)[-1]

    def __repr__(self) -> str:  # no AWS call: the status last read, if any
        status = self._described["PipelineExecutionStatus"] if self._described else "status not read yet"
        return f"<SageMakerExecution {self.id}: {status}>"

    @property
    def status(self) -> str:
        return self._description()["PipelineExecutionStatus"]

    @property
    def failure_reason(self) -> str | None:
        return self._description().get("FailureReason")

    @property
    def parameters(self) -> dict[str, Any]:
        """The execution's parameter values as the service reports them (strings)."""
        return dict(execution_parameters(self.sagemaker, self.arn))

    @property
    def definition(self) -> dict[str, Any]:
        """The definition this execution ran (DescribePipelineDefinitionForExecution), read once."""
        if self._definition is None:
            with aws.call(f"DescribePipelineDefinitionForExecution {self.arn}"):
                answer = self.sagemaker.describe_pipeline_definition_for_execution(PipelineExecutionArn=self.arn)
            self._definition = json.loads(answer["PipelineDefinition"])
        return self._definition

    def _step_list(self) -> list[dict[str, Any]]:
        if self._steps is None:
            if self._described is None:  # the status first: steps read before it could miss one starting meanwhile
                self.refresh()
            self._steps = execution_steps(self.sagemaker, self.arn)
        return self._steps

    def _step(self, name: str) -> dict[str, Any] | None:
        return next((step for step in self._step_list() if step["StepName"] == name), None)

    @property
    def steps(self) -> pd.DataFrame:
        rows = []
        for step in self._step_list():
            metadata = step.get("Metadata") or {}
            kind = next((STEP_TYPES[key] for key in metadata if key in STEP_TYPES), "")
            source = (step.get("CacheHitResult") or {}).get("SourcePipelineExecutionArn")
            rows.append(
                {
                    "step": step["StepName"],
                    "type": kind,
                    "status": step.get("StepStatus", ""),
                    "seconds": seconds_between(step.get("StartTime"), step.get("EndTime")),
                    "cache_hit": source.rsplit("/", 1)[-1] if source else None,
                }
            )
        return steps_frame(rows)

    def _job_arn(self, step_name: str, kind: str) -> str | None:
        step = self._step(step_name)
        if step is None or step.get("StepStatus") != StepStatus.SUCCEEDED:
            return None
        return ((step.get("Metadata") or {}).get(kind) or {}).get("Arn")

    def _describe(self, kind: str, arn: str) -> dict[str, Any]:
        """Describe{Processing,Training,Transform}Job of a step's job ARN."""
        job = JOB_KINDS[kind]
        name = arn.rsplit("/", 1)[-1]
        with aws.call(f"{job.describe} {name}"):
            return getattr(self.sagemaker, job.describe)(**{job.name_key: name})

    @property
    def report_uri(self) -> str | None:
        """``s3://.../evaluation.json`` of the Evaluate job (of the job a cache hit reused), once it succeeded."""
        arn = self._job_arn(EVALUATE, "ProcessingJob")
        if arn is None:
            return None
        outputs = self._describe("ProcessingJob", arn).get("ProcessingOutputConfig", {}).get("Outputs", [])
        output = next((item for item in outputs if item.get("OutputName") == "evaluation"), None)
        return output["S3Output"]["S3Uri"].rstrip("/") + "/" + REPORT_NAME if output else None

    @property
    def report(self) -> dict[str, Any] | None:
        if self._report is None:
            uri = self.report_uri
            if uri is None:
                return None
            bucket, key = _split(uri)
            with aws.call(f"GetObject {uri}"):
                body = self.session.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
            self._report = json.loads(body)
        return self._report

    def gate_passed(self) -> bool | None:
        step = self._step(QUALITY_GATE)
        if step is None or step.get("StepStatus") != StepStatus.SUCCEEDED:
            return None
        outcome = ((step.get("Metadata") or {}).get("Condition") or {}).get("Outcome")
        return None if outcome is None else str(outcome).lower() == "true"

    @property
    def model_package(self) -> dict[str, Any] | None:
        arn = self._job_arn(REGISTER, "RegisterModel")
        if arn is None:
            return None
        with aws.call(f"DescribeModelPackage {arn}"):
            described = self.sagemaker.describe_model_package(ModelPackageName=arn)
        return {
            "group": described.get("ModelPackageGroupName"),
            "version": described.get("ModelPackageVersion"),
            "arn": arn,
            "approval_status": described.get("ModelApprovalStatus"),
        }

    @property
    def data_quality(self) -> dict[str, Any] | None:
        """The QualityCheck step's metadata (its baselines, its violation report) and the files it points to."""
        from pipeline.api.data_quality import data_quality_view

        step = self._step(DATA_QUALITY)
        metadata = ((step or {}).get("Metadata") or {}).get("QualityCheck")
        return data_quality_view(metadata, self._read_json) if metadata else None

    @property
    def scaling(self) -> list[dict[str, Any]]:
        """The Train step's training job's scaling record, from DescribeTrainingJob, the train channel's listing,
        CloudWatch GetMetricData and FilterLogEvents (:mod:`pipeline.sagemaker.scaling`)."""
        from pipeline.sagemaker.scaling import jobs_scaling

        arn = self._job_arn(TRAIN, "TrainingJob")
        return jobs_scaling(self.session, [(TRAIN, arn.rsplit("/", 1)[-1])]) if arn else []

    def _read_json(self, uri: str) -> Any:
        """The JSON object at ``uri``, None when there is none (a check without a violation report)."""
        bucket, key = _split(uri)
        s3 = self.session.client("s3")
        with aws.call(f"GetObject {uri}"):
            try:
                return json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
            except s3.exceptions.NoSuchKey:
                return None

    @property
    def model_path(self) -> str | None:
        """The S3 URI of the trained ``model.tar.gz``."""
        arn = self._job_arn(TRAIN, "TrainingJob")
        return self._describe("TrainingJob", arn).get("ModelArtifacts", {}).get("S3ModelArtifacts") if arn else None

    @property
    def plots(self) -> list[Path]:
        """The report's plots, rendered into a temporary folder (the report itself stays in S3)."""
        from pipeline.api.plots import render_plots

        report = self.report
        if report is None:
            return []
        folder = Path(tempfile.gettempdir()) / "llpipe-plots" / self.id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / REPORT_NAME).write_text(json.dumps(report))
        return render_plots(folder / REPORT_NAME, folder / "plots")

    def predictions(self) -> pd.DataFrame:
        """The Transform job's input shards and ``.out`` files, downloaded, read as Evaluate reads them, with the row
        ids Preprocess wrote beside its summary."""
        arn = self._job_arn(TRANSFORM, "TransformJob")
        if arn is None:
            raise NoResultsError(f"execution {self.id} has no predictions: its {TRANSFORM} step has not succeeded")
        described = self._describe("TransformJob", arn)
        test_uri = described["TransformInput"]["DataSource"]["S3DataSource"]["S3Uri"]
        output_uri = described["TransformOutput"]["S3OutputPath"]
        predictor_type = str(self.parameters.get("PredictorType", REGRESSOR))
        # the test shards' row ids are in Preprocess's summary output, the test output's sibling
        summary_uri = test_uri.rstrip("/").rsplit("/", 1)[0] + "/summary"
        with tempfile.TemporaryDirectory(prefix="llpipe-predictions-") as folder:
            test_dir, output_dir = Path(folder) / "test", Path(folder) / "predictions"
            summary_dir = Path(folder) / "summary"
            self._download(test_uri, test_dir)
            self._download(output_uri, output_dir)
            self._download(summary_uri, summary_dir)
            return predictions_frame(output_dir, test_dir, predictor_type, summary_dir)

    def _download(self, uri: str, folder: Path) -> None:
        s3 = self.session.client("s3")
        bucket, prefix = _split(uri.rstrip("/") + "/")
        request: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
        with aws.call(f"downloading {uri}"):
            while True:
                page = s3.list_objects_v2(**request)
                for item in page.get("Contents", []):
                    target = folder / item["Key"][len(prefix) :]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read())
                if not page.get("IsTruncated"):
                    return
                request["ContinuationToken"] = page["NextContinuationToken"]


def _split(uri: str) -> tuple[str, str]:
    return split_s3_uri(uri)
