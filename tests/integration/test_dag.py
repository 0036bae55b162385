"""The picture of the DAG (issue 38): the graph of the real built definition (SageMaker's edges, the Condition's
branches, the tuning variant), its layers, the SVG of real local runs (a gate failure, then a run with cache hits),
the terminal form at 80 columns, the commands that write and print it, and a SageMaker execution's picture from the
service's records."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from support.aws_stubs import StubbedSession
from support.settings import fast

from pipeline import cli
from pipeline.api import run_local
from pipeline.api.dag import NOT_STARTED, Dag, StepState, definition_dag
from pipeline.api.execution import LocalExecution
from pipeline.api.sagemaker_execution import SageMakerExecution
from pipeline.core.dag import Edge, Node, crossings, definition_graph, layered, longest_path_layers
from pipeline.core.errors import DefinitionError, UsageError
from pipeline.definition.build import build_definition
from pipeline.definition.config import PipelineConfig

SVG = "{http://www.w3.org/2000/svg}"
FAST = fast(Epochs=2, MiniBatchSize=100)
# the edges SageMaker draws for the built pipeline: DependsOn (Train after DataQuality), every property reference,
# and the QualityGate's branches; "Train" is "Tune" when tuning is on
EDGES = [
    ("Preprocess", "DataQuality", ""),
    ("Preprocess", "Train", ""),
    ("DataQuality", "Train", ""),
    ("Preprocess", "CreateModel", ""),
    ("Train", "CreateModel", ""),
    ("Preprocess", "Transform", ""),
    ("CreateModel", "Transform", ""),
    ("Preprocess", "Evaluate", ""),
    ("Train", "Evaluate", ""),  # the model artifact, whose coefficients the report lists
    ("Transform", "Evaluate", ""),
    ("Evaluate", "QualityGate", ""),
    ("Preprocess", "Register", ""),
    ("DataQuality", "Register", ""),
    ("Train", "Register", ""),
    ("Evaluate", "Register", ""),
    ("QualityGate", "Register", "true"),
    ("Evaluate", "QualityGateFailed", ""),
    ("QualityGate", "QualityGateFailed", "false"),
]
TYPES = {
    "Preprocess": "Processing",
    "DataQuality": "QualityCheck",
    "Train": "Training",
    "CreateModel": "Model",
    "Transform": "Transform",
    "Evaluate": "Processing",
    "QualityGate": "Condition",
    "Register": "RegisterModel",
    "QualityGateFailed": "Fail",
}


@pytest.fixture(scope="module")
def definition() -> dict[str, Any]:
    return json.loads(build_definition(PipelineConfig()).definition_json)


def edges_of(graph: Any) -> list[tuple[str, str, str]]:
    return [(edge.source, edge.target, edge.label) for edge in graph.edges]


def test_the_built_definitions_graph_has_sagemakers_edges_and_the_conditions_branches(definition: dict) -> None:
    graph = definition_graph(definition)
    assert graph.nodes == tuple(Node(name, kind) for name, kind in TYPES.items())
    assert edges_of(graph) == EDGES
    assert longest_path_layers(graph) == {
        "Preprocess": 0,
        "DataQuality": 1,
        "Train": 2,
        "CreateModel": 3,
        "Transform": 4,
        "Evaluate": 5,
        "QualityGate": 6,
        "Register": 7,
        "QualityGateFailed": 7,
    }


def test_with_tuning_on_the_tuning_step_takes_trains_place_in_the_graph() -> None:
    """The model is the tuning step's; Train still trains the untuned defaults, which Evaluate scores beside it."""
    tuned = json.loads(build_definition(PipelineConfig(tuning_max_jobs=2)).definition_json)
    graph = definition_graph(tuned)
    rename = {"Train": "Tune"}
    names = [rename.get(name, name) for name in TYPES]
    assert [node.name for node in graph.nodes] == [*names[:3], "Train", *names[3:]]
    assert next(node.type for node in graph.nodes if node.name == "Tune") == "Tuning"
    defaults = {("Preprocess", "Train", ""), ("DataQuality", "Train", ""), ("Train", "Evaluate", "")}
    expected = {(rename.get(s, s), rename.get(t, t), label) for s, t, label in EDGES} | defaults
    # Register reads the kept model's artifact (tuned or the defaults') from Evaluate's report, not from Tune
    expected -= {("Tune", "Register", "")}
    assert set(edges_of(graph)) == expected


