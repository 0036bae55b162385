"""The public Python API is marked and pinned: ``pipeline``'s lazy exports and every ``pipeline.api`` module's
``__all__`` are listed here name by name, so a change to the public surface is a deliberate change of this test. The
command-line plumbing lives in ``pipeline.api._shared``, outside the API; there is one ``local_server``."""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest
from support import sources

import pipeline

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = [
    "Execution",
    "LocalExecution",
    "Predictor",
    "SageMakerExecution",
    "compare",
    "definition_dag",
    "deploy",
    "deploy_model",
    "executions",
    "get_execution",
    "get_pipeline",
    "plan",
    "run_local",
    "scaling_study",
    "serve_local",
    "start",
    "upsert",
]
# module -> its __all__, exactly
API = {
    "pipeline.api": [
        "compare",
        "deploy",
        "deploy_model",
        "executions",
        "get_execution",
        "run_local",
        "start",
        "upsert",
    ],
    "pipeline.api.comparison": [
        "NotComparableWarning",
        "abandoned_reason",
        "baseline_label",
        "changed_parameters",
        "data_label",
        "gate_label",
        "local_defaults",
        "recent_executions",
        "scored_rows_label",
        "scored_rows_warning",
        "side_by_side",
        "summary_row",
    ],
    "pipeline.api.dag": ["Dag", "StepState", "definition_dag", "execution_dag"],
    "pipeline.api.dag_svg": ["Box", "duration_text", "place", "render_svg"],
    "pipeline.api.data_quality": ["data_quality_view", "feature_summary"],
    "pipeline.api.drift_plots": ["plot_name", "render_drift_plots"],
    "pipeline.api.environments": ["processing_environments"],
    "pipeline.api.execution": [
        "Execution",
        "LocalExecution",
        "NoResultsError",
        "baseline_view",
        "coefficients_frame",
        "metrics_frame",
        "predictions_frame",
        "seconds_between",
        "steps_frame",
    ],
    "pipeline.api.frames": ["numeric_times", "write_frame"],
    "pipeline.api.html": ["baseline_sentence", "execution_html", "scaling_html", "steps_html"],
    "pipeline.api.linear_learner": ["channel_files", "channels", "train_linear_learner", "transform_linear_learner"],
    "pipeline.api.models": [
        "champion_comparison",
        "container_text",
        "local_describe",
        "local_list",
        "local_set_status",
        "package_name",
        "registry_db",
        "sagemaker_client",
        "sagemaker_describe",
        "sagemaker_list",
        "sagemaker_set_status",
    ],
    "pipeline.api.capacity": ["measure_folder", "measure_s3", "parse_rows", "parse_size", "plan"],
    "pipeline.api.parameters": ["hyperparameter_rules", "parameter_reference", "parameter_rows"],
    "pipeline.api.mlflow_comparison": ["RunView", "read_runs", "runs_side_by_side"],
    "pipeline.api.monitoring": ["TrafficReport", "VersionReport", "monitor_local", "parse_time", "window"],
    "pipeline.api.notebook": ["NotebookSteps", "PrintedSteps", "in_notebook", "progress_display"],
    "pipeline.api.plots": ["PlotError", "new_figure", "render_plots", "render_tuning_plot", "save_figure"],
    "pipeline.api.sagemaker_execution": ["SageMakerExecution"],
    "pipeline.api.scaling": [
        "ScalingStudy",
        "ScalingStudyError",
        "StudyRow",
        "check_shards",
        "sagemaker_scaling_study",
        "scaling_study",
        "study_on_sagemaker",
        "train_shards",
    ],
    "pipeline.api.serving": ["Predictor", "local_server", "serve_local"],
    "pipeline.api.tracking": [
        "default_tracking_uri",
        "epoch_losses",
        "log_execution",
        "logged_run",
        "track",
        "tracking_uri_of",
    ],
}
NOT_API: set[str] = set()  # modules of pipeline/api that are neither pinned nor private (none)
PLUMBING = (
    "split_options",
    "load_settings",
    "open_workdir",
    "local_source",
    "execute_local",
    "upsert_pipeline",
    "find_execution",
    "compare_runs",
    "deploy_version",
    "local_endpoints",
    "DEFAULT_WORKDIR",
    "PathLike",
)


def test_the_package_exports_exactly_the_pinned_names() -> None:
    assert pipeline.__all__ == PACKAGE
    namespace: dict[str, object] = {}
    exec("from pipeline import *", namespace)  # what a notebook's star import gets
    assert sorted(name for name in namespace if name != "__builtins__") == PACKAGE


def test_each_package_export_is_its_modules_public_name() -> None:
    for name, module in pipeline.EXPORTS.items():
        exported = getattr(pipeline, name)
        assert exported is getattr(importlib.import_module(module), name), name
        if module.startswith("pipeline.api"):  # get_pipeline is the definition's (pipeline.definition.build)
            assert name in importlib.import_module(module).__all__, (name, module)


@pytest.mark.parametrize("module", sorted(API))
def test_each_api_module_declares_exactly_the_pinned_names(module: str) -> None:
    loaded = importlib.import_module(module)
    assert loaded.__all__ == API[module]
    for name in loaded.__all__:  # each defined there, not re-exported from elsewhere
        assert getattr(loaded, name).__module__ == module, (module, name)


def test_every_api_module_is_pinned_or_private() -> None:
    found = {
        "pipeline.api" if path.stem == "__init__" else f"pipeline.api.{path.stem}"
        for path in (ROOT / "pipeline" / "api").glob("*.py")
        if not path.stem.startswith("_") or path.stem == "__init__"
    }
    assert found - NOT_API == set(API)


def test_the_command_line_plumbing_is_outside_the_api_namespace() -> None:
    import pipeline.api
    from pipeline.api import _shared

    assert [name for name in PLUMBING if hasattr(pipeline.api, name)] == []
    assert [name for name in PLUMBING if not hasattr(_shared, name)] == []
    commands = [
        path for path in sources.python_files("pipeline/cli") if "from pipeline.api._shared" in sources.text(path)
    ]
    assert len(commands) >= 10  # the commands take the plumbing from where it lives


def test_there_is_one_local_server_and_it_is_the_apis() -> None:
    defined = [
        str(path.relative_to(ROOT))
        for path in sources.python_files("pipeline")
        for node in sources.nodes(path)
        if isinstance(node, ast.FunctionDef) and node.name == "local_server"
    ]
    assert defined == ["pipeline/api/serving.py"]
    from pipeline.api.serving import local_server

    assert list(inspect.signature(local_server).parameters) == [
        "model_package",
        "port",
        "host",
        "endpoint_name",
        "variant",
        "capture_percentage",
        "unseen_categories",
        "workdir",
        "config",
    ]


def test_deploy_model_refuses_a_traffic_shift_before_reaching_sagemaker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The API's model deployment checks its arguments as ``llpipe deploy`` does, before any request."""
    from pipeline.api import deploy_model
    from pipeline.core.errors import UsageError

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # a request would fail differently
    with pytest.raises(UsageError) as refused:
        deploy_model(stage="staging", sagemaker=True, traffic="sideways", region="eu-west-1")
    assert str(refused.value) == "traffic 'sideways': expected one of all-at-once, canary"


def test_importing_the_api_stays_light() -> None:
    """A notebook's ``from pipeline.api import run_local`` loads no data or AWS library before it is used."""
    heavy = "('pandas', 'numpy', 'boto3', 'sagemaker')"
    script = f"import sys, pipeline.api; print(sorted(m for m in {heavy} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT)
    assert result.stdout.strip() == "[]"
