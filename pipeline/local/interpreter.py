"""The interpreter of a pipeline definition JSON (Version 2020-12-01).

``plan`` checks the whole definition before anything runs (step types, expressions, conditions, dependencies);
``Interpreter.run`` executes it: a step starts once every step it depends on (``DependsOn``, property references,
the Condition step whose branch holds it) has succeeded, independent steps run concurrently, Condition and Fail steps
are evaluated here, every other step type goes to the job runner registered for it. After a failure no new step
starts; steps that never start are recorded as ``Skipped`` with the reason they were not reached.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.local import cache, conditions, expressions
from pipeline.local.executions import ExecutionRecord, ExecutionStore, StepRecord, now, write_json_atomically
from pipeline.local.parameters import resolve_parameters

SUPPORTED_VERSION = "2020-12-01"
INLINE_TYPES = ("Condition", "Fail")


class DefinitionError(ValueError):
    """A definition the local backend cannot run: unknown step type or expression, bad reference, cycle."""


class StepFailed(Exception):
    """A job failed for a reason worth showing as is (no traceback): the step's FailureReason."""


@dataclass(frozen=True)
class StepSpec:
    """One step of the definition, wherever it sits (top level or inside a Condition branch)."""

    name: str
    type: str
    definition: dict[str, Any]
    upstream: frozenset[str]
    branch: tuple[str, bool] | None = None  # (condition step, outcome that runs this step)

    @property
    def arguments(self) -> dict[str, Any]:
        return self.definition.get("Arguments", {})


@dataclass(frozen=True)
class Plan:
    """A checked definition: its parameters and its steps in definition order."""

    definition: dict[str, Any]
    parameters: list[dict[str, Any]]
    steps: dict[str, StepSpec]


@dataclass
class Job:
    """What a job runner receives: the step, its resolved request and where to keep its files."""

    step: StepSpec
    arguments: dict[str, Any]
    execution_id: str
    pipeline_name: str
    record: StepRecord
    folder: Path  # the step's folder in the execution record
    arn_prefix: str = "arn:aws:sagemaker:local:000000000000"
    report: Callable[[str], None] = field(default=lambda text: None)

    @property
    def job_name(self) -> str:
        """The job name SageMaker Pipelines would give: ``pipelines-<execution id>-<step name>``, 63 chars max."""
        return f"pipelines-{self.execution_id}-{self.step.name}"[:63]

    def arn(self, resource: str) -> str:
        """The ARN of a resource this job creates, e.g. ``arn("training-job/name")``."""
        return f"{self.arn_prefix}:{resource}"

    @property
    def execution_arn(self) -> str:
        """The ARN of the execution running this job (what SageMaker records as a package's GeneratedBy)."""
        return self.arn(f"pipeline/{self.pipeline_name}/execution/{self.execution_id}")

    def add_log(self, path: Path) -> None:
        """Declare a log file (stdout/stderr of an instance) so the record lists it."""
        self.record.logs.append(str(path))

    def note(self, text: str) -> None:
        """Something the run must still show once the job ended (an approximate environment, a first-time build)."""
        self.record.notes.append(text)


JobRunner = Callable[[Job], dict[str, Any]]


def _walk_steps(steps: list[dict[str, Any]], branch: tuple[str, bool] | None, found: list[tuple[dict, Any]]) -> None:
    for step in steps:
        found.append((step, branch))
        if step.get("Type") == "Condition":
            arguments = step.get("Arguments", {})
            _walk_steps(arguments.get("IfSteps", []), (step["Name"], True), found)
            _walk_steps(arguments.get("ElseSteps", []), (step["Name"], False), found)


def _data_arguments(step: dict[str, Any]) -> dict[str, Any]:
    """The arguments whose expressions this step itself evaluates (a Condition's branches are separate steps)."""
    arguments = dict(step.get("Arguments", {}))
    if step.get("Type") == "Condition":
        arguments.pop("IfSteps", None)
        arguments.pop("ElseSteps", None)
    return arguments


