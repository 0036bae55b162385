"""The definition interpreter on handcrafted definitions: ordering, concurrency, expressions, conditions, Fail,
not-reached steps, errors before anything runs, execution records and caching.

The jobs here are small test runners that write real JSON reports into a real local S3 folder: they exercise the
interpreter's contract with job runners (resolved arguments in, properties out), not any particular job.
"""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from support.definitions import definition, processing

from pipeline.cli.arguments import parse_overrides
from pipeline.core.errors import DefinitionError, ParameterError
from pipeline.local import cache, conditions
from pipeline.local.executions import ExecutionStore
from pipeline.local.expressions import Context, ExpressionError, parse_path, resolve
from pipeline.local.interpreter import Interpreter
from pipeline.local.jobs.contract import Job
from pipeline.local.s3 import LocalS3


def gate_condition(step: str, comparison: str = "GreaterThanOrEqualTo") -> dict[str, Any]:
    return {
        "Type": comparison,
        "LeftValue": {
            "Std:JsonGet": {"PropertyFile": {"Get": f"Steps.{step}.PropertyFiles.Report"}, "Path": "gate.value"}
        },
        "RightValue": {"Get": "Parameters.Threshold"},
    }


class ReportJobs:
    """Processing job runner: writes ``{"gate": {"value": Environment.GATE}}`` to its output, records order."""

    def __init__(self, s3: LocalS3, barrier_steps: tuple[str, ...] = (), fail: str | None = None) -> None:
        self.s3 = s3
        self.started: list[str] = []
        self.jobs: dict[str, Job] = {}
        self.barrier = threading.Barrier(len(barrier_steps), timeout=10) if barrier_steps else None
        self.barrier_steps = barrier_steps
        self.fail = fail

    def __call__(self, job: Job) -> dict[str, Any]:
        self.started.append(job.step.name)
        self.jobs[job.step.name] = job
        if job.step.name in self.barrier_steps:
            self.barrier.wait()  # only passes when every barrier step runs at the same time
        if job.step.name == self.fail:
            raise RuntimeError(f"{job.step.name} exploded")
        output = job.arguments["ProcessingOutputConfig"]["Outputs"][0]["S3Output"]["S3Uri"]
        self.s3.put_bytes(
            output + "/report.json", json.dumps({"gate": {"value": job.arguments["Environment"]["GATE"]}}).encode()
        )
        return {"ProcessingJobName": job.job_name, "ProcessingOutputConfig": job.arguments["ProcessingOutputConfig"]}


def interpreter(tmp_path: Path, jobs: ReportJobs, **options: Any) -> Interpreter:
    return Interpreter(
        runners={"Processing": jobs},
        store=ExecutionStore(tmp_path / "executions"),
        read_json=lambda uri: json.loads(jobs.s3.path(uri).read_text()),
        pipeline_name="test-pipeline",
        **options,
    )


@pytest.fixture
def jobs(tmp_path: Path) -> ReportJobs:
    return ReportJobs(LocalS3(tmp_path / "s3"))


def statuses(record) -> dict[str, str]:
    return {name: step.status for name, step in record.steps.items()}


def test_steps_run_in_dependency_order_and_independent_steps_concurrently(tmp_path: Path) -> None:
    jobs = ReportJobs(LocalS3(tmp_path / "s3"), barrier_steps=("Left", "Right"))
    uses_first = {"Get": "Steps.First.ProcessingOutputConfig.Outputs['report'].S3Output.S3Uri"}
    record = interpreter(tmp_path, jobs).run(
        definition(
            processing("Last", depends_on=["Left", "Right"]),
            processing("Left", arguments=[uses_first]),
            processing("Right", depends_on=["First"]),
            processing("First"),
        ),
        {},
    )
    assert record.status == "Succeeded", record.failure_reason
    assert jobs.started[0] == "First" and jobs.started[-1] == "Last"
    assert set(jobs.started[1:3]) == {"Left", "Right"}
    assert jobs.jobs["Left"].arguments["AppSpecification"]["ContainerArguments"] == [f"s3://bkt/out/{record.id}/First"]


