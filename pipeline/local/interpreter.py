"""The scheduler of a planned pipeline definition: runs its steps and records everything.

``Interpreter.prepare`` plans the definition (``pipeline.local.plan``) and resolves the parameters before any record
exists; ``Interpreter.execute`` runs the plan: a step starts once every step it depends on (``DependsOn``, property
references, the Condition step whose branch holds it) has succeeded, independent steps run concurrently, Condition
and Fail steps are evaluated here, every other step type goes to the job runner registered for it. After a failure
no new step starts; steps that never start are recorded as ``Skipped`` with the reason they were not reached.
"""

from __future__ import annotations

import contextlib
import json
import threading
import traceback
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from containerlib.file_errors import describe, is_write_refusal
from pipeline.core.errors import LlpipeError
from pipeline.core.names import StepStatus
from pipeline.core.safe_text import redact
from pipeline.core.signals import SIGNAL_CHECK_SECONDS, stop_signals_deferred, stop_signals_raise
from pipeline.core.steps import walk_steps
from pipeline.definition.parameters import resolve_parameters
from pipeline.local import cache, conditions, expressions
from pipeline.local.executions import ExecutionRecord, ExecutionStore, StepRecord, now, write_json_atomically
from pipeline.local.jobs.contract import Job, JobRunner, StepFailed
from pipeline.local.plan import Plan, StepSpec, plan


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
    has_objects: Callable[[str], bool] = field(default=lambda uri: True)  # does an S3 object or prefix exist
    # where an S3 URI is on this machine: a cached step's outputs are fingerprinted and checked there (None: not)
    local_path: Callable[[str], Path] | None = None
    # a step's failure reason as the user reads it: the runner names the data it staged by the user's own paths
    reword_failure: Callable[[str], str] = field(default=lambda reason: reason)

    def prepare(self, definition: dict[str, Any], overrides: Mapping[str, Any]) -> tuple[Plan, dict[str, Any]]:
        """The checked plan and the parameter values; raises before any record is created."""
        checked = plan(definition, set(self.runners))
        return checked, resolve_parameters(checked.parameters, overrides)

    def run(self, definition: dict[str, Any], overrides: Mapping[str, Any]) -> ExecutionRecord:
        """Plan and execute the definition end to end; the finished record."""
        return self.execute(*self.prepare(definition, overrides))

    def execute(self, checked: Plan, parameters: dict[str, Any]) -> ExecutionRecord:
        """Execute a prepared plan with its resolved parameters; the finished record. A stop signal (SIGINT, SIGTERM,
        SIGHUP) ends the running jobs, records the execution Stopped and raises ``KeyboardInterrupt``."""
        with stop_signals_raise():
            return self._execute_recorded(checked, parameters)

    def _execute_recorded(self, checked: Plan, parameters: dict[str, Any]) -> ExecutionRecord:
        definition = checked.definition
        stop = threading.Event()
        record: ExecutionRecord | None = None
        try:
            with stop_signals_deferred():  # a signal now is raised after the record exists, to be marked Stopped
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
            self._execute(checked, record, context, stop)
        except KeyboardInterrupt as interrupt:  # Ctrl-C, SIGTERM or SIGHUP: the running jobs were ended; record it
            if record is None:
                raise
            reason = f"stopped by {getattr(interrupt, 'signal_name', 'SIGINT')}"
            for step in record.steps.values():
                if step.status in (StepStatus.EXECUTING, StepStatus.STOPPED):
                    step.status, step.end_time, step.failure_reason = StepStatus.STOPPED, now(), reason
                elif step.status == StepStatus.PENDING:
                    step.status, step.detail = StepStatus.SKIPPED, "not reached: the execution was stopped"
            record.status, record.failure_reason, record.end_time = StepStatus.STOPPED, reason, now()
            record.save()
            raise
        failed = [step for step in record.steps.values() if step.status == StepStatus.FAILED]
        record.status = StepStatus.FAILED if failed else StepStatus.SUCCEEDED
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
        for step, _ in walk_steps(resolved.get("Steps", [])):
            arguments = record.folder / "steps" / step["Name"] / "arguments.json"
            if arguments.is_file():
                step["Arguments"] = json.loads(arguments.read_text())
            elif step.get("Type") == "Fail" and record.steps[step["Name"]].status == StepStatus.FAILED:
                step["Arguments"] = {"ErrorMessage": record.steps[step["Name"]].failure_reason}
        return resolved

    def _execute(
        self, checked: Plan, record: ExecutionRecord, context: expressions.Context, stop: threading.Event
    ) -> None:
        running: dict[Future, str] = {}
        with ThreadPoolExecutor(max_workers=max(1, self.max_parallel)) as pool:
            try:
                # a stop acts between waits: raised inside one (concurrent.futures.wait, Future.result, submit hold
                # the futures' and the pool's locks in Python code) it could leave a lock held, which the job's
                # thread then waited for forever, and so did _stop_and_wait
                with stop_signals_deferred() as act_on_stop:
                    self._schedule(checked, record, context, stop, pool, running, act_on_stop)
            except BaseException:
                _stop_and_wait(stop, running)
                raise

    def _schedule(
        self,
        checked: Plan,
        record: ExecutionRecord,
        context: expressions.Context,
        stop: threading.Event,
        pool: ThreadPoolExecutor,
        running: dict[Future, str],
        act_on_stop: Callable[[], None],
    ) -> None:
        while True:
            act_on_stop()
            failed = any(step.status == StepStatus.FAILED for step in record.steps.values())
            for spec in checked.steps.values():
                step = record.steps[spec.name]
                if step.status != StepStatus.PENDING:
                    continue
                blocker = self._blocker(spec, record, failed)
                if blocker:
                    self._change(record, step, status=StepStatus.SKIPPED, detail=blocker)
                elif self._ready(spec, record) and not failed:
                    self._change(record, step, status=StepStatus.EXECUTING, start_time=now())
                    running[pool.submit(self._run_step, spec, record, context, stop)] = spec.name
            if not running:
                break  # every step is now finished or skipped: a pending step is ready or blocked
            done: set[Future] = set()
            while not done:  # in slices: a stop signal is acted on here within one
                act_on_stop()
                done, _ = wait(running, timeout=SIGNAL_CHECK_SECONDS, return_when=FIRST_COMPLETED)
            for future in done:
                running.pop(future)
                future.result()  # _run_step records failures itself; anything else is a bug worth raising

    def _ready(self, spec: StepSpec, record: ExecutionRecord) -> bool:
        if not all(record.steps[name].status == StepStatus.SUCCEEDED for name in spec.upstream):
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
            if state.status == StepStatus.SUCCEEDED and state.properties.get("Outcome") != outcome:
                return f"not reached: condition {condition} evaluated to {str(not outcome).lower()}"
        for name in sorted(spec.upstream):
            if record.steps[name].status in (StepStatus.FAILED, StepStatus.SKIPPED):
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

    def _run_step(
        self, spec: StepSpec, record: ExecutionRecord, context: expressions.Context, stop: threading.Event
    ) -> None:
        step = record.steps[spec.name]
        try:
            step_context = expressions.Context(
                parameters=context.parameters,
                execution={**context.execution, "CurrentDateTime": now()},
                steps={name: record.steps[name].properties for name in spec.upstream},
                read_json=context.read_json,
            )
            properties = self._step_properties(spec, record, step, step_context, stop)
        except StepFailed as error:
            reason = redact(self.reword_failure(str(error)))  # stored: a credential a job printed never is
            if stop.is_set():  # ended because the execution is being stopped, not a failure of its own
                self._change(record, step, status=StepStatus.STOPPED, end_time=now(), failure_reason=reason)
                return
            self._change(
                record,
                step,
                status=StepStatus.FAILED,
                end_time=now(),
                failure_reason=reason,
                properties=error.properties,
            )
        except Exception as error:  # a job crashed: keep the traceback in the record, show its last line
            with contextlib.suppress(OSError):  # a full or read-only disk may refuse this too
                (record.step_folder(spec.name) / "error.txt").write_text(redact(traceback.format_exc()))
            if is_write_refusal(error):  # the disk refused (full, read-only): the path and what to do, no defect
                said = describe(error, "free space there, or run with another work dir")  # type: ignore[arg-type]
            elif isinstance(error, LlpipeError):  # a refusal worded for the user: its message, not its class
                said = str(error)
            else:
                said = f"{type(error).__name__}: {error}"
            reason = redact(self.reword_failure(said))
            self._change(record, step, status=StepStatus.FAILED, end_time=now(), failure_reason=reason)
        else:
            self._change(record, step, status=StepStatus.SUCCEEDED, end_time=now(), properties=properties)

    def _step_properties(
        self,
        spec: StepSpec,
        record: ExecutionRecord,
        step: StepRecord,
        context: expressions.Context,
        stop: threading.Event,
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
        note = ""  # why a cache hit was not taken, kept as the step's detail
        if key and self.use_cache:
            hit = cache.find_hit(self.store, self.pipeline_name, spec.definition, key, record.id)
            if hit:
                source, previous = hit
                missing = [uri for uri in cache.output_uris(previous.properties) if not self.has_objects(uri)]
                changed = None if missing else self._changed_outputs(source, spec.name, key, previous.properties)
                if not missing and not changed:
                    step.cache_hit_source = source
                    step.detail = f"cache hit from execution {source}"
                    return previous.properties
                if missing:
                    note = f"cache hit from execution {source} not used: its output {missing[0]} is gone; re-running"
                else:
                    entry = self.store.root / source / "steps" / spec.name / cache.OUTPUTS_FILE
                    note = f"cache entry {entry} is damaged ({changed}); re-running {spec.name}"
                    step.notes.append(note)
                step.detail = note
                self._change(record, step)
        job = Job(
            step=spec,
            arguments=arguments,
            execution_id=record.id,
            pipeline_name=self.pipeline_name,
            record=step,
            folder=folder,
            arn_prefix=self.arn_prefix,
            report=lambda text: self._progress(record, step, text),
            stop=stop,
            fields=expressions.resolve(spec.fields, context),
        )
        properties = self.runners[spec.type](job)
        step.detail = note  # the last progress line of a finished job says nothing more
        if key and self.local_path is not None:
            cache.record_outputs(folder, key, properties, self.local_path)

        return {**properties, **self._property_files(spec, properties)}

    def _changed_outputs(self, source: str, name: str, key: str, properties: dict[str, Any]) -> str | None:
        """Why the outputs execution ``source``'s step ``name`` recorded changed since, None when unchanged."""
        if self.local_path is None:
            return None
        folder = self.store.root / source / "steps" / name
        return cache.changed_outputs(folder, key, properties, self.local_path)

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


def _stop_and_wait(stop: threading.Event, running: Mapping[Future, str]) -> None:
    """Tell the running jobs to end their processes, then wait for their clean-up even when a second Ctrl-C or
    SIGTERM arrives (``timeout`` sends SIGTERM to the process and to its group): leaving early would exit with the
    jobs' sandboxes and logs half cleaned up."""
    while True:
        try:
            stop.set()
            wait(running)
            return
        except KeyboardInterrupt:
            continue  # already stopping