def plan(definition: dict[str, Any], runnable_types: set[str]) -> Plan:
    """Check a definition and index its steps; ``DefinitionError`` naming whatever cannot run."""
    version = definition.get("Version")
    if version != SUPPORTED_VERSION:
        raise DefinitionError(f"definition Version {version!r} is not supported (expected {SUPPORTED_VERSION})")
    parameters = definition.get("Parameters", [])
    parameter_names = {parameter["Name"] for parameter in parameters}
    found: list[tuple[dict, Any]] = []
    _walk_steps(definition.get("Steps", []), None, found)
    names = [step.get("Name") for step, _ in found]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise DefinitionError(f"duplicate step name(s): {', '.join(map(str, duplicates))}")
    known_types = set(runnable_types) | set(INLINE_TYPES)
    steps: dict[str, StepSpec] = {}
    for step, branch in found:
        name, kind = step.get("Name"), step.get("Type")
        if kind not in known_types:
            raise DefinitionError(
                f"step {name!r} has type {kind!r}, which the local backend cannot run "
                f"(supported: {', '.join(sorted(known_types))})"
            )
        arguments = _data_arguments(step)
        try:
            expressions.check(arguments, parameter_names, set(names), f"step {name}")
            if kind == "Condition":
                for condition in arguments.get("Conditions", []):
                    conditions.check(condition, f"step {name}")
        except ValueError as error:
            raise DefinitionError(str(error)) from None
        for file in step.get("PropertyFiles", []):
            if not {"PropertyFileName", "OutputName", "FilePath"} <= set(file):
                raise DefinitionError(f"step {name}: PropertyFiles entry {file} lacks a name, output or path")
        depends_on = set(step.get("DependsOn", []))
        unknown = sorted(depends_on - set(names))
        if unknown:
            raise DefinitionError(f"step {name} DependsOn unknown step(s): {', '.join(unknown)}")
        upstream = depends_on | expressions.referenced_steps(arguments)
        if branch is not None:
            upstream.add(branch[0])
        steps[name] = StepSpec(name, kind, step, frozenset(upstream), branch)
    _check_acyclic(steps)
    return Plan(definition, parameters, steps)


def _check_acyclic(steps: dict[str, StepSpec]) -> None:
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "visiting":
            raise DefinitionError(f"dependency cycle: {' -> '.join([*path, name])}")
        state[name] = "visiting"
        for upstream in sorted(steps[name].upstream):
            visit(upstream, [*path, name])
        state[name] = "done"

    for name in steps:
        visit(name, [])