def test_get_join_and_jsonget_resolve_against_parameters_execution_and_steps(tmp_path: Path, jobs: ReportJobs) -> None:
    joined = {
        "Std:Join": {
            "On": ",",
            "Values": [
                {"Get": "Parameters.Threshold"},
                {"Get": "Parameters.Instances"},
                {"Get": "Parameters.Flag"},
                {"Get": "Execution.PipelineExecutionId"},
                {"Std:JsonGet": {"PropertyFile": {"Get": "Steps.First.PropertyFiles.Report"}, "Path": "gate.value"}},
            ],
        }
    }
    record = interpreter(tmp_path, jobs).run(
        definition(processing("First", gate=0.75), processing("Second", arguments=[joined])), {"Threshold": "0.25"}
    )
    assert record.status == "Succeeded", record.failure_reason
    assert jobs.jobs["Second"].arguments["AppSpecification"]["ContainerArguments"] == [f"0.25,2,false,{record.id},0.75"]
    saved = json.loads((record.folder / "steps" / "Second" / "arguments.json").read_text())
    assert saved["AppSpecification"]["ContainerArguments"] == [f"0.25,2,false,{record.id},0.75"]
    assert record.parameters == {"Threshold": 0.25, "Instances": 2, "Bucket": "bkt", "Flag": False}
    resolved = json.loads((record.folder / "resolved-definition.json").read_text())
    assert resolved["Parameters"][0] == {"Name": "Threshold", "Type": "Float", "DefaultValue": 0.5, "Value": 0.25}
    assert resolved["Steps"][1]["Arguments"]["AppSpecification"]["ContainerArguments"] == [
        f"0.25,2,false,{record.id},0.75"
    ]


def test_property_paths_and_lists_indexed_by_name() -> None:
    assert parse_path("Outputs['train'].S3Output.S3Uri") == ["Outputs", "train", "S3Output", "S3Uri"]
    assert parse_path("FinalMetricDataList[0].Value") == ["FinalMetricDataList", 0, "Value"]
    context = Context(
        parameters={},
        execution={},
        steps={"Train": {"FinalMetricDataList": [{"MetricName": "validation:roc_auc_score", "Value": 0.97}]}},
    )
    assert resolve({"Get": "Steps.Train.FinalMetricDataList['validation:roc_auc_score'].Value"}, context) == 0.97
    with pytest.raises(ExpressionError, match="no element named 'test:mse'"):
        resolve({"Get": "Steps.Train.FinalMetricDataList['test:mse'].Value"}, context)


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ({"Type": "Equals", "LeftValue": 3, "RightValue": 3}, True),
        ({"Type": "Equals", "LeftValue": "a", "RightValue": "b"}, False),
        ({"Type": "Equals", "LeftValue": "0.5", "RightValue": 0.5}, True),
        ({"Type": "GreaterThan", "LeftValue": 0.9, "RightValue": {"Get": "Parameters.T"}}, True),
        ({"Type": "GreaterThan", "LeftValue": 0.5, "RightValue": {"Get": "Parameters.T"}}, False),
        ({"Type": "GreaterThanOrEqualTo", "LeftValue": 0.5, "RightValue": {"Get": "Parameters.T"}}, True),
        ({"Type": "LessThan", "LeftValue": 0.4, "RightValue": {"Get": "Parameters.T"}}, True),
        ({"Type": "LessThan", "LeftValue": 0.5, "RightValue": {"Get": "Parameters.T"}}, False),
        ({"Type": "LessThanOrEqualTo", "LeftValue": 0.5, "RightValue": {"Get": "Parameters.T"}}, True),
        ({"Type": "In", "QueryValue": {"Get": "Parameters.Kind"}, "Values": ["a", "binary"]}, True),
        ({"Type": "In", "QueryValue": {"Get": "Parameters.Kind"}, "Values": ["regressor"]}, False),
        ({"Type": "Not", "Condition": {"Type": "Equals", "LeftValue": 1, "RightValue": 2}}, True),
        (
            {
                "Type": "Or",
                "Conditions": [
                    {"Type": "Equals", "LeftValue": 1, "RightValue": 2},
                    {"Type": "LessThan", "LeftValue": 1, "RightValue": 2},
                ],
            },
            True,
        ),
        ({"Type": "Or", "Conditions": [{"Type": "Equals", "LeftValue": 1, "RightValue": 2}]}, False),
    ],
)
def test_every_condition_type(condition: dict[str, Any], expected: bool) -> None:
    context = Context(parameters={"T": 0.5, "Kind": "binary"}, execution={})
    conditions.check(condition, "test")
    assert conditions.evaluate(condition, context) is expected


def test_unknown_condition_type_and_incomparable_values_are_errors() -> None:
    with pytest.raises(conditions.ConditionError, match="'Between'"):
        conditions.check({"Type": "Not", "Condition": {"Type": "Between"}}, "step Gate")
    with pytest.raises(conditions.ConditionError, match="not a number"):
        conditions.evaluate({"Type": "LessThan", "LeftValue": "abc", "RightValue": 1}, Context({}, {}))