def step(name: str, kind: str = "Processing", **fields: Any) -> dict[str, Any]:
    return {"Name": name, "Type": kind, "Arguments": {}, **fields}


def test_edges_come_from_depends_on_references_anywhere_top_level_values_and_branches() -> None:
    definition = {
        "Steps": [
            step("A"),
            step("B", DependsOn=["A"]),
            step("C", Arguments={"Deep": [{"X": {"Std:Join": {"Values": [{"Get": "Steps.B.Props.Uri"}]}}}]}),
            step("Q", "QualityCheck", SkipCheck={"Get": "Steps.A.Properties.Flag"}),
            step(
                "Gate",
                "Condition",
                Arguments={
                    "Conditions": [{"Type": "Equals", "LeftValue": {"Get": "Steps.C.Out"}, "RightValue": 1}],
                    "IfSteps": [step("Yes", Arguments={"M": {"Get": "Steps.C.Model"}})],
                    "ElseSteps": [step("No", "Fail", DependsOn=["Gate"])],
                },
            ),
        ]
    }
    graph = definition_graph(definition)
    assert edges_of(graph) == [
        ("A", "B", ""),
        ("B", "C", ""),
        ("A", "Q", ""),
        ("C", "Gate", ""),
        ("C", "Yes", ""),
        ("Gate", "Yes", "true"),
        ("Gate", "No", "false"),  # the branch's label wins over the same pair's DependsOn
    ]
    assert [edge.source for edge in graph.upstream("Yes")] == ["C", "Gate"]


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([step("A", DependsOn=["Nowhere"])], "step A depends on or reads unknown step(s): Nowhere"),
        ([step("A", Arguments={"X": {"Get": "Steps.Gone.Y"}})], "step A depends on or reads unknown step(s): Gone"),
        ([step("A"), step("A")], "duplicate step name(s): A"),
    ],
)
def test_a_definition_the_graph_cannot_be_drawn_from_is_named(steps: list, message: str) -> None:
    with pytest.raises(DefinitionError) as raised:
        definition_graph({"Steps": steps})
    assert str(raised.value) == message


def test_a_cycle_is_named_with_its_path() -> None:
    graph = definition_graph(
        {"Steps": [step("A", DependsOn=["C"]), step("B", DependsOn=["A"]), step("C", DependsOn=["B"])]}
    )
    with pytest.raises(DefinitionError) as raised:
        layered(graph)
    assert str(raised.value) == "dependency cycle: A -> C -> B -> A"


def test_long_edges_of_one_step_share_a_lane_and_the_ordering_removes_avoidable_crossings() -> None:
    # defined in an order that crosses: X1 under B, X2 under A, but A feeds X1 and B feeds X2
    graph = definition_graph(
        {
            "Steps": [
                step("A"),
                step("B"),
                step("X2", DependsOn=["B"]),
                step("X1", DependsOn=["A"]),
                step("End1", DependsOn=["X1", "A"]),
                step("End2", DependsOn=["X2", "A"]),
            ]
        }
    )
    drawn = layered(graph)
    assert drawn.layers[1] in (("X1", "A@1", "X2"), ("A@1", "X1", "X2"))
    assert drawn.waypoints == {"A@1"}  # one lane for both long edges of A
    assert drawn.routes[Edge("A", "End1")] == ("A", "A@1", "End1")
    assert drawn.routes[Edge("A", "End2")] == ("A", "A@1", "End2")
    assert drawn.layers[0] == ("A", "B") and crossings(drawn.layers, drawn.links) == 0


def boxes(svg: str) -> dict[str, ElementTree.Element]:
    """The step boxes of an SVG document (parsed as XML: a parse error fails the test), by step name."""
    root = ElementTree.fromstring(svg)
    assert root.tag == SVG + "svg"
    return {group.get("data-step"): group for group in root.iter(SVG + "g") if group.get("class") == "step"}


def texts(group: ElementTree.Element) -> list[str]:
    return [text.text or "" for text in group.iter(SVG + "text")]