@dataclass
class Interpreter:
    """Runs a planned definition with the given job runners, recording everything in the execution store."""

    runners: Mapping[str, JobRunner]
    store: ExecutionStore
    read_json: Callable[[str], Any]
    pipeline_name: str
    max_parallel: int = 2
    use_cache: bool = True
    arn_prefix: str = "arn:aws:sagemaker:local:000000000000"  # arn:aws:sagemaker:<region>:<account>
    on_change: Callable[[ExecutionRecord, StepRecord], None] = field(default=lambda record, step: None)

    def prepare(self, definition: dict[str, Any], overrides: Mapping[str, Any]) -> tuple[Plan, dict[str, Any]]:
        """The checked plan and the parameter values; raises before any record is created."""
        checked = plan(definition, set(self.runners))
        return checked, resolve_parameters(checked.parameters, overrides)

    def run(self, definition: dict[str, Any], overrides: Mapping[str, Any]) -> ExecutionRecord:
        """Execute the definition end to end and return the finished record."""
        checked, parameters = self.prepare(definition, overrides)
        record = self.store.create(self.pipeline_name, definition, parameters)
        for spec in checked.steps.values():
            record.steps[spec.name] = StepRecord(spec.name, spec.type)
        record.save()
        context = expressions.Context(
            parameters=parameters,
            execution={
                "PipelineExecutionId": record.id,
                "PipelineExecutionArn": f"{self.arn_prefix}:pipeline/{self.pipeline_name}/execution/{record.id}",
                "PipelineName": self.pipeline_name,
                "PipelineArn": f"{self.arn_prefix}:pipeline/{self.pipeline_name}",
                "StartDateTime": record.start_time,
                "CurrentDateTime": record.start_time,
            },
            read_json=self.read_json,
        )
        try:
            self._execute(checked, record, context)
        except KeyboardInterrupt:  # Ctrl-C reaches the jobs' processes too: record the execution as stopped
            for step in record.steps.values():
                if step.status == "Executing":
                    step.status, step.end_time = "Stopped", now()
                elif step.status == "Pending":
                    step.status, step.detail = "Skipped", "not reached: the execution was stopped"
            record.status, record.failure_reason, record.end_time = "Stopped", "interrupted", now()
            record.save()
            raise
        failed = [step for step in record.steps.values() if step.status == "Failed"]
        record.status = "Failed" if failed else "Succeeded"
        if failed:
            record.failure_reason = f"step {failed[0].name} failed: {failed[0].failure_reason}"
        record.end_time = now()
        record.save()
        write_json_atomically(record.folder / "resolved-definition.json", self._resolved(definition, record))
        return record

    @staticmethod
    def _resolved(definition: dict[str, Any], record: ExecutionRecord) -> dict[str, Any]:
        """The definition with the parameter values and every step's request as it ran (steps not run unchanged)."""
        resolved = json.loads(json.dumps(definition))
        for parameter in resolved.get("Parameters", []):
            parameter["Value"] = record.parameters.get(parameter["Name"])
        found: list[tuple[dict, Any]] = []
        _walk_steps(resolved.get("Steps", []), None, found)
        for step, _ in found:
            arguments = record.folder / "steps" / step["Name"] / "arguments.json"
            if arguments.is_file():
                step["Arguments"] = json.loads(arguments.read_text())
            elif step.get("Type") == "Fail" and record.steps[step["Name"]].status == "Failed":
                step["Arguments"] = {"ErrorMessage": record.steps[step["Name"]].failure_reason}
        return resolved

    def _execute(self, checked: Plan, record: ExecutionRecord, context: expressions.Context) -> None:
        running: dict[Future, str] = {}
        with ThreadPoolExecutor(max_workers=max(1, self.max_parallel)) as pool:
            while True:
                failed = any(step.status == "Failed" for step in record.steps.values())
                for spec in checked.steps.values():
                    step = record.steps[spec.name]
                    if step.status != "Pending":
                        continue
                    blocker = self._blocker(spec, record, failed)
                    if blocker:
                        self._change(record, step, status="Skipped", detail=blocker)
                    elif self._ready(spec, record) and not failed:
                        self._change(record, step, status="Executing", start_time=now())
                        running[pool.submit(self._run_step, spec, record, context)] = spec.name
                if not running:
                    break  # every step is now finished or skipped: a pending step is ready or blocked
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    running.pop(future)
                    future.result()  # _run_step records failures itself; anything else is a bug worth raising

    def _ready(self, spec: StepSpec, record: ExecutionRecord) -> bool:
        if not all(record.steps[name].status == "Succeeded" for name in spec.upstream):
            return False
        if spec.branch is not None:
            condition, outcome = spec.branch
            return record.steps[condition].properties.get("Outcome") == outcome
        return True

    def _blocker(self, spec: StepSpec, record: ExecutionRecord, failed: bool) -> str | None:
        """Why a pending step can never run, or None while it still might."""
        if spec.branch is not None:
            condition, outcome = spec.branch
            state = record.steps[condition]
            if state.status == "Succeeded" and state.properties.get("Outcome") != outcome:
                return f"not reached: condition {condition} evaluated to {str(not outcome).lower()}"
        for name in sorted(spec.upstream):
            if record.steps[name].status in ("Failed", "Skipped"):
                return f"not reached: upstream step {name} {record.steps[name].status.lower()}"
        if failed:
            return "not reached: the execution failed"
        return None

    def _change(self, record: ExecutionRecord, step: StepRecord, **changes: Any) -> None:
        for name, value in changes.items():
            setattr(step, name, value)
        record.save()
        self.on_change(record, step)

    def _progress(self, record: ExecutionRecord, step: StepRecord, text: str) -> None:
        """A running job's progress line: shown live, saved with the next status change (not on every line)."""
        step.detail = text
        self.on_change(record, step)

    def _run_step(self, spec: StepSpec, record: ExecutionRecord, context: expressions.Context) -> None:
        step = record.steps[spec.name]
        try:
            step_context = expressions.Context(
                parameters=context.parameters,
                execution={**context.execution, "CurrentDateTime": now()},
                steps={name: record.steps[name].properties for name in spec.upstream},
                read_json=context.read_json,
            )
            properties = self._step_properties(spec, record, step, step_context)
        except StepFailed as error:
            self._change(record, step, status="Failed", end_time=now(), failure_reason=str(error))
        except Exception as error:  # a job crashed: keep the traceback in the record, show its last line
            (record.step_folder(spec.name) / "error.txt").write_text(traceback.format_exc())
            reason = f"{type(error).__name__}: {error}"
            self._change(record, step, status="Failed", end_time=now(), failure_reason=reason)
        else:
            self._change(record, step, status="Succeeded", end_time=now(), properties=properties)

    def _step_properties(
        self, spec: StepSpec, record: ExecutionRecord, step: StepRecord, context: expressions.Context
    ) -> dict[str, Any]:
        if spec.type == "Condition":
            outcome = conditions.evaluate_all(spec.arguments.get("Conditions", []), context)
            step.detail = f"outcome {str(outcome).lower()}"
            return {"Outcome": outcome}
        if spec.type == "Fail":
            message = expressions.resolve(spec.arguments.get("ErrorMessage", ""), context)
            raise StepFailed(expressions.to_text(message))
        arguments = expressions.resolve(spec.arguments, context)
        folder = record.step_folder(spec.name)
        write_json_atomically(folder / "arguments.json", arguments)
        key = cache.cache_key(spec.type, arguments) if cache.caching_enabled(spec.definition) else None
        step.cache_key = key
        if key and self.use_cache:
            hit = cache.find_hit(self.store, self.pipeline_name, spec.definition, key, record.id)
            if hit:
                source, previous = hit
                step.cache_hit_source = source
                step.detail = f"cache hit from execution {source}"
                return previous.properties
        job = Job(
            step=spec,
            arguments=arguments,
            execution_id=record.id,
            pipeline_name=self.pipeline_name,
            record=step,
            folder=folder,
            arn_prefix=self.arn_prefix,
            report=lambda text: self._progress(record, step, text),
        )
        properties = self.runners[spec.type](job)
        step.detail = ""  # the last progress line of a finished job says nothing more
        return {**properties, **self._property_files(spec, properties)}

    @staticmethod
    def _property_files(spec: StepSpec, properties: dict[str, Any]) -> dict[str, Any]:
        """``PropertyFiles.<name>`` -> the S3 URI of the JSON file inside the named processing output."""
        files = {}
        for file in spec.definition.get("PropertyFiles", []):
            outputs = properties.get("ProcessingOutputConfig", {}).get("Outputs", [])
            output = next((item for item in outputs if item.get("OutputName") == file["OutputName"]), None)
            if output is None:
                raise StepFailed(f"property file {file['PropertyFileName']} names unknown output {file['OutputName']}")
            files[file["PropertyFileName"]] = output["S3Output"]["S3Uri"].rstrip("/") + "/" + file["FilePath"]
        return {"PropertyFiles": files} if files else {}


def load_definition(text: str) -> dict[str, Any]:
    """Parse definition JSON text; ``DefinitionError`` when it is not a JSON object."""
    try:
        definition = json.loads(text)
    except json.JSONDecodeError as error:
        raise DefinitionError(f"the pipeline definition is not valid JSON: {error}") from None
    if not isinstance(definition, dict):
        raise DefinitionError("the pipeline definition must be a JSON object")
    return definition