def gated_definition() -> dict[str, Any]:
    fail = {
        "Name": "GateFailed",
        "Type": "Fail",
        "Arguments": {
            "ErrorMessage": {
                "Std:Join": {
                    "On": " ",
                    "Values": [
                        "gate",
                        {
                            "Std:JsonGet": {
                                "PropertyFile": {"Get": "Steps.Evaluate.PropertyFiles.Report"},
                                "Path": "gate.value",
                            }
                        },
                        "is below",
                        {"Get": "Parameters.Threshold"},
                    ],
                }
            }
        },
    }
    gate = {
        "Name": "Gate",
        "Type": "Condition",
        "Arguments": {
            "Conditions": [gate_condition("Evaluate")],
            "IfSteps": [processing("Register", depends_on=["Evaluate"])],
            "ElseSteps": [fail],
        },
    }
    return definition(processing("Evaluate", gate=0.8), gate, processing("AfterRegister", depends_on=["Register"]))


def test_condition_true_runs_the_if_branch_and_skips_the_else_branch(tmp_path: Path, jobs: ReportJobs) -> None:
    record = interpreter(tmp_path, jobs).run(gated_definition(), {"Threshold": "0.7"})
    assert record.status == "Succeeded"
    assert statuses(record) == {
        "Evaluate": "Succeeded",
        "Gate": "Succeeded",
        "Register": "Succeeded",
        "GateFailed": "Skipped",
        "AfterRegister": "Succeeded",
    }
    assert record.steps["Gate"].properties == {"Outcome": True}
    assert "condition Gate evaluated to true" in record.steps["GateFailed"].detail


def test_fail_step_fails_the_execution_with_its_resolved_message(tmp_path: Path, jobs: ReportJobs) -> None:
    record = interpreter(tmp_path, jobs).run(gated_definition(), {"Threshold": "0.95"})
    assert record.status == "Failed"
    assert statuses(record) == {
        "Evaluate": "Succeeded",
        "Gate": "Succeeded",
        "Register": "Skipped",
        "GateFailed": "Failed",
        "AfterRegister": "Skipped",
    }
    assert record.steps["GateFailed"].failure_reason == "gate 0.8 is below 0.95"
    assert record.failure_reason == "step GateFailed failed: gate 0.8 is below 0.95"
    resolved = json.loads((record.folder / "resolved-definition.json").read_text())
    assert resolved["Steps"][1]["Arguments"]["ElseSteps"][0]["Arguments"] == {"ErrorMessage": "gate 0.8 is below 0.95"}
    assert "Register" not in jobs.started
    assert "upstream step Register skipped" in record.steps["AfterRegister"].detail
    stored = ExecutionStore(tmp_path / "executions").load(record.id)
    assert stored.status == "Failed" and stored.steps["GateFailed"].failure_reason == "gate 0.8 is below 0.95"


def test_a_failed_job_fails_the_execution_and_nothing_downstream_starts(tmp_path: Path) -> None:
    jobs = ReportJobs(LocalS3(tmp_path / "s3"), fail="Middle")
    record = interpreter(tmp_path, jobs).run(
        definition(
            processing("First"), processing("Middle", depends_on=["First"]), processing("Last", depends_on=["Middle"])
        ),
        {},
    )
    assert record.status == "Failed"
    assert statuses(record) == {"First": "Succeeded", "Middle": "Failed", "Last": "Skipped"}
    assert record.steps["Middle"].failure_reason == "RuntimeError: Middle exploded"
    assert "Middle exploded" in (record.folder / "steps" / "Middle" / "error.txt").read_text()
    assert jobs.started == ["First", "Middle"]


@pytest.mark.parametrize(
    ("bad_step", "message"),
    [
        ({"Name": "Tune", "Type": "Tuning", "Arguments": {}}, "step 'Tune' has type 'Tuning'"),
        (processing("X", arguments=[{"Std:Frobnicate": {}}]), "unknown function 'Std:Frobnicate'"),
        (processing("X", arguments=[{"Get": "Parameters.Nope"}]), "no known parameter 'Nope'"),
        (processing("X", arguments=[{"Get": "Steps.Ghost.ModelName"}]), "no known step 'Ghost'"),
        (processing("X", arguments=[{"Get": "Execution.Mood"}]), "no known execution variable 'Mood'"),
        (processing("X", depends_on=["Ghost"]), "DependsOn unknown step"),
        (processing("X", depends_on=["X"]), "dependency cycle: X -> X"),
        (
            {"Name": "C", "Type": "Condition", "Arguments": {"Conditions": [{"Type": "Xor"}], "IfSteps": []}},
            "unknown condition type 'Xor'",
        ),
    ],
)
def test_definitions_that_cannot_run_fail_before_anything_runs(
    tmp_path: Path, jobs: ReportJobs, bad_step: dict[str, Any], message: str
) -> None:
    with pytest.raises(DefinitionError, match=message.replace("(", r"\(")):
        interpreter(tmp_path, jobs).run(definition(processing("Fine"), bad_step), {})
    assert jobs.started == []
    assert not (tmp_path / "executions").exists()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"Treshold": "0.2"},
            r"unknown parameter\(s\) Treshold \(did you mean Threshold\?\); the pipeline declares: Bucket, Flag,"
            r" Instances, Threshold",
        ),
        ({"flag": "true", "Colour": "red"}, r"unknown parameter\(s\) Colour, flag \(did you mean Flag\?\); the pip"),
        ({"Instances": "two"}, "parameter Instances is Integer: 'two' is not a valid integer"),
        ({"Instances": "2.5"}, "parameter Instances is Integer"),
        ({"Threshold": "high"}, "parameter Threshold is Float: 'high'"),
        ({"Flag": "yes"}, "parameter Flag is Boolean"),
        ({"Bucket": "third"}, "parameter Bucket must be one of bkt, other, got 'third'"),
    ],
)
def test_bad_overrides_are_rejected_before_anything_runs(
    tmp_path: Path, jobs: ReportJobs, overrides: dict[str, str], message: str
) -> None:
    with pytest.raises(ParameterError, match=message):
        interpreter(tmp_path, jobs).run(definition(processing("First")), overrides)
    assert jobs.started == []
    assert not (tmp_path / "executions").exists()


