"""Execution records: one folder per execution under ``<workdir>/executions/<id>/``.

``execution.json`` holds the id, pipeline name, status, times, parameters, failure reason and every step's status,
times, properties, cache-hit source and log files (what ListPipelineExecutionSteps reports on SageMaker);
``definition.json`` the definition that ran; ``resolved-definition.json`` the same with parameter values and each
step's request as it ran (``steps/<name>/arguments.json``);
``steps/<name>/logs/`` the stdout/stderr of every instance. Files are rewritten atomically after every change.

Paths in a record are stored relative to its folder (``steps/Train/logs/algo-1.log``) and made absolute when read,
so a work dir copied or moved elsewhere shows its own files, never the original's. Records written before held
absolute paths: one inside an execution folder of the same id is mapped into this folder.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pipeline.core.errors import LlpipeError
from pipeline.core.files import write_text_atomically
from pipeline.core.names import StepStatus

EXECUTION_FILE = "execution.json"


def now() -> str:
    """The current UTC time as ISO 8601, the format every record uses."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def new_execution_id() -> str:
    """A 12-character lower-case id, like SageMaker's pipeline execution ids."""
    return secrets.token_hex(6)


@dataclass
class StepRecord:
    """One step of one execution."""

    name: str
    type: str
    status: str = StepStatus.PENDING
    start_time: str | None = None
    end_time: str | None = None
    failure_reason: str | None = None
    properties: dict[str, Any] = field(default_factory=dict)
    cache_key: str | None = None
    cache_hit_source: str | None = None
    logs: list[str] = field(default_factory=list)
    detail: str = ""
    notes: list[str] = field(default_factory=list)  # what the run must show after the step (approximate environment)
    scaling: list[dict[str, Any]] = field(default_factory=list)  # its training jobs' records (pipeline.core.scaling)


@dataclass
class ExecutionRecord:
    """One execution; ``save`` writes it to its folder."""

    id: str
    pipeline_name: str
    folder: Path
    status: str = StepStatus.EXECUTING
    start_time: str = field(default_factory=now)
    end_time: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    failure_reason: str | None = None
    steps: dict[str, StepRecord] = field(default_factory=dict)
    owner: dict[str, Any] = field(default_factory=dict)  # the process running it: pid, host, process_start
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        """The record as the JSON object stored in ``execution.json``."""
        return {
            "id": self.id,
            "pipeline_name": self.pipeline_name,
            "status": self.status,
            "start_time": self.start_time,
            "end_time": self.end_time,
            "parameters": self.parameters,
            "failure_reason": self.failure_reason,
            "steps": [
                {**asdict(step), "logs": [stored_path(log, self.folder) for log in step.logs]}
                for step in self.steps.values()
            ],
            "owner": self.owner,
        }

    @property
    def abandoned(self) -> bool:
        """Recorded as executing, but the process that ran it has ended (killed): nothing runs it any more."""
        return self.status == StepStatus.EXECUTING and owner_alive(self.owner) is False

    def step_folder(self, name: str) -> Path:
        """Where a step keeps its resolved arguments, logs and scratch space."""
        folder = self.folder / "steps" / name
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def save(self) -> None:
        """Rewrite ``execution.json`` atomically (threads of concurrent steps share one record)."""
        with self._lock:
            write_json_atomically(self.folder / EXECUTION_FILE, self.to_json())


def write_json_atomically(path: Path, document: Any) -> None:
    """Write JSON under a temporary name, then rename, so readers never see half a file."""
    write_text_atomically(path, json.dumps(document, indent=2, default=str) + "\n")


class DamagedRecord(LlpipeError):
    """An ``execution.json`` that cannot be read back: truncated, edited by hand or from another version."""

    def __init__(self, path: Path, error: Exception) -> None:
        super().__init__(
            f"{path}: not a readable execution record ({type(error).__name__}: {error}); "
            "the execution's other files are intact: remove its folder to forget it"
        )