def test_the_definitions_picture_has_one_box_per_step_and_each_edge_without_statuses(definition: dict) -> None:
    dag = definition_dag(definition, title="Pipeline linear-learner-pipeline")
    svg = dag.svg()
    found = boxes(svg)
    assert list(found) == list(TYPES)  # drawn layer by layer, in the definition's order within a layer here
    assert {name: texts(group) for name, group in found.items()} == {name: [name, kind] for name, kind in TYPES.items()}
    root = ElementTree.fromstring(svg)
    drawn = [
        (path.get("data-source"), path.get("data-target")) for path in root.iter(SVG + "path") if path.get("class")
    ]
    assert drawn == [(source, target) for source, target, _ in EDGES]
    labels = [text.text for text in root.iter(SVG + "text") if text.get("class") == "label"]
    assert labels == ["true", "false"]
    assert dag._repr_svg_() == svg


def test_boxes_do_not_overlap_in_a_layer(definition: dict) -> None:
    root = ElementTree.fromstring(definition_dag(definition).svg())
    rectangles = [
        (float(rect.get("x")), float(rect.get("y")), float(rect.get("width")))
        for group in root.iter(SVG + "g")
        for rect in group.iter(SVG + "rect")
    ]
    for index, (x, y, width) in enumerate(rectangles):
        for other_x, other_y, _ in rectangles[index + 1 :]:
            if other_y == y:
                assert abs(other_x - x) >= width, (x, other_x)


def noisy_frame() -> pd.DataFrame:
    """A binary table no model separates perfectly (AUC < 1), so MetricThreshold=1.0 fails the gate."""
    rng = np.random.default_rng(7)
    features = rng.normal(size=(600, 4))
    label = (features @ [1.5, -1.0, 0.5, 0.0] + rng.normal(scale=1.0, size=600) > 0).astype(int)
    return pd.DataFrame(features, columns=["a", "b", "c", "d"]).assign(label=label)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalExecution, LocalExecution, Path]:
    """A run whose gate fails (MetricThreshold 1.0), then one on the same data that passes and reuses its cache."""
    workdir = tmp_path_factory.mktemp("dag")
    frame = noisy_frame()
    failed = run_local(
        frame, "label", "binary_classifier", workdir=workdir, progress=False, MetricThreshold=1.0, **FAST
    )
    cached = run_local(
        frame, "label", "binary_classifier", workdir=workdir, progress=False, MetricThreshold=0.5, **FAST
    )
    return failed, cached, workdir


def statuses(svg: str) -> dict[str, str]:
    return {name: group.get("data-status") for name, group in boxes(svg).items()}


def test_a_gate_failure_shows_the_fail_step_failed_and_register_skipped(runs: tuple) -> None:
    failed, _, _ = runs
    assert failed.status == "Failed"
    svg = failed.dag.svg()
    assert statuses(svg) == {
        **{name: "Succeeded" for name in TYPES},
        "Register": "Skipped",
        "QualityGateFailed": "Failed",
    }
    found = boxes(svg)
    seconds = failed.steps.set_index("step")["seconds"]
    assert texts(found["Evaluate"]) == ["Evaluate", "Processing", f"Succeeded · {seconds['Evaluate']:.1f} s"]
    assert texts(found["Register"]) == ["Register", "RegisterModel", "Skipped"]
    assert texts(found["QualityGateFailed"])[2].startswith("Failed · ")
    fill = {name: group.find(SVG + "rect").get("fill") for name, group in found.items()}
    assert (fill["QualityGateFailed"], fill["Register"], fill["Train"]) == ("#fce8e6", "#f1f3f4", "#e6f4ea")
    assert ElementTree.fromstring(svg).find(SVG + "text").text == f"Execution {failed.id}: Failed"


def test_cache_hits_name_the_execution_their_results_came_from(runs: tuple) -> None:
    failed, cached, _ = runs
    found = boxes(cached.dag.svg())
    hits = {name for name, group in found.items() if any(t.startswith("cached from") for t in texts(group))}
    assert hits == {"Preprocess", "Train", "Transform"}
    assert texts(found["Train"])[3] == f"cached from {failed.id}"
    assert statuses(cached.dag.svg())["Register"] == "Succeeded"
    assert statuses(cached.dag.svg())["QualityGateFailed"] == "Skipped"