def test_parse_overrides() -> None:
    assert parse_overrides(["A=1", "B=x=y"]) == {"A": "1", "B": "x=y"}
    with pytest.raises(ParameterError, match="Name=Value"):
        parse_overrides(["A"])
    with pytest.raises(ParameterError, match="--param A given twice"):
        parse_overrides(["A=1", "A=2"])


def test_cached_steps_reuse_the_previous_run_until_a_key_attribute_changes(tmp_path: Path, jobs: ReportJobs) -> None:
    cached = {"Enabled": True, "ExpireAfter": "P30D"}
    first_definition = definition(processing("First", CacheConfig=cached), processing("Second", depends_on=["First"]))
    first = interpreter(tmp_path, jobs).run(first_definition, {})
    second = interpreter(tmp_path, jobs).run(first_definition, {})
    assert first.status == second.status == "Succeeded"
    assert jobs.started == ["First", "Second", "Second"]
    assert second.steps["First"].cache_hit_source == first.id
    # the hit returns the earlier run's outputs, as SageMaker does
    assert second.steps["First"].properties == first.steps["First"].properties
    changed = definition(processing("First", gate=0.1, CacheConfig=cached), processing("Second", depends_on=["First"]))
    third = interpreter(tmp_path, jobs).run(changed, {})
    assert third.steps["First"].cache_hit_source is None
    assert jobs.started.count("First") == 2
    uncached = interpreter(tmp_path, jobs, use_cache=False).run(first_definition, {})
    assert uncached.steps["First"].cache_hit_source is None


def test_cache_expiry_and_key_attributes(tmp_path: Path) -> None:
    assert cache.parse_duration("P30D") == timedelta(days=30)
    assert cache.parse_duration("PT1H30M") == timedelta(hours=1, minutes=30)
    assert cache.parse_duration("P1W") == timedelta(days=7)
    with pytest.raises(ValueError, match="ISO 8601"):
        cache.parse_duration("30 days")
    arguments = {"AppSpecification": {"ImageUri": "x"}, "ProcessingOutputConfig": {"Outputs": [1]}}
    other_outputs = {"AppSpecification": {"ImageUri": "x"}, "ProcessingOutputConfig": {"Outputs": [2]}}
    assert cache.cache_key("Processing", arguments) == cache.cache_key("Processing", other_outputs)
    assert cache.cache_key("Processing", arguments) != cache.cache_key("Processing", {"AppSpecification": {}})
    assert cache.cache_key("Model", arguments) is None
    jobs = ReportJobs(LocalS3(tmp_path / "s3"))
    step = processing("First", CacheConfig={"Enabled": True, "ExpireAfter": "PT1H"})
    record = interpreter(tmp_path, jobs).run(definition(step), {})
    key = record.steps["First"].cache_key
    store = ExecutionStore(tmp_path / "executions")
    soon = datetime.now(timezone.utc) + timedelta(minutes=30)
    later = datetime.now(timezone.utc) + timedelta(hours=2)
    assert cache.find_hit(store, "test-pipeline", step, key, "other", at=soon)[0] == record.id
    assert cache.find_hit(store, "test-pipeline", step, key, "other", at=later) is None
    assert cache.find_hit(store, "another-pipeline", step, key, "other", at=soon) is None


def test_execution_records_list_newest_first(tmp_path: Path, jobs: ReportJobs) -> None:
    first = interpreter(tmp_path, jobs).run(definition(processing("First")), {})
    second = interpreter(tmp_path, jobs).run(definition(processing("First")), {})
    store = ExecutionStore(tmp_path / "executions")
    assert [record.id for record in store.list()] == [second.id, first.id]
    assert json.loads((first.folder / "definition.json").read_text())["Steps"][0]["Name"] == "First"
    with pytest.raises(KeyError, match="no execution 'nope'"):
        store.load("nope")