def stored_path(path: str, folder: Path) -> str:
    """``path`` as a record keeps it: relative to the execution's ``folder`` when inside it, else unchanged."""
    try:
        return Path(path).relative_to(folder).as_posix()
    except ValueError:
        return path


def read_path(text: str, folder: Path) -> str:
    """The absolute path a record's ``text`` names in the execution ``folder``: a relative one joined to it; an
    absolute one (a record of an older version) under ``.../<execution id>/...`` mapped to the same place in this
    folder, so a copied work dir never reads the original's files."""
    path = Path(text)
    if not path.is_absolute():
        return str(folder / path)
    found = [index for index, part in enumerate(path.parts[:-1]) if part == folder.name]
    return str(folder.joinpath(*path.parts[found[-1] + 1 :])) if found else text


def record_from_json(document: dict[str, Any], folder: Path) -> ExecutionRecord:
    """The inverse of ``ExecutionRecord.to_json``."""
    steps = {step["name"]: StepRecord(**step) for step in document.get("steps", [])}
    for step in steps.values():
        step.logs = [read_path(str(log), folder) for log in step.logs]
    return ExecutionRecord(
        id=document["id"],
        pipeline_name=document["pipeline_name"],
        folder=folder,
        status=document["status"],
        start_time=document["start_time"],
        end_time=document.get("end_time"),
        parameters=document.get("parameters", {}),
        failure_reason=document.get("failure_reason"),
        steps=steps,
        owner=document.get("owner") or {},
    )


def process_start(pid: int) -> str | None:
    """The start time of a process (clock ticks since boot, from /proc), telling a reused pid from the original."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19]


def current_owner() -> dict[str, Any]:
    """This process as the owner of a record: enough to tell later whether it still runs."""
    return {"pid": os.getpid(), "host": socket.gethostname(), "process_start": process_start(os.getpid())}


def owner_alive(owner: dict[str, Any]) -> bool | None:
    """Whether the owning process still runs; None when it cannot be told (no owner, or another host)."""
    if not owner or owner.get("host") != socket.gethostname() or not isinstance(owner.get("pid"), int):
        return None
    pid = owner["pid"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    recorded = owner.get("process_start")
    return recorded is None or process_start(pid) in (None, recorded)


@dataclass(frozen=True)
class ExecutionStore:
    """The folder of execution records."""

    root: Path

    def create(self, pipeline_name: str, definition: dict[str, Any], parameters: dict[str, Any]) -> ExecutionRecord:
        """A new execution record with its definition saved."""
        execution_id = new_execution_id()
        folder = self.root / execution_id
        folder.mkdir(parents=True)
        write_json_atomically(folder / "definition.json", definition)
        record = ExecutionRecord(
            id=execution_id, pipeline_name=pipeline_name, folder=folder, parameters=parameters, owner=current_owner()
        )
        record.save()
        return record

    def load(self, execution_id: str) -> ExecutionRecord:
        """One execution by id; ``KeyError`` naming it when there is none."""
        path = self.root / execution_id / EXECUTION_FILE
        if not path.is_file():
            raise KeyError(f"no execution {execution_id!r} under {self.root}")
        try:
            return record_from_json(json.loads(path.read_text()), path.parent)
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AttributeError) as error:
            raise DamagedRecord(path, error) from None

    def list(self, on_damaged: Callable[[DamagedRecord], None] | None = None) -> list[ExecutionRecord]:
        """Every readable execution, newest first; each damaged record is passed to ``on_damaged`` and skipped.

        Records are written atomically, so a damaged one was truncated or edited outside ``llpipe``."""
        if not self.root.is_dir():
            return []
        records = []
        for path in self.root.glob(f"*/{EXECUTION_FILE}"):
            try:
                records.append(record_from_json(json.loads(path.read_text()), path.parent))
            except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AttributeError) as error:
                if on_damaged is not None:
                    on_damaged(DamagedRecord(path, error))
        return sorted(records, key=lambda record: record.start_time, reverse=True)
