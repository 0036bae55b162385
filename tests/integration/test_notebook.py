"""``notebooks/quickstart.ipynb`` runs end to end in a real Jupyter kernel (nbclient + ipykernel), this virtualenv's
Python named explicitly as the kernel; its SageMaker cells run against a moto server standing in for AWS."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import boto3
import nbformat
import pytest
from nbclient import NotebookClient
from support.moto_additions import moto_server

from pipeline.definition.build import build_definition
from pipeline.definition.config import load_config

REPOSITORY = Path(__file__).resolve().parents[2]
NOTEBOOK = REPOSITORY / "notebooks" / "quickstart.ipynb"
BUCKET = "quickstart-bucket"
ROLE = "arn:aws:iam::123456789012:role/QuickstartRole"
KERNEL = "llpipe-test-python"


def test_the_committed_notebook_has_no_outputs() -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code, "the notebook has code cells"
    for cell in code:
        assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]


@pytest.fixture(scope="module")
def moto_endpoint() -> Any:
    with moto_server() as url:
        yield url


def aws(name: str, endpoint: str) -> Any:
    return boto3.client(
        name, endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


def this_python_as_kernel(folder: Path) -> Path:
    """A kernelspec whose argv is this interpreter, so a fresh virtualenv (CI) needs no registered kernel."""
    spec = folder / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "llpipe tests", "language": "python"}))
    return folder


def kernel_environment(endpoint: str) -> dict[str, str]:
    """This process's environment (the shared cache of image environments, this session's definition cache) with
    AWS pointed at the moto server."""
    keep = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    return {
        **keep,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "ARTIFACT_BUCKET": BUCKET,
        "SAGEMAKER_PIPELINE_ROLE_ARN": ROLE,
        "MPLBACKEND": "Agg",
    }


def html_outputs(cell: Any) -> str:
    return "\n".join(output.get("data", {}).get("text/html", "") for output in cell.outputs)


def test_the_quickstart_runs_end_to_end_in_a_jupyter_kernel(
    moto_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    aws("s3", moto_endpoint).create_bucket(Bucket=BUCKET)
    monkeypatch.setenv("JUPYTER_PATH", str(this_python_as_kernel(tmp_path / "jupyter")))
    run_dir = tmp_path / "notebooks"
    run_dir.mkdir()
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(notebook, kernel_name=KERNEL, timeout=300, resources={"metadata": {"path": str(run_dir)}})
    client.execute(env=kernel_environment(moto_endpoint))  # raises CellExecutionError on any failing cell

    cells = {cell.source.split("\n", 1)[0]: cell for cell in notebook.cells if cell.cell_type == "code"}
    first_run = next(cell for source, cell in cells.items() if source.startswith("from pipeline import compare"))
    live = [output for output in first_run.outputs if output.output_type == "display_data"]
    assert live and "<table" in live[0].data["text/html"], "the live step table is a display updated in place"
    assert "\x1b[" not in json.dumps(first_run.outputs), "no terminal escape codes in the notebook"
    shown = html_outputs(first_run)
    assert "Succeeded" in shown and 'src="data:image/png;base64,' in shown
    assert "auc" in html_outputs(cells["first.metrics"])
    [images] = [cell for source, cell in cells.items() if source.startswith("from IPython.display import Image")]
    assert [output.output_type for output in images.outputs] == ["display_data"] * 3
    predictions = next(cell for source, cell in cells.items() if source.startswith("predictions ="))
    assert "test rows, accuracy" in predictions.outputs[0].text
    comparison = next(cell for source, cell in cells.items() if source.startswith("comparison ="))
    assert "parameter: LearningRate" in html_outputs(comparison)
    assert len(list((run_dir / ".llpipe" / "executions").iterdir())) == 2

    sagemaker = aws("sagemaker", moto_endpoint)
    deployed = sagemaker.describe_pipeline(PipelineName="linear-learner-pipeline")
    assert deployed["RoleArn"] == ROLE
    assert deployed["PipelineDescription"] == "deployed from the quickstart notebook"
    code = aws("s3", moto_endpoint).list_objects_v2(Bucket=BUCKET, Prefix="linear-learner-pipeline/code/")
    uploaded = sorted(f"s3://{BUCKET}/{item['Key']}" for item in code["Contents"])
    built = build_definition(load_config({"bucket": BUCKET, "role_arn": ROLE, "region": "us-east-1"}, env={}))
    expected = sorted(uri for uri in built.uploads if uri.startswith(f"s3://{BUCKET}/linear-learner-pipeline/code/"))
    assert uploaded == expected and expected, "every code bundle file, where the definition expects it"
    [summary] = sagemaker.list_pipeline_executions(PipelineName="linear-learner-pipeline")["PipelineExecutionSummaries"]
    parameters = sagemaker.list_pipeline_parameters_for_execution(PipelineExecutionArn=summary["PipelineExecutionArn"])
    values = {item["Name"]: item["Value"] for item in parameters["PipelineParameters"]}
    assert values["InputDataUrl"] == f"s3://{BUCKET}/quickstart/data/"
    assert values["LabelColumn"] == "target" and values["PredictorType"] == "binary_classifier"
    assert len(values["DataVersion"]) == 16
    started = next(cell for source, cell in cells.items() if source.startswith("boto3.client"))
    assert summary["PipelineExecutionArn"].rsplit("/", 1)[-1] in started.outputs[0].text