def test_jupyter_shows_the_picture_in_the_executions_html(runs: tuple) -> None:
    failed, _, _ = runs
    html = failed._repr_html_()
    svg = html[html.index("<svg") : html.index("</svg>") + len("</svg>")]
    assert statuses(svg)["QualityGateFailed"] == "Failed"


def test_execution_show_writes_the_svg_then_shows_the_execution(runs: tuple, tmp_path: Path, capsys) -> None:
    failed, _, workdir = runs
    target = tmp_path / "pictures" / "dag.svg"
    target.parent.mkdir()
    code = cli.main(["execution", "show", failed.id, "--workdir", str(workdir), "--dag", str(target)])
    captured = capsys.readouterr()
    assert code == 0
    assert captured.err.strip() == f"wrote the DAG picture {target}"
    assert captured.out.startswith(f"Execution {failed.id} of linear-learner-pipeline: Failed")
    assert target.read_text() == failed.dag.svg()


def test_execution_show_dag_dash_prints_the_layers_at_80_columns(runs: tuple, capsys, monkeypatch) -> None:
    _, cached, workdir = runs
    monkeypatch.setenv("COLUMNS", "80")
    assert cli.main(["execution", "show", cached.id, "--workdir", str(workdir), "--dag", "-"]) == 0
    lines = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    assert max(len(line) for line in lines) <= 80
    assert lines[0] == f"Execution {cached.id}: Succeeded"
    rows = [line.split() for line in lines if line[:4].strip().isdigit()]
    assert [(row[0], row[1]) for row in rows] == [
        ("1", "Preprocess"),
        ("2", "DataQuality"),
        ("3", "Train"),
        ("4", "CreateModel"),
        ("5", "Transform"),
        ("6", "Evaluate"),
        ("7", "QualityGate"),
        ("8", "Register"),
        ("8", "QualityGateFailed"),
    ]
    assert rows[0][2:5] == ["✓", "Succeeded", f"{cached.steps['seconds'][0]:.1f}"]
    text = "\n".join(lines)
    assert text.count(f"cached from {runs[0].id}") == 3
    assert "○ Skipped" in text and "QualityGate (true)" in text


def test_execution_show_refuses_dag_dash_with_json(runs: tuple, capsys) -> None:
    _, cached, workdir = runs
    assert cli.main(["execution", "show", cached.id, "--workdir", str(workdir), "--json", "--dag", "-"]) == 2
    assert "--dag - prints the DAG in the terminal; with --json give a file: --dag FILE.svg" in capsys.readouterr().err


