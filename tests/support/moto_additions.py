"""A moto server on 127.0.0.1 with the one SageMaker Pipelines call moto lacks and the commands need.

moto implements CreatePipeline, StartPipelineExecution, DescribePipelineExecution and
ListPipelineParametersForExecution but not ListPipelineExecutionSteps. Its executions run no steps and end
Succeeded at once; the addition answers with the steps a test put in ``STEPS`` for the execution, else none, or for
an execution a test marked Failed the one failed step the service would report; unknown executions fail as on the
service.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from moto.server import ThreadedMotoServer

FAILED_STEP = {"StepName": "Train", "StepStatus": "Failed", "FailureReason": "ClientError: feature_dim mismatch"}
STEPS: dict[str, list[dict[str, Any]]] = {}  # execution ARN -> the steps a test says it ran


def list_pipeline_execution_steps(self: Any) -> Any:
    from moto.core.responses import ActionResult

    arn = self._get_param("PipelineExecutionArn")
    status = self.sagemaker_backend.describe_pipeline_execution(arn)["PipelineExecutionStatus"]
    steps = STEPS.get(arn, [FAILED_STEP] if status == "Failed" else [])
    return ActionResult({"PipelineExecutionSteps": steps})


@contextmanager
def moto_server() -> Iterator[str]:
    """A ThreadedMotoServer (in this process, so tests can reach its backends) on a free port; yields its URL."""
    from moto.sagemaker.responses import SageMakerResponse

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SageMakerResponse, "list_pipeline_execution_steps", list_pipeline_execution_steps, raising=False)
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        try:
            host, port = server.get_host_and_port()
            yield f"http://{host}:{port}"
        finally:
            server.stop()