def test_llpipe_definition_dag_writes_the_definitions_picture(tmp_path: Path, capsys, definition: dict) -> None:
    target = tmp_path / "definition.svg"
    assert cli.main(["definition", "--dag", str(target)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.strip() == f"wrote the DAG picture {target}"
    svg = target.read_text()
    assert statuses(svg) == {name: "" for name in TYPES}
    assert svg == definition_dag(definition, title="Pipeline linear-learner-pipeline").svg()
    assert definition_dag().svg() == svg  # the API builds the same definition from the same (default) settings


def test_llpipe_definition_dag_dash_prints_steps_and_what_each_runs_after(capsys) -> None:
    assert cli.main(["definition", "--dag", "-"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].strip() == "Pipeline linear-learner-pipeline"
    assert max(len(line.rstrip()) for line in lines) <= 80
    header = next(line.split() for line in lines if line.strip().startswith("#"))
    assert header == ["#", "step", "after"]  # no status column without an execution


ARN = "arn:aws:sagemaker:us-west-2:123456789012:pipeline/linear-learner-pipeline/execution/abc123def456"
SOURCE = "arn:aws:sagemaker:us-west-2:123456789012:pipeline/linear-learner-pipeline/execution/0123456789ab"


def test_a_sagemaker_execution_is_drawn_from_its_definition_and_step_records(definition: dict) -> None:
    """DescribePipelineDefinitionForExecution gives the graph, ListPipelineExecutionSteps the statuses; a step the
    service lists no record of has not started."""
    session = StubbedSession("sagemaker")
    stub = session.stubs["sagemaker"]
    started = datetime(2026, 12, 1, 1, 0, tzinfo=timezone.utc)
    stub.add_response(
        "describe_pipeline_definition_for_execution",
        {"PipelineDefinition": json.dumps(definition), "CreationTime": started},
        {"PipelineExecutionArn": ARN},
    )
    running = {"PipelineExecutionArn": ARN, "PipelineExecutionStatus": "Executing"}
    stub.add_response("describe_pipeline_execution", running, {"PipelineExecutionArn": ARN})
    records = [
        {
            "StepName": "Preprocess",
            "StartTime": started,
            "EndTime": started + timedelta(seconds=3),
            "StepStatus": "Succeeded",
            "Metadata": {"ProcessingJob": {"Arn": "arn:aws:sagemaker:us-west-2:123456789012:processing-job/p"}},
            "CacheHitResult": {"SourcePipelineExecutionArn": SOURCE},
        },
        {
            "StepName": "DataQuality",
            "StartTime": started,
            "EndTime": started + timedelta(seconds=95),
            "StepStatus": "Succeeded",
            "Metadata": {"QualityCheck": {"CheckType": "DATA_QUALITY"}},
        },
        {"StepName": "Train", "StartTime": started, "StepStatus": "Executing", "Metadata": {}},
    ]
    stub.add_response(
        "list_pipeline_execution_steps",
        {"PipelineExecutionSteps": records},
        {"PipelineExecutionArn": ARN, "SortOrder": "Ascending"},
    )
    stub.add_response("describe_pipeline_execution", running, {"PipelineExecutionArn": ARN})
    execution = SageMakerExecution(PipelineConfig(region="us-west-2", bucket="studio-bucket"), ARN, session)
    dag = execution.dag
    session.verify()
    assert dag.title == "Execution abc123def456: Executing"
    assert dag.state("Preprocess") == StepState("Succeeded", 3.0, "0123456789ab")
    assert dag.state("DataQuality") == StepState("Succeeded", 95.0, None)
    assert dag.state("Train") == StepState("Executing", None, None)
    assert dag.state("Register") == StepState(NOT_STARTED)
    found = boxes(dag.svg())
    assert texts(found["DataQuality"]) == ["DataQuality", "QualityCheck", "Succeeded · 1 min 35 s"]
    assert texts(found["Preprocess"])[3] == "cached from 0123456789ab"
    assert found["Evaluate"].get("data-status") == "NotStarted"


def test_a_long_step_name_is_cut_to_fit_its_box() -> None:
    name = "AVeryLongStepNameThatCannotFitInsideTheBox"
    dag = Dag(definition_graph({"Steps": [step(name)]}), {name: StepState("Succeeded", 4000.0)})
    [drawn] = boxes(dag.svg()).values()
    assert texts(drawn)[0] == name[:21] + "…"
    assert texts(drawn)[2] == "Succeeded · 1 h 06 min"


def test_jupyter_still_shows_a_sagemaker_execution_whose_definition_cannot_be_read() -> None:
    from pipeline.api.html import _dag

    session = StubbedSession("sagemaker")
    session.stubs["sagemaker"].add_client_error(
        "describe_pipeline_definition_for_execution",
        service_error_code="AccessDeniedException",
        service_message="not allowed",
        expected_params={"PipelineExecutionArn": ARN},
    )
    execution = SageMakerExecution(PipelineConfig(region="us-west-2", bucket="studio-bucket"), ARN, session)
    assert _dag(execution) == (
        f"<p>The DAG is not drawn: DescribePipelineDefinitionForExecution {ARN}: AccessDeniedException: not allowed</p>"
    )


def test_a_picture_that_cannot_be_written_is_named(tmp_path: Path, definition: dict) -> None:
    (tmp_path / "taken").write_text("a file, not a folder")
    target = tmp_path / "taken" / "dag.svg"
    with pytest.raises(UsageError) as raised:
        definition_dag(definition).write(target)
    assert str(raised.value) == f"cannot write the DAG picture to {target}: File exists: {tmp_path / 'taken'}"
